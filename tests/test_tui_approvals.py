"""The approvals screen against the real thing: the sandbox over HTTP, the Unix socket, the SQLite
ledger. Agents submit with `AsyncAgent`; the operator is a Textual pilot pressing keys."""

from __future__ import annotations

import html
import re
import subprocess
import sys
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from helpers import FakeClock
from textual.pilot import Pilot
from textual.widgets import Input, Static

from svc_console.agent import AsyncAgent
from svc_console.broker.params import DenyParams
from svc_console.core.states import State
from svc_console.ledger import Ledger
from svc_console.runtime import Runtime
from svc_console.tui.app import ConsoleApp
from svc_console.tui.modals import ConfirmAmountModal, DenyReasonModal
from svc_console.tui.screens.approvals import ApprovalsScreen
from svc_console.tui.themes import BUNDLED_THEMES, ThemeError, load_theme, load_themes
from svc_console.tui.widgets.queue import RequestQueue

PINNED_SANDBOX = "http://127.0.0.1:8402"
SECRET = "sk_live_0123456789abcdefXYZ"
SEARCH = {
    "endpoint_id": "ep_websearch_basic",
    "inputs": {"query": f"solar panel prices 2026 {SECRET}"},
    "purpose": "background for the weekly energy note",
}
SCRAPE = {
    "endpoint_id": "ep_scrape_page",
    "inputs": {"url": "https://example.com/solar/tariffs"},
    "purpose": "read the regulator's tariff page",
}
HOSTILE = "\x1b[31mRED\x1b]52;c;SGVsbG8=\x07 [@click=app.quit]x[/] \u202eevil"


# -- helpers ------------------------------------------------------------------------------------


def screen_text(app: ConsoleApp) -> str:
    """What the terminal shows, as plain text (from the SVG screenshot, by column)."""
    svg = app.export_screenshot()
    lines: dict[int, dict[int, str]] = {}
    spans = r'<text [^>]*x="([\d.]+)"[^>]*clip-path="url\(#[\w-]+-line-(\d+)\)"[^>]*>(.*?)</text>'
    for x, line, text in re.findall(spans, svg):
        lines.setdefault(int(line), {})[round(float(x) / 12.2)] = html.unescape(text)
    rows = []
    for number in sorted(lines):
        row = ""
        for column, text in sorted(lines[number].items()):
            row = row.ljust(column) + text.replace("\xa0", " ")
        rows.append(row.rstrip())
    return "\n".join(rows)


async def until(pilot: Pilot[Any], predicate: Callable[[], Any], timeout: float = 10.0) -> None:
    """Poll while the app keeps running: the broker works in background tasks and `pause()`
    alone never waits for them."""
    for _ in range(int(timeout / 0.05)):
        if predicate():
            return
        await pilot.pause(0.05)
    raise AssertionError("condition not reached in time")


def queue(app: ConsoleApp) -> RequestQueue:
    return app.screen.query_one(RequestQueue)


async def started(pilot: Pilot[Any]) -> None:
    await until(pilot, lambda: isinstance(pilot.app.screen, ApprovalsScreen))


async def rows(pilot: Pilot[Any], count: int) -> None:
    await until(
        pilot,
        lambda: (
            isinstance(pilot.app.screen, ApprovalsScreen) and queue(pilot.app).row_count == count
        ),
    )


async def type_text(pilot: Pilot[Any], text: str) -> None:
    await pilot.press(*("space" if char == " " else char for char in text))


def pin_sandbox_address(runtime: Runtime) -> None:
    """The sandbox listens on a random port; show a fixed address so screenshots are stable."""
    start = runtime.start

    async def start_pinned() -> Any:
        broker = await start()
        broker.market.base_url = PINNED_SANDBOX
        return broker

    runtime.start = start_pinned  # type: ignore[method-assign]


@pytest.fixture
def console(make_runtime: Callable[..., Runtime], clock: FakeClock) -> Callable[..., ConsoleApp]:
    def build(**config: Any) -> ConsoleApp:
        runtime = make_runtime(clock=clock, ids=True, **config)
        pin_sandbox_address(runtime)
        return ConsoleApp(runtime, cursor_blink=False)

    return build


# -- snapshots ----------------------------------------------------------------------------------


def test_snapshot_two_pending_requests(snap_compare: Any, console: Callable[..., ConsoleApp]):
    """Two requests from an agent: the queue, the first one's detail (secret masked), the banner."""
    app = console()

    async def run_before(pilot: Pilot[Any]) -> None:
        await started(pilot)
        async with AsyncAgent("research-bot", app.runtime.paths.socket) as agent:
            # One after the other, so the rows' order never depends on the sandbox's timing.
            await agent.submit(**SEARCH)
            await rows(pilot, 1)
            await agent.submit(**SCRAPE)
            await rows(pilot, 2)
        app.clear_notifications()

    assert snap_compare(app, terminal_size=(120, 40), run_before=run_before)


def test_snapshot_empty_queue_narrow(snap_compare: Any, console: Callable[..., ConsoleApp]):
    """No requests at 80x24: the banner and the friendly empty state naming the socket."""
    app = console()

    async def run_before(pilot: Pilot[Any]) -> None:
        await started(pilot)

    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)


# -- the operator's decisions -------------------------------------------------------------------


async def test_request_appears_unprompted_and_approval_executes(
    console: Callable[..., ConsoleApp],
):
    app = console()
    rang: list[bool] = []
    app.bell = lambda: rang.append(True)  # type: ignore[method-assign]
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await started(pilot)
        runtime = app.runtime
        async with AsyncAgent("research-bot", runtime.paths.socket) as agent:
            ticket = await agent.submit(**SEARCH)
            await rows(pilot, 1)
            assert rang, "a new request rings the bell"
            await until(pilot, lambda: "New request from research-bot" in screen_text(app))
            text = screen_text(app)
            assert "SANDBOX · no real money moves" in text
            assert SECRET not in text and "[masked api_key]" in text

            await pilot.press("a")
            done = await agent.wait_for_outcome(ticket["request_id"], timeout_s=15)

        assert done["state"] == "succeeded"
        assert done["outcome"]["body"] and done["outcome"]["charged_usdc"] == "0.01"
        await rows(pilot, 0)
        events = [e["type"] for e in runtime.ledger.events(ticket["request_id"])]
        assert events.index("approved") < events.index("executing")
        decision = runtime.ledger.db.execute(
            "SELECT id, at FROM decisions WHERE request_id = ?", [ticket["request_id"]]
        ).fetchone()
        execution = runtime.ledger.db.execute(
            "SELECT decision_id, started_at FROM executions WHERE request_id = ?",
            [ticket["request_id"]],
        ).fetchone()
        assert execution[0] == decision[0] and decision[1] <= execution[1]


async def test_deny_needs_a_reason(console: Callable[..., ConsoleApp]):
    app = console()
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await started(pilot)
        broker = app.runtime.broker
        async with AsyncAgent("research-bot", app.runtime.paths.socket) as agent:
            ticket = await agent.submit(**SEARCH)
            request_id = ticket["request_id"]
            await rows(pilot, 1)

            await pilot.press("d")
            assert isinstance(app.screen, DenyReasonModal)
            await pilot.press("enter")
            error = app.screen.query_one("#dialog-error", Static)
            assert error.has_class("-shown") and "A reason is required" in screen_text(app)
            assert isinstance(app.screen, DenyReasonModal)
            assert broker.get(request_id).state == State.pending

            await pilot.press("escape")
            assert isinstance(app.screen, ApprovalsScreen)
            assert broker.get(request_id).state == State.pending

            await pilot.press("d")
            await type_text(pilot, "not needed this week")
            await pilot.press("enter")
            done = await agent.wait_for_outcome(request_id, timeout_s=10)

        assert done["state"] == "denied"
        assert done["reason"] == "not needed this week"
        await rows(pilot, 0)


async def test_typed_confirmation(console: Callable[..., ConsoleApp]):
    app = console(confirm_above_usdc=Decimal("0.005"))
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await started(pilot)
        broker = app.runtime.broker
        async with AsyncAgent("research-bot", app.runtime.paths.socket) as agent:
            ticket = await agent.submit(**SEARCH)
            request_id = ticket["request_id"]
            await rows(pilot, 1)
            assert "type 0.01 to confirm" in screen_text(app)

            await pilot.press("a")
            assert isinstance(app.screen, ConfirmAmountModal)
            await type_text(pilot, "0.02")
            await pilot.press("enter")
            assert "0.02 is not the amount" in screen_text(app)
            assert isinstance(app.screen, ConfirmAmountModal)
            assert broker.get(request_id).state == State.pending

            app.screen.query_one(Input).value = ""
            await type_text(pilot, "0.01")
            await pilot.press("enter")
            done = await agent.wait_for_outcome(request_id, timeout_s=15)

        assert done["state"] == "succeeded"
        assert done["decision"]["approved"] is True


async def test_broker_refusal_is_a_notification(console: Callable[..., ConsoleApp]):
    """The request stops being pending just before the key press: a notification, no crash."""
    app = console()
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await started(pilot)
        runtime = app.runtime
        async with AsyncAgent("research-bot", runtime.paths.socket) as agent:
            ticket = await agent.submit(**SEARCH)
            await rows(pilot, 1)
        # Behind the screen's back (no broker notification), as if it expired a moment ago.
        runtime.ledger.transition(ticket["request_id"], State.expired, at=runtime.broker.clock())
        await pilot.press("a")
        await until(pilot, lambda: "Could not approve" in screen_text(app))
        assert "is expired, not pending" in screen_text(app)
        assert app.is_running and app.return_code is None


async def test_live_updates_keep_the_cursor_and_tick(
    console: Callable[..., ConsoleApp], clock: FakeClock
):
    app = console(pending_ttl_s=120)
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await started(pilot)
        broker = app.runtime.broker
        async with AsyncAgent("research-bot", app.runtime.paths.socket) as agent:
            first = (await agent.submit(**SEARCH))["request_id"]
            await rows(pilot, 1)
            second = (await agent.submit(**SCRAPE))["request_id"]
            await rows(pilot, 2)

        await pilot.press("j")
        assert queue(app).selected_id == second
        await pilot.press("k")
        assert queue(app).selected_id == first
        await pilot.press("j")
        # Decided elsewhere (the CLI, another operator): its row goes, the cursor stays put.
        await broker.deny(DenyParams(request_id=first, reason="decided elsewhere"))
        await rows(pilot, 1)
        assert queue(app).selected_id == second

        clock.advance(65)
        await until(pilot, lambda: "1m 05s" in screen_text(app))
        assert "55s" in screen_text(app)  # time left of a 120 s lifetime, 65 s in

        clock.advance(60)
        await rows(pilot, 0)
        assert broker.get(second).state == State.expired
        await until(pilot, lambda: f"{second} from research-bot expired" in screen_text(app))
        assert "No requests waiting." in screen_text(app)


async def test_hostile_text_is_shown_inert(console: Callable[..., ConsoleApp]):
    app = console()
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await started(pilot)
        async with AsyncAgent("research-bot", app.runtime.paths.socket) as agent:
            await agent.submit(
                endpoint_id="ep_websearch_basic", inputs={"query": "x"}, purpose=HOSTILE
            )
            await rows(pilot, 1)
        text = screen_text(app)
        assert "<ESC>[31mRED<ESC>]52;c;SGVsbG8=<BEL>" in text
        assert "[@click=app.quit]x[/]" in text
        assert "<U+202E>evil" in text
        assert "\x1b" not in text and "\u202e" not in text
        # Clicking where the would-be link is drawn does nothing either.
        await pilot.click("#detail-body")
        await pilot.pause(0.1)
        assert app.is_running and app.return_code is None


async def test_palette_commands_come_from_the_registry(console: Callable[..., ConsoleApp]):
    app = console()
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await started(pilot)
        titles = {command.title for command in app.get_system_commands(app.screen)}
        assert {"Approve", "Deny"} <= titles
        keys = {binding.id: binding.key for binding in app.screen.BINDINGS}  # type: ignore[union-attr]
        assert keys["approvals.approve"] == "a" and keys["approvals.deny"] == "d"


# -- start-up and themes ------------------------------------------------------------------------


async def test_after_start_runs_in_a_worker_and_q_stops_the_runtime(
    make_runtime: Callable[..., Runtime], clock: FakeClock
):
    runtime = make_runtime(clock=clock, ids=True)
    seen: list[Runtime] = []

    async def simulated_agent(started_runtime: Runtime) -> None:
        seen.append(started_runtime)
        async with AsyncAgent("demo-bot", started_runtime.paths.socket) as agent:
            await agent.submit(**SCRAPE)

    app = ConsoleApp(runtime, after_start=simulated_agent, cursor_blink=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await rows(pilot, 1)
        assert seen == [runtime]
        await until(pilot, lambda: "demo-bot" in screen_text(app))
        await pilot.press("q")
    assert app.return_code == 0
    assert runtime.broker is None and runtime.ledger is None


async def test_failing_after_start_is_reported_not_fatal(
    make_runtime: Callable[..., Runtime], clock: FakeClock
):
    async def crashes(_: Runtime) -> None:
        raise RuntimeError("the demo agents could not start")

    app = ConsoleApp(make_runtime(clock=clock), after_start=crashes, cursor_blink=False)
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await until(pilot, lambda: "Background task failed" in screen_text(app))
        assert "RuntimeError: the demo agents could" in screen_text(app)
        assert app.is_running and isinstance(app.screen, ApprovalsScreen)


async def test_runtime_that_cannot_start_exits_cleanly(console: Callable[..., ConsoleApp]):
    app = console()
    app.runtime.paths.home.mkdir(parents=True, exist_ok=True)
    holder = Ledger(app.runtime.paths.ledger(sandbox=True))  # another broker holds the ledger
    try:
        async with app.run_test() as pilot:
            await until(pilot, lambda: not app.is_running, timeout=5)
    finally:
        holder.close()
    assert app.return_code == 1


async def test_broken_theme_falls_back_with_one_notification(
    console: Callable[..., ConsoleApp], home: Path
):
    (home / "themes").mkdir()
    (home / "themes" / "console-dark.toml").write_text('name = "console-dark"\nprimary = 3\n')
    app = console()
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await started(pilot)
        await until(pilot, lambda: "Theme not loaded" in screen_text(app))
        assert "colour string" in screen_text(app)
        # The bundled console-dark was loaded first and stays in force.
        assert app.theme == "console-dark"


def test_bundled_themes_load():
    loaded = load_themes([BUNDLED_THEMES])
    assert loaded.problems == []
    assert {"console-dark", "console-light"} <= set(loaded.themes)
    assert loaded.themes["console-light"].dark is False


def test_theme_errors_name_the_file_and_problem(tmp_path: Path):
    cases = {
        "syntax.toml": ("name = ", "not valid TOML"),
        "unknown.toml": ('name = "x"\nprimary = "#000000"\nprimry = "#fff"\n', "unknown key"),
        "colour.toml": ('name = "x"\nprimary = "not-a-colour"\n', "is not a colour"),
        "noprimary.toml": ('name = "x"\n', "'primary' is required"),
    }
    for name, (text, problem) in cases.items():
        path = tmp_path / name
        path.write_text(text)
        with pytest.raises(ThemeError, match=problem) as caught:
            load_theme(path)
        assert name in str(caught.value)


# -- the core stays free of Textual -------------------------------------------------------------


@pytest.mark.parametrize("module", ["svc_console.broker", "svc_console.tui"])
def test_core_does_not_import_textual(module: str):
    """The broker never needs Textual; the TUI package itself loads it only when the app is used."""
    check = (
        f"import {module}, sys; "
        "assert not any(m == 'textual' or m.startswith('textual.') for m in sys.modules)"
    )
    subprocess.run([sys.executable, "-c", check], check=True)
