"""A calm, steady approvals screen: arrivals counted in the header and gathered into one notice,
no notice over a dialog, a selection that follows its request whatever moves around it (and says
so when it left), a countdown in the deciding dialogs, and the demo's pause key."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from helpers import FakeClock
from textual.pilot import Pilot
from textual.widgets import Button
from tui_support import (
    announcements_made,
    build_console,
    clear_notices,
    notices,
    queue,
    record_notifications,
    rows,
    screen_text,
    seed_pending,
    started,
    type_text,
    until,
)

from svc_console.agent import AsyncAgent
from svc_console.broker.params import DenyParams
from svc_console.config.paths import Paths
from svc_console.core.states import State
from svc_console.demo import PERSONAS, TRAFFIC, run_persona
from svc_console.runtime import Runtime
from svc_console.tui.app import ConsoleApp
from svc_console.tui.approvals import notices as announcer
from svc_console.tui.approvals.detail import RequestDetail
from svc_console.tui.approvals.history import HistoryTable
from svc_console.tui.help import HelpScreen
from svc_console.tui.modals import DenyReasonModal
from svc_console.tui.widgets.countdown import Countdown

SEARCH = {
    "endpoint_id": "ep_websearch_basic",
    "inputs": {"query": "offshore wind auction results"},
    "purpose": "background for the weekly energy note",
}


@pytest.fixture
def console(make_runtime: Callable[..., Runtime], clock: FakeClock) -> Callable[..., ConsoleApp]:
    return lambda **options: build_console(make_runtime, clock, **options)


def header(app: ConsoleApp) -> str:
    return next(line for line in screen_text(app).splitlines() if "svc-console" in line)


async def submit(app: ConsoleApp, count: int = 1) -> list[str]:
    async with AsyncAgent("research-bot", app.runtime.paths.socket) as agent:
        return [(await agent.submit(**SEARCH))["request_id"] for _ in range(count)]


# -- notices ------------------------------------------------------------------------------------


async def test_a_burst_of_arrivals_is_one_notice_and_the_header_counts_them(console, monkeypatch):
    # Gathered for the operator's second, so that four submissions in a row are one burst.
    monkeypatch.setattr(announcer, "GATHER_S", 1.0)
    app = console()
    said = record_notifications(app)
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await started(pilot)
        await submit(app, 4)
        await rows(pilot, 4)
        await until(pilot, lambda: "4 pending" in header(app))
        await until(
            pilot, lambda: announcements_made(app) and any("new request" in s for s in said)
        )
        arrivals = [text for text in said if "new request" in text.lower()]
        assert arrivals == ["4 new requests from research-bot"]
        # The count is every screen's: the header of another screen says it too.
        await pilot.press("3")
        await until(pilot, lambda: "4 pending" in header(app) and "usage" in header(app))


async def test_no_notice_is_drawn_over_a_dialog_it_waits_for_it_to_close(console):
    app = console()
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await started(pilot)
        await pilot.press("f1")
        await until(pilot, lambda: isinstance(app.screen, HelpScreen))
        await submit(app)
        # The header is under the help: the count is the app's sub-title, which every header shows.
        await until(pilot, lambda: app.sub_title == "1 pending" and announcements_made(app))
        assert app._held and "New request" in app._held[0][0]
        assert notices(app) == ""
        await pilot.press("escape")
        await until(pilot, lambda: "New request from research-bot" in notices(app))


# -- the selection follows its request ----------------------------------------------------------


async def test_the_selection_stays_on_its_request_when_a_row_above_expires(
    console, paths: Paths, clock: FakeClock
):
    ids = seed_pending(paths, 5, clock())  # oldest first; the first expires first
    app = console()
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await rows(pilot, 5)
        await pilot.press("j", "j")
        await until(pilot, lambda: queue(app).selected_id == ids[2])
        clock.advance(600.5)  # ids[0] runs out; the others have a second or more left
        await rows(pilot, 4)
        assert app.runtime.broker.get(ids[0]).state == State.expired
        assert queue(app).selected_id == ids[2] and queue(app).cursor_row == 1


async def test_the_selection_stays_on_its_request_when_one_arrives_above(
    console, paths: Paths, clock: FakeClock
):
    ids = seed_pending(paths, 3, clock())
    app = console()
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await rows(pilot, 3)
        await pilot.press("S")  # newest first: an arrival comes in at the top
        await until(pilot, lambda: "newest first" in screen_text(app))
        await pilot.press("j")
        await until(pilot, lambda: queue(app).selected_id == ids[1] and queue(app).cursor_row == 1)
        await submit(app)
        await rows(pilot, 4)
        assert queue(app).selected_id == ids[1] and queue(app).cursor_row == 2


async def test_a_request_that_left_the_list_cannot_be_approved_by_a_stale_selection(
    console, paths: Paths, clock: FakeClock
):
    ids = seed_pending(paths, 3, clock())
    app = console()
    said = record_notifications(app)
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await rows(pilot, 3)
        await pilot.press("j")
        broker = app.runtime.broker
        await broker.cancel(ids[1])  # gone behind the operator's back
        await rows(pilot, 2)
        table = queue(app)
        assert table.gone_id == ids[1] and table.selected_id is None
        detail = app.screen.query_one(RequestDetail)
        await until(pilot, lambda: f"{ids[1]} is no longer waiting" in detail.text)

        await pilot.press("a")  # the row under the cursor is ids[2] now: it must not be approved
        await until(pilot, lambda: any("left the list" in text for text in said))
        assert [broker.get(i).state for i in ids] == [State.pending, State.cancelled, State.pending]

        await pilot.press("j")  # the operator moves: the row under the cursor is chosen
        await until(pilot, lambda: detail.shown_id == ids[2])
        assert table.gone_id is None and table.selected_id == ids[2]


async def test_the_selection_follows_its_request_to_another_page(
    console, paths: Paths, clock: FakeClock
):
    ids = seed_pending(paths, 110, clock())  # three pages: 50, 50 and 10
    app = console()
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await rows(pilot, 50)
        await pilot.press("right_square_bracket")
        table = queue(app)
        await until(pilot, lambda: table.selected_id == ids[50])
        for request_id in ids[:5]:  # five requests before it leave: it moves up a page
            await app.runtime.broker.cancel(request_id)
        await until(pilot, lambda: "1\N{EN DASH}50 of 105" in screen_text(app))
        assert table.gone_id is None and table.selected_id == ids[50]
        assert table.cursor_row == 45


# -- the history's order, said truly ------------------------------------------------------------


async def test_the_history_says_it_lists_the_newest_request_first(
    console, paths: Paths, clock: FakeClock
):
    """The older request decided last: by decision time the list would read oldest first, and
    the header says the order is the requests'."""
    ids = seed_pending(paths, 2, clock())
    app = console()
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await rows(pilot, 2)
        broker = app.runtime.broker
        await broker.deny(DenyParams(request_id=ids[1], reason="first decided"))
        clock.advance(30)
        await broker.deny(DenyParams(request_id=ids[0], reason="decided last"))
        await rows(pilot, 0)
        await pilot.press("h")
        await until(pilot, lambda: "newest request first" in screen_text(app))
        assert list(app.screen.query_one(HistoryTable).requests) == [ids[1], ids[0]]


# -- the countdown ------------------------------------------------------------------------------


async def test_the_deny_dialog_counts_down_with_the_clock_and_refuses_at_zero(
    console, clock: FakeClock
):
    app = console(pending_ttl_s=120)
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await started(pilot)
        (request_id,) = await submit(app)
        await rows(pilot, 1)
        await pilot.press("d")
        await until(pilot, lambda: isinstance(app.screen, DenyReasonModal))
        countdown = app.screen.query_one(Countdown)
        assert countdown.text == "Expires in 2m 00s"
        clock.advance(45)
        await until(pilot, lambda: countdown.text == "Expires in 1m 15s")
        await type_text(pilot, "too broad")
        clock.advance(75)
        await until(pilot, lambda: "Expired" in countdown.text)
        await until(pilot, lambda: "The request expired; nothing was decided" in screen_text(app))
        assert app.screen.query_one("#confirm", Button).disabled
        await pilot.click("#confirm")
        await until(pilot, lambda: isinstance(app.screen, DenyReasonModal))
        assert app.runtime.broker.get(request_id).state in (State.pending, State.expired)
        await pilot.press("enter")  # on Cancel, where the refusal put the focus
        await until(pilot, lambda: not isinstance(app.screen, DenyReasonModal))
        await until(pilot, lambda: app.runtime.broker.get(request_id).state == State.expired)


# -- the demo's pause key -----------------------------------------------------------------------


async def test_the_demo_pause_key_holds_the_simulated_agents(console):
    async def agents(runtime: Runtime) -> None:
        await run_persona(PERSONAS[0], runtime.paths.socket, interval_s=(0.05, 0.1), max_open=50)

    app = console(after_start=agents)

    def submitted() -> int:
        return app.runtime.ledger.db.execute("SELECT count(*) FROM requests").fetchone()[0]

    try:
        async with app.run_test(size=(120, 40), notifications=True) as pilot:
            await started(pilot)
            await until(pilot, lambda: submitted() >= 2)
            await pilot.press("P")
            # Held at the gate: the agent cannot submit until the key is pressed again.
            await until(pilot, lambda: TRAFFIC.held == 1)
            held = submitted()
            await until(pilot, lambda: "demo agents paused" in header(app))
            assert TRAFFIC.held == 1 and submitted() == held
            await pilot.press("P")
            await until(pilot, lambda: submitted() > held)
            assert "demo agents paused" not in header(app)
    finally:
        TRAFFIC.resume()


# -- snapshot -----------------------------------------------------------------------------------


def test_snapshot_deny_dialog_with_countdown_and_a_held_notice_narrow(
    snap_compare: Any, console: Callable[..., ConsoleApp]
):
    """At 80x24: the deny dialog counts down, the header counts two pending, and the arrival
    that came while it was open is held, not drawn over its buttons."""
    app = console()

    async def run_before(pilot: Pilot[Any]) -> None:
        await started(pilot)
        await submit(app)
        await rows(pilot, 1)
        await clear_notices(pilot)
        await pilot.press("d")
        await until(pilot, lambda: isinstance(app.screen, DenyReasonModal))
        await submit(app)
        await until(pilot, lambda: app.sub_title == "2 pending" and announcements_made(app))

    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)
