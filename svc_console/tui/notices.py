"""One notice at a time: the newest is drawn, its title counting the others still current, and `n`
lists them all. Stacked toasts covered the list and its legend line, and an operator reads one.

Textual keeps the notifications and expires each by its own time; this decides only which of them
is drawn. The drawn copy has an identity of its own (the original's, with the count of the rest),
so a changed count draws a new toast, and the copy's expiry (its timer, or a click) removes the
original it stands for.
"""

from __future__ import annotations

import dataclasses

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.notifications import Notification, Notifications
from textual.screen import ModalScreen
from textual.widgets import Label, Static

from svc_console.core.sanitize import inert
from svc_console.core.wording import plural
from svc_console.tui import bindings

_SHOWN = "_more_"  # between the original's identity and the count of the rest, in the drawn copy


def newest_drawn(notifications: Notifications) -> Notifications:
    """What the toast rack draws: the newest notification alone, titled with how many others
    are still current."""
    current = list(notifications)
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
    """Every notice still current, newest first, whole (a toast may cut a long one)."""

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
            yield Static("escape closes · c clears them all", id="notices-hint", markup=False)

    def action_close(self) -> None:
        self.dismiss(None)

    def action_clear(self) -> None:
        self.app.clear_notifications()
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
