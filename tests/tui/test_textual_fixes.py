"""The work-arounds of `svc_console.tui.textual_fixes`, each in a process of its own with a time
limit: what they prevent is a console that never answers again."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
from collections.abc import Iterable
from typing import Any

from textual.app import App, ComposeResult
from textual.color import Color
from textual.dom import DOMNode
from textual.screen import Screen
from textual.widgets import Label
from tui_support import until

import svc_console.tui.textual_fixes  # noqa: F401  (applied on import)

# A toast whose notification ran out a millisecond before the toast was made, as happens when
# the console is busy; the app quits 0.2 s after mounting it, if its loop still runs.
LATE_TOAST = textwrap.dedent(
    """
    import sys, time
    from textual.app import App
    from textual.notifications import Notification
    from textual.widgets._toast import Toast
    if sys.argv[1] == "fixed":
        import svc_console.tui.textual_fixes

    class Late(App):
        async def on_mount(self):
            late = Notification("late", timeout=1.0, raised_at=time.time() - 1.001)
            await self.mount(Toast(late))
            self.set_timer(0.2, self.exit)

    Late().run(headless=True)
    print("answered")
    """
)


def run_late_toast(variant: str) -> subprocess.CompletedProcess[str] | None:
    try:
        return subprocess.run(
            [sys.executable, "-c", LATE_TOAST, variant],
            capture_output=True,
            text=True,
            timeout=30,
        )
    except subprocess.TimeoutExpired:
        return None


def test_a_toast_made_after_its_notification_ran_out_does_not_freeze_the_console():
    done = run_late_toast("fixed")
    assert done is not None, "the console stopped answering"
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "answered"


# -- a screen returned to is restyled only when something it is styled by changed --------------


class Page(Screen[None]):
    def compose(self) -> ComposeResult:
        yield Label("text", id="text")


class TwoPages(App[None]):
    CSS = "Label { color: $primary; }"
    MODES = {"first": Page, "second": Page}


def restyles_of(app: App[None]) -> list[Screen[None]]:
    """The screens the stylesheet restyles whole from now on (every node under the screen)."""
    seen: list[Screen[None]] = []
    update_nodes = app.stylesheet.update_nodes

    def recording(nodes: Iterable[DOMNode], animate: bool = False) -> None:
        nodes = list(nodes)
        seen.extend(node for node in nodes if isinstance(node, Screen))
        update_nodes(nodes, animate=animate)

    app.stylesheet.update_nodes = recording  # type: ignore[method-assign]
    return seen


async def both_visited(app: TwoPages) -> Screen[None]:
    """Each page shown once (each styled once), back on the first: which is returned."""
    for mode in ("first", "second", "first"):
        await app.switch_mode(mode)
    return app.screen


async def test_a_screen_returned_to_unchanged_is_not_restyled_whole():
    app = TwoPages()
    async with app.run_test() as pilot:
        first = await both_visited(app)
        await pilot.pause()
        restyled = restyles_of(app)
        for _ in range(3):
            await app.switch_mode("second")
            await app.switch_mode("first")
            await pilot.pause()
        assert first not in restyled


async def test_a_theme_chosen_while_a_screen_was_away_is_applied_on_return():
    app = TwoPages()
    async with app.run_test() as pilot:
        first = await both_visited(app)
        await app.switch_mode("second")
        app.theme = "gruvbox" if app.theme != "gruvbox" else "nord"
        await pilot.pause()
        await app.switch_mode("first")
        await pilot.pause()
        assert app.screen is first
        label = first.query_one("#text", Label)
        assert label.styles.color == Color.parse(app.current_theme.primary)


# -- a screen's first visit styles that screen, not every screen again --------------------------


class ThreePages(TwoPages):
    MODES = {"first": Page, "second": Page, "third": Page}


def reparses_of(app: App[None]) -> list[None]:
    """Each time the stylesheet parses all its sources again from now on."""
    seen: list[None] = []
    reparse = app.stylesheet.reparse

    def recording() -> None:
        seen.append(None)
        reparse()

    app.stylesheet.reparse = recording  # type: ignore[method-assign]
    return seen


async def test_a_first_visit_neither_reparses_the_css_nor_restyles_screens_whole():
    app = ThreePages()
    async with app.run_test() as pilot:
        first = await both_visited(app)
        await pilot.pause()
        restyled, reparsed = restyles_of(app), reparses_of(app)
        await app.switch_mode("third")
        await pilot.pause()
        third = app.screen
        assert third is not first
        assert first not in restyled
        assert third not in restyled  # styled as it was composed, and only then
        assert reparsed == []
        label = third.query_one("#text", Label)
        assert label.styles.color == Color.parse(app.current_theme.primary)


async def test_a_theme_chosen_before_a_first_visit_styles_the_new_screen():
    for settled in (True, False):  # the theme's refresh ran already, or is still pending
        app = ThreePages()
        async with app.run_test() as pilot:
            await both_visited(app)
            await pilot.pause()
            app.theme = "gruvbox" if app.theme != "gruvbox" else "nord"
            if settled:
                await pilot.pause()
            await app.switch_mode("third")
            await pilot.pause()
            label = app.screen.query_one("#text", Label)
            assert label.styles.color == Color.parse(app.current_theme.primary), settled


# -- what a batch update held back is painted as the batch ends ---------------------------------


class OnePage(App[None]):
    def compose(self) -> ComposeResult:
        yield Label("text", id="text")


async def test_a_change_held_by_a_batch_update_is_painted_when_the_batch_ends():
    """A screen that went idle during a batch update (a table loading its page while a screen
    is switched to) is painted when the batch ends, not at its next message, which may be the
    operator's next key."""
    app = OnePage()
    async with app.run_test() as pilot:
        await until(pilot, lambda: app._batch_count == 0)  # no batch of Textual's own is pending
        painted = asyncio.Event()
        display = app._display

        def recording(on: Screen[None], update: Any) -> None:
            display(on, update)
            frame = update.render_segments(app.console) if update is not None else ""
            if not app._batch_count and "changed in a batch" in frame:
                painted.set()

        app._display = recording  # type: ignore[method-assign]
        with app.batch_update():
            app.query_one("#text", Label).update("changed in a batch")
            await pilot.pause()  # the screen goes idle, and its paint timer runs: both held
            assert not painted.is_set()
        # Nothing else is sent to the screen: unpainted, it would wait for ever.
        await asyncio.wait_for(painted.wait(), timeout=30)
