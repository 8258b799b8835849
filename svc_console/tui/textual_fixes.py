"""Work-arounds for Textual behaviour that would hurt the operator, applied once on import.

Each names what goes wrong and is checked by a test that fails (in its own process, with a time
limit) if Textual's behaviour comes back.
"""

from __future__ import annotations

from typing import Any

from textual import events
from textual.app import App
from textual.dom import DOMNode
from textual.screen import Screen
from textual.widgets._toast import Toast

# The least time a toast is given before its timer removes it.
MIN_TOAST_S = 0.001


def _toast_timer_never_negative() -> None:
    """A toast takes its notification's time left when it is made. When the notification runs
    out between the toast rack's check (`has_expired`) and the toast's making (a busy console,
    many notifications), that time is a hair below zero, and Textual's `Timer` given a negative
    interval loops without ever yielding: the console freezes at full CPU. So it is never below
    `MIN_TOAST_S`."""
    made = Toast.__init__

    def __init__(self: Toast, *args: Any, **kwargs: Any) -> None:
        made(self, *args, **kwargs)
        self._timeout = max(self._timeout, MIN_TOAST_S)

    Toast.__init__ = __init__  # type: ignore[method-assign]


_toast_timer_never_negative()


def _screens_restyled_on_return_only_when_stale() -> None:
    """Switching to a mode's screen makes Textual restyle every node of it (`ScreenResume`), even
    when nothing it is styled by changed while it was away: 60 to 120 ms on a screen with tables,
    on every switch, which alone passes what an operator feels as instant. A screen returned to is
    restyled only when the app's CSS (a theme, a reload) or the app's own classes and pseudo-
    classes (which Textual restyles on the current screen only) changed since it was last
    styled; its own widgets restyle themselves when their classes change, shown or not."""
    app_changed = App.update_styles

    def update_styles(self: App[Any], node: DOMNode, animate: bool = True) -> None:
        if node is self:
            self._app_styles_changed = getattr(self, "_app_styles_changed", 0) + 1
        app_changed(self, node, animate)

    resumed = Screen._on_screen_resume

    def _on_screen_resume(self: Screen[Any], event: events.ScreenResume) -> None:
        styled_for = _styles_in_force(self.app)
        if event.refresh_styles and getattr(self, "_styled_for", None) == styled_for:
            event = events.ScreenResume(refresh_styles=False)
        resumed(self, event)
        self._styled_for = styled_for

    App.update_styles = update_styles  # type: ignore[method-assign]
    Screen._on_screen_resume = _on_screen_resume  # type: ignore[method-assign]


def _styles_in_force(app: App[Any]) -> tuple[int, int]:
    """What a screen's styles depend on besides its own widgets: the app's CSS, and the app's
    own classes and pseudo-classes."""
    return (app._css_update_count, getattr(app, "_app_styles_changed", 0))


_screens_restyled_on_return_only_when_stale()


def _a_new_screen_is_styled_once() -> None:
    """A screen is styled as its widgets are composed, with the stylesheet in force. Yet Textual
    finds a new mode's screen marked unstyled and calls `refresh_css` for it twice on its first
    visit (as the mode starts, and as it is switched to), and each call parses every CSS source
    again and restyles every node of every screen installed: 0.1 to 0.6 s each once a few screens
    were visited, most of a first visit. So a new screen counts as styled for the CSS in force
    when nothing changed that CSS since the app's last full refresh. A theme chosen since still
    reaches it: that change's refresh is pending, and runs. Nor is it restyled whole as it is
    first shown (twice, for a mode's screen), which the screens' restyling on return allows
    for a screen styled before."""
    refresh = App.refresh_css

    def refresh_css(self: App[Any], animate: bool = True) -> None:
        refresh(self, animate)
        self._css_refreshed_for = self._css_update_count

    load = App._load_screen_css

    def _load_screen_css(self: App[Any], screen: Screen[Any]) -> None:
        load(self, screen)
        if getattr(self, "_css_refreshed_for", None) == self._css_update_count:
            screen._css_update_count = self._css_update_count
            screen._styled_for = _styles_in_force(self)

    App.refresh_css = refresh_css  # type: ignore[method-assign]
    App._load_screen_css = _load_screen_css  # type: ignore[method-assign]


_a_new_screen_is_styled_once()


def _a_batch_ends_by_painting_what_it_held() -> None:
    """While the app is in a batch update (a table loading its page), a screen neither paints
    nor restarts its paint timer, and Textual ends the batch by prompting the app alone. A screen
    that went idle with work held in the batch (a screen just switched to, its first frame) then
    waits for the next message it receives, seconds later or at the operator's next key: seen as
    a screen switch that took four seconds. So the end of the last batch prompts the current
    screen too, which paints what is pending."""
    ended = App._end_batch

    def _end_batch(self: App[Any]) -> None:
        ended(self)
        if not self._batch_count and self._screen_stack:
            self.screen.check_idle()

    App._end_batch = _end_batch  # type: ignore[method-assign]


_a_batch_ends_by_painting_what_it_held()
