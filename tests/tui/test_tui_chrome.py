"""What every screen wears and how the approvals list shares a narrow width: the columns that
give way (the endpoint, then the agent, then the age; never the amount, time left, verdict or
risk), the strip of screens with their keys, the footer that keeps quit and help at 80x24, and
the SANDBOX banner that keeps its address."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from helpers import FakeClock
from textual.app import App, ComposeResult
from textual.pilot import Pilot
from textual.screen import Screen
from textual.widgets import Input
from textual.widgets._footer import FooterKey
from tui_support import (
    build_console,
    queue,
    screen_rows,
    screen_text,
    seed_pending,
    started,
    type_text,
    until,
)

from svc_console.config.paths import Paths
from svc_console.runtime import Runtime
from svc_console.tui.app import ConsoleApp
from svc_console.tui.glyphs import glyph
from svc_console.tui.usage.screen import UsageScreen
from svc_console.tui.widgets.chrome import ConsoleFooter, ScreenTabs
from svc_console.tui.widgets.giving_way import give_way

LONG_NAMED = ("research-agent-with-a-long-name", "alpha-bot")


@pytest.fixture
def console(make_runtime: Callable[..., Runtime], clock: FakeClock) -> Callable[..., ConsoleApp]:
    return lambda **options: build_console(make_runtime, clock, **options)


def list_rows(app: ConsoleApp) -> list[str]:
    """The screen's rows, cut where the detail pane begins beside the list."""
    return [row.split("▏")[0] for row in screen_rows(app).values()]


def header_row(app: ConsoleApp) -> str:
    return next(row for row in list_rows(app) if "est. USDC" in row)


def row_of(app: ConsoleApp, request_id: str) -> str:
    """The list's row of a request, by the amount and time left its cells show."""
    index = list(queue(app).requests).index(request_id)
    rows = [row for row in list_rows(app) if row.lstrip().startswith(("research", "alpha"))]
    return rows[index]


# -- giving way ---------------------------------------------------------------------------------


def test_names_give_way_in_order_and_the_rest_never():
    natural = {"agent": 31, "endpoint": 20, "usdc": 9, "age": 6, "risk": 5}
    floors = {"endpoint": 8, "agent": 10, "age": 3}
    assert give_way(natural, 100, floors) == natural
    # 10 too many: the endpoint alone gives them.
    assert give_way(natural, 61, floors) == {**natural, "endpoint": 10}
    # The endpoint at its floor, then the agent.
    assert give_way(natural, 50, floors) == {**natural, "endpoint": 8, "agent": 22}
    # Every name at its floor, then the age; the amount and the risk are never cut.
    narrow = give_way(natural, 30, floors)
    assert narrow == {"agent": 10, "endpoint": 8, "usdc": 9, "age": 3, "risk": 5}


@pytest.mark.parametrize(("size", "filtered"), [((120, 40), True), ((80, 24), False)])
async def test_long_agent_names_leave_the_decision_columns_whole(
    console: Callable[..., ConsoleApp],
    paths: Paths,
    clock: FakeClock,
    size: tuple[int, int],
    filtered: bool,
):
    seed_pending(paths, 12, clock(), agents=LONG_NAMED)
    app = console()
    async with app.run_test(size=size) as pilot:
        await started(pilot)
        if filtered:
            await pilot.press("slash")
            await type_text(pilot, "risk:high")
            await pilot.press("enter")
            await until(pilot, lambda: queue(app).row_count == 3)
        await until(pilot, lambda: queue(app).row_count and "risk" in header_row(app))
        assert header_row(app).split() == [
            *("agent", "endpoint", "est.", "USDC", "age", "expires", "verdict", "risk")
        ]
        first = row_of(app, "req_seed0000")
        # The first request: 0.01 USDC, ten minutes left, asked, one high flag and one warning.
        cells = first.split()
        assert "0.01" in cells and cells[-5:] == ["10m", "00s", "ask", "H1", "W1"]
        assert first.lstrip().startswith("research-agent") and "…" in first
        assert "more characters" not in screen_text(app)


def test_snapshot_long_names_filtered(
    snap_compare: Any, console: Callable[..., ConsoleApp], paths: Paths, clock: FakeClock
):
    """A 31-character agent name and a filter set at 120x40: the names give way, risk whole."""
    seed_pending(paths, 12, clock(), agents=LONG_NAMED)
    app = console()

    async def run_before(pilot: Pilot[Any]) -> None:
        await started(pilot)
        await pilot.press("slash")
        await type_text(pilot, "risk:high")
        await pilot.press("enter")
        await until(pilot, lambda: queue(app).row_count == 3)

    assert snap_compare(app, terminal_size=(120, 40), run_before=run_before)


def test_snapshot_long_names_narrow(
    snap_compare: Any, console: Callable[..., ConsoleApp], paths: Paths, clock: FakeClock
):
    """The same queue at 80x24: every column shown, the banner's address, quit and help kept."""
    seed_pending(paths, 12, clock(), agents=LONG_NAMED)
    app = console()

    async def run_before(pilot: Pilot[Any]) -> None:
        await started(pilot)
        await until(pilot, lambda: queue(app).row_count == 12)

    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)


# -- the strip, the footer, the banner ----------------------------------------------------------


def lit(app: ConsoleApp) -> str:
    """The strip's lit tab, as text."""
    strip = app.screen.query_one(ScreenTabs).render()
    return "".join(span_text(strip, span) for span in strip.spans if "reverse" in str(span.style))


def span_text(text: Any, span: Any) -> str:
    return text.plain[span.start : span.end].strip()


async def test_the_strip_names_every_screen_by_its_key_and_follows_the_keys(
    console: Callable[..., ConsoleApp],
):
    app = console()
    async with app.run_test(size=(80, 24)) as pilot:
        await started(pilot)
        strip = "1 Approvals  2 Catalogue  3 Usage  4 Policies  5 Wallet  6 Account  7 Grants"
        await until(pilot, lambda: strip in screen_text(app))
        assert lit(app) == "1 Approvals"
        await pilot.press("3")
        await until(pilot, lambda: isinstance(app.screen, UsageScreen))
        assert lit(app) == "3 Usage"
        assert strip in screen_text(app)


async def test_the_strip_shows_a_remapped_key(console: Callable[..., ConsoleApp], tmp_path):
    settings = tmp_path / "settings.toml"
    settings.write_text('[keymap]\n"screens.usage" = "u"\n')
    app = console(settings_file=settings)
    async with app.run_test(size=(120, 40)) as pilot:
        await started(pilot)
        await until(pilot, lambda: " u Usage " in screen_text(app) + " ")


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
async def test_the_footer_keeps_quit_and_help(console: Callable[..., ConsoleApp], size):
    app = console()
    async with app.run_test(size=size) as pilot:
        await started(pilot)
        footer = lambda: screen_rows(app)[size[1] - 1]  # noqa: E731
        await until(pilot, lambda: "q Quit" in footer() and "f1 Help" in footer())
        assert "a Approve" in footer()


async def test_the_sandbox_banner_keeps_its_address_at_80_columns(
    console: Callable[..., ConsoleApp],
):
    app = console()
    async with app.run_test(size=(80, 24)) as pilot:
        await started(pilot)
        await until(pilot, lambda: "http://127.0.0.1:8402" in screen_rows(app)[0])
        assert screen_rows(app)[0].lstrip().startswith("SANDBOX")
    async with console().run_test(size=(120, 40)) as pilot:
        await started(pilot)
        banner = screen_rows(pilot.app)[0]
        assert "no real money moves" in banner and "http://127.0.0.1:8402" in banner


async def test_the_footer_is_drawn_before_the_app_has_the_focus(
    console: Callable[..., ConsoleApp],
):
    """A browser gives the app the focus at the first tap: the footer must not wait for it."""
    app = console()
    async with app.run_test(size=(120, 40)) as pilot:
        await started(pilot)
        await until(pilot, lambda: "f1 Help" in screen_rows(app).get(39, ""))
        app.app_focus = False
        # Not by a key: a key press gives the app the focus.
        await app.run_action("show_screen('usage')")
        await until(pilot, lambda: isinstance(app.screen, UsageScreen))
        await until(pilot, lambda: "q Quit" in screen_rows(app).get(39, ""))
        assert not app.app_focus


class TwoKeys(Screen[None]):
    """Two inputs to move the focus between, and a key enabled only when `ready`."""

    BINDINGS = [("f6", "other", "Other")]
    ready = False

    def compose(self) -> ComposeResult:
        yield Input(id="one")
        yield Input(id="two")
        yield ConsoleFooter()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        return self.ready or None if action == "other" else True  # None: shown, not enabled


class FooterApp(App[None]):
    def on_mount(self) -> None:
        self.push_screen(TwoKeys())


async def test_the_footer_is_rebuilt_only_when_the_keys_it_shows_changed():
    app = FooterApp()
    async with app.run_test(size=(120, 24)) as pilot:
        await until(pilot, lambda: bool(app.screen.query(FooterKey)))
        footer = app.screen.query_one(ConsoleFooter)
        rebuilt, told = [], []
        rebuild = footer.recompose

        async def rebuilding() -> None:
            rebuilt.append(None)
            await rebuild()

        footer.recompose = rebuilding  # type: ignore[method-assign]
        # Told of each change of bindings after the footer (subscribed first), and answered
        # after the same refresh: by then the footer has rebuilt itself, or chosen not to.
        one = app.screen.query_one("#one", Input)
        app.screen.bindings_updated_signal.subscribe(
            one, lambda _screen: one.call_after_refresh(told.append, None)
        )
        other = lambda: next(k for k in app.screen.query(FooterKey) if k.action == "other")  # noqa: E731
        assert other().has_class("-disabled")

        app.screen.query_one("#two", Input).focus()  # the same keys, another widget
        await until(pilot, lambda: len(told) >= 1)
        assert rebuilt == []

        app.screen.ready = True  # type: ignore[attr-defined]
        app.screen.refresh_bindings()
        await until(pilot, lambda: len(rebuilt) == 1 and not other().has_class("-disabled"))


def test_the_web_console_draws_glyphs_a_browser_font_has():
    class Browser:
        is_web = True

    class Terminal:
        is_web = False

    assert glyph(Terminal(), "paused") == "⏸"
    assert glyph(Browser(), "paused") == "‖"
