"""One notice at a time: the newest is drawn, its title counting the others still current, and `n`
lists the last ones said, their toasts gone or not. Stacked toasts covered the list and its legend
line, and an operator reads one.

Textual keeps the notifications and expires each by its own time; this decides only which of them
is drawn. The drawn copy has an identity of its own (the original's, with the count of the rest),
so a changed count draws a new toast, and the copy's expiry (its timer, or a click) removes the
original it stands for.
"""

from __future__ import annotations

import dataclasses
from collections import deque

from rich.text import Text
from textual.app import App, ComposeResult, ScreenStackError
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.css.query import NoMatches
from textual.notifications import Notification, Notifications, SeverityLevel
from textual.screen import ModalScreen, Screen
from textual.widgets import Label, Static
from textual.widgets._toast import ToastHolder, ToastRack

from svc_console.core.sanitize import inert
from svc_console.core.wording import plural
from svc_console.tui import bindings

TOLD_KEPT = 100  # notices the list keeps, newest
_SHOWN = "_more_"  # between the original's identity and the count of the rest, in the drawn copy


def current_of(notifications: Notifications) -> list[Notification]:
    """The notifications not yet expired. Not `list(notifications)`: list() asks the length
    after it has the iterator, and asking reaps, so a notice expiring between the two would be
    taken from the dict being iterated ("dictionary changed size during iteration")."""
    return list(iter(notifications))


def newest_drawn(notifications: Notifications) -> Notifications:
    """What the toast rack draws: the newest notification alone, titled with how many others
    are still current."""
    current = current_of(notifications)
    drawn = Notifications()
    if not current:
        return drawn
    newest, rest = current[-1], len(current) - 1
    if rest:
        more = f"+{plural(rest, 'more notice')} · n lists them"
        title = f"{newest.title} ({more})" if newest.title else more
        newest = dataclasses.replace(
            newest, title=title, identity=f"{newest.identity}{_SHOWN}{rest}"
        )
    drawn.add(newest)
    return drawn


def original_of(notification: Notification) -> str:
    """The identity of the notification a drawn copy stands for."""
    return notification.identity.split(_SHOWN, 1)[0]


def draw_newest(screen: Screen, notifications: Notifications) -> None:
    """Draw on `screen`'s toast rack the newest notice alone, counting the rest."""
    try:
        rack = screen.get_child_by_type(ToastRack)
    except NoMatches:
        return  # none yet: the screen's own rack asks again when it mounts

    def draw() -> None:
        drawn = newest_drawn(notifications)  # as it stands now, not when asked for
        # A toast asked for a moment ago may not be mounted yet, so the rack's own sweep (of
        # mounted toasts) would miss it: what no longer stands is removed here by its holder.
        keep = {rack._toast_id(notification) for notification in drawn}
        for holder in rack.query_children(ToastHolder):
            if holder.id not in keep:
                holder.remove()
        rack.show(drawn)

    screen.app.call_later(draw)


def forget(notifications: Notifications, notification: Notification) -> None:
    """Forget the notice a drawn copy (or the original itself) stands for."""
    identity = original_of(notification)
    for current in current_of(notifications):
        if current.identity == identity:
            del notifications[current]


class NoticeLine(App[None]):
    """An app whose notices are drawn one at a time (the newest) and held while a dialog is
    open."""

    def __init__(self) -> None:
        super().__init__()
        # Notifications asked for while a dialog was open, shown once it closes.
        self._held: list[tuple[str, str, SeverityLevel, float | None, bool]] = []
        # What was said, newest last, toasts gone or not: `n` lists it, and a notice counted
        # on the toast must still be there when the operator gets to it.
        self.told: deque[Notification] = deque(maxlen=TOLD_KEPT)

    def _dialog_open(self) -> bool:
        return bool(self.screen_stack) and isinstance(self.screen, ModalScreen)

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = True,
    ) -> None:
        """As Textual's, but held while a dialog is open: a toast drawn over a dialog hides its
        buttons (at 80x24 one covered the quit dialog's), and the operator is busy there."""
        if self._dialog_open():
            held = (message, title, severity, timeout, markup)
            if held not in self._held:  # the same notice twice is said once
                self._held.append(held)
            return
        self._release_held()  # they came first: this one is the newest
        self._say(message, title, severity, timeout, markup)

    def _release_held(self) -> None:
        held, self._held = self._held, []
        for said in held:
            self._say(*said)

    def _say(
        self, message: str, title: str, severity: SeverityLevel, timeout: float | None, markup: bool
    ) -> None:
        self.told.append(Notification(message, title, severity, markup=markup))
        super().notify(message, title=title, severity=severity, timeout=timeout, markup=markup)

    def clear_notices(self) -> None:
        """Forget every notice: the toast and the list."""
        self.told.clear()
        self.clear_notifications()

    def _refresh_notifications(self) -> None:
        # Textual draws the toasts on whichever screen is on top, a dialog included, and redraws
        # them whenever a screen is pushed or popped: this is the one place to keep them off.
        if not self._dialog_open():
            self._release_held()
            self._draw_newest_notice()
            return
        for screen in self.screen_stack:
            # The toasts already up on the screens below would show through the dialog's veil.
            for rack in screen.query_children(ToastRack):
                self.call_later(rack.show, Notifications())

    def _draw_newest_notice(self) -> None:
        """The newest notice alone, counting the rest."""
        try:
            draw_newest(self.screen, self._notifications)
        except ScreenStackError:
            return  # no screen yet: the first one's rack asks again when it mounts

    def _unnotify(self, notification: Notification, refresh: bool = True) -> None:
        # A drawn toast stands for its original; once it goes, the next newest is drawn.
        forget(self._notifications, notification)
        self._refresh_notifications()

    def action_notices(self) -> None:
        if not isinstance(self.screen, NoticesScreen):
            self.push_screen(NoticesScreen(list(self.told)))


NOTICES_BINDINGS = bindings.define(
    "notices",
    [
        bindings.Command(
            "notices.close",
            "escape,n,q",
            "close",
            "Close",
            "Close the list of notices",
            palette=False,
        ),
        bindings.Command(
            "notices.clear", "c", "clear", "Clear all", "Forget every notice", palette=False
        ),
    ],
)


class NoticesScreen(ModalScreen[None]):
    """The notices said, newest first, whole (a toast may cut a long one), its toast gone or not."""

    BINDINGS = NOTICES_BINDINGS
    DEFAULT_CSS = """
    NoticesScreen {
        align: center middle;
    }
    #notices-dialog {
        width: 96;
        max-width: 100%;
        height: auto;
        max-height: 100%;
        padding: 0 1;
        border: thick $primary;
        background: $surface;
    }
    #notices-title {
        text-style: bold;
        color: $text-primary;
    }
    #notices-body {
        height: auto;
        max-height: 1fr;
    }
    .notice {
        margin-top: 1;
    }
    .notice-error {
        color: $text-error;
    }
    .notice-warning {
        color: $text-warning;
    }
    #notices-hint {
        color: $text-muted;
        margin-top: 1;
    }
    """

    def __init__(self, notifications: list[Notification]) -> None:
        super().__init__(id="notices")
        self.notifications = notifications

    def compose(self) -> ComposeResult:
        count = len(self.notifications)
        with Vertical(id="notices-dialog"):
            yield Label(
                f"Notices: {plural(count, 'notice')}" if count else "No notices", id="notices-title"
            )
            with VerticalScroll(id="notices-body"):
                for notification in reversed(self.notifications):
                    yield Static(
                        _notice(notification), classes=f"notice notice-{notification.severity}"
                    )
            hint = f"the last {TOLD_KEPT} are kept · escape closes · c clears them all"
            yield Static(hint, id="notices-hint", markup=False)

    def action_close(self) -> None:
        self.dismiss(None)

    def action_clear(self) -> None:
        if isinstance(self.app, NoticeLine):
            self.app.clear_notices()
        self.dismiss(None)


def _notice(notification: Notification) -> Text:
    message = (
        Content.from_markup(notification.message).plain
        if notification.markup
        else notification.message
    )
    text = Text()
    if notification.title:
        text.append(inert(notification.title, 200), style="bold")
        text.append("\n")
    text.append(inert(message, 4000))
    return text
