"""Work-arounds for Textual behaviour that would hurt the operator, applied once on import.

Each names what goes wrong and is checked by a test that fails (in its own process, with a time
limit) if Textual's behaviour comes back.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import partial
from typing import Any

from rich.segment import Segment
from textual import events
from textual.app import App
from textual.cache import FIFOCache
from textual.dom import DOMNode
from textual.screen import Screen
from textual.strip import Strip
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


def _strips_make_their_caches_when_first_used() -> None:
    """Every `Strip` (a line of a widget, and each step of its making: cropped, padded,
    styled, filtered) makes seven caches as it is made, most of which it never uses: most
    strips are steps, read once. At 10,000 pending, a key that shows the approvals list's next
    page makes some 600 strips, and making their caches was a tenth of its frames. A strip makes
    each cache when it first uses it, the same cache Textual would have made (`lazy_strip_slots`
    reads which ones, and their sizes, from a strip made by Textual itself)."""
    lazy = lazy_strip_slots(textual_strip_init)
    if lazy is None:
        return  # a Strip this fix does not know: left as Textual makes it

    def __init__(self: Strip, segments: Iterable[Segment], cell_length: int | None = None) -> None:
        self._segments = list(segments)
        self._cell_length = cell_length

    def __getattr__(self: Strip, name: str) -> Any:
        # Reached only while the slot is unset: the first use of a cache or a default.
        if name not in lazy:
            raise AttributeError(name)
        value = lazy[name]()
        setattr(self, name, value)
        return value

    Strip.__init__ = __init__  # type: ignore[method-assign]
    Strip.__getattr__ = __getattr__  # type: ignore[attr-defined]


def lazy_strip_slots(made: Callable[..., None]) -> dict[str, Callable[[], Any]] | None:
    """What each slot of a strip starts as, besides its segments and length, read from a strip
    that `made` (Textual's `Strip.__init__`) made: a new empty cache of the same size, or None.
    None when a slot holds anything else: then strips are left as they are."""
    probe = Strip.__new__(Strip)
    made(probe, [Segment("probe")], 5)
    if probe._segments != [Segment("probe")] or probe.cell_length != 5:
        return None
    lazy: dict[str, Callable[[], Any]] = {}
    for name in Strip.__slots__:
        if name in ("_segments", "_cell_length"):
            continue
        value = getattr(probe, name, _UNSET)
        if value is None:
            lazy[name] = _none
        elif type(value) is FIFOCache and not value:
            lazy[name] = partial(FIFOCache, value._maxsize)
        else:
            return None
    return lazy


_UNSET = object()


def _none() -> None:
    return None


textual_strip_init = Strip.__init__  # Textual's own (tests make strips both ways)
_strips_make_their_caches_when_first_used()
