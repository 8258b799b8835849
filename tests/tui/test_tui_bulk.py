"""Deciding similar requests together: `space` marks the selected pending request, `m` every one
the filter matches, and `a` / `d` then decide every marked request in one dialog, each with its
own decision; the total is typed when it passes the threshold. Marks are ids, so they survive
reloads, sorts and new arrivals; a request decided elsewhere loses its mark."""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from typing import Any

import pytest
from helpers import FakeClock
from textual.pilot import Pilot
from textual.widgets import Input
from tui_support import (
    build_console,
    listed_notices,
    notices,
    queue,
    rows,
    screen_text,
    seed_pending,
    type_text,
    until,
)

from svc_console.agent import AsyncAgent
from svc_console.broker.params import DenyParams
from svc_console.config.paths import Paths
from svc_console.core.money import format_usdc
from svc_console.core.states import State
from svc_console.runtime import Runtime
from svc_console.tui.app import ConsoleApp
from svc_console.tui.approvals.bulk import BulkModal, Marks, outcome_text
from svc_console.tui.approvals.screen import ApprovalsScreen


@pytest.fixture
def console(make_runtime: Callable[..., Runtime], clock: FakeClock) -> Callable[..., ConsoleApp]:
    return lambda **options: build_console(make_runtime, clock, **options)


def marked(app: ConsoleApp) -> list[str]:
    return app.screen.marks.ids


def error_text(app: ConsoleApp) -> str:
    return str(app.screen.query_one("#dialog-error").render())


async def mark_first(pilot: Pilot[Any], count: int) -> None:
    """Mark the first `count` rows: space marks and moves to the next row."""
    queue(pilot.app).move_cursor(row=0)
    for _ in range(count):
        await pilot.press("space")


async def test_three_marked_requests_approved_with_one_typed_total(
    console, paths: Paths, clock: FakeClock
):
    ids = seed_pending(paths, 5, clock())
    app = console(confirm_above_usdc=Decimal("0.02"))
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await rows(pilot, 5)
        broker = app.runtime.broker
        await mark_first(pilot, 3)
        assert marked(app) == ids[:3]
        _, total = broker.pending_total(ids[:3])
        assert broker.decisions.total_confirmation_needed(total)
        await until(pilot, lambda: f"3 marked · {format_usdc(total)} USDC" in screen_text(app))
        assert screen_text(app).count("● ") == 3

        await pilot.press("a")
        await until(pilot, lambda: isinstance(app.screen, BulkModal))
        assert f"3 requests, up to {format_usdc(total)} USDC in all" in screen_text(app)
        await type_text(pilot, "0.01")
        await pilot.press("enter")
        await until(pilot, lambda: "0.01 is not the total" in error_text(app))
        assert all(broker.get(i).state == State.pending for i in ids)

        app.screen.query_one("#confirm-total", Input).value = ""
        await type_text(pilot, format_usdc(total))
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, ApprovalsScreen))

        await until(pilot, lambda: "3 approved" in listed_notices(app))  # outcomes follow
        for request_id in ids[:3]:
            decision = broker.get(request_id).decision
            assert decision is not None and decision.approved
        assert [broker.get(i).state for i in ids[3:]] == [State.pending] * 2
        decisions = app.runtime.ledger.db.execute("SELECT count(*) FROM decisions").fetchone()[0]
        assert decisions == 3
        assert marked(app) == []
        await rows(pilot, 2)


async def test_the_bulk_dialog_counts_down_to_the_first_deadline_and_leaves_that_one_out(
    console, paths: Paths, clock: FakeClock
):
    ids = seed_pending(paths, 3, clock())
    app = console()
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await rows(pilot, 3)
        broker = app.runtime.broker
        await mark_first(pilot, 3)
        await pilot.press("a")
        await until(pilot, lambda: isinstance(app.screen, BulkModal))
        first, second = sorted(broker.get(i).expires_at for i in ids)[:2]
        assert first < second
        await until(pilot, lambda: "The first of them expires in" in screen_text(app))
        clock.advance((first + second) / 2 - clock())  # past the soonest deadline only
        await until(pilot, lambda: "One of them has expired" in screen_text(app))
        soonest = next(i for i in ids if broker.get(i).expires_at == first)
        await until(pilot, lambda: broker.get(soonest).state == State.expired)
        assert isinstance(app.screen, BulkModal)
        await pilot.press("enter")  # the dialog still decides the others
        await until(pilot, lambda: "2 approved, 1 not" in listed_notices(app))
        others = [i for i in ids if i != soonest]
        assert all(broker.get(i).decision.approved for i in others)


async def test_marks_survive_reloads_and_leave_with_their_request(
    console, paths: Paths, clock: FakeClock
):
    ids = seed_pending(paths, 6, clock())
    app = console()
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await rows(pilot, 6)
        broker = app.runtime.broker
        await mark_first(pilot, 3)
        assert marked(app) == ids[:3]

        # Another order, a new arrival: the page is read again, the marks stay on their rows.
        await pilot.press("s")
        await until(pilot, lambda: "largest first" in screen_text(app))
        async with AsyncAgent("research-bot", app.runtime.paths.socket) as agent:
            await agent.submit(
                endpoint_id="ep_websearch_basic", inputs={"query": "x"}, purpose="more"
            )
        await rows(pilot, 7)
        assert marked(app) == ids[:3]
        agents = {queue(app).requests[i].agent for i in ids[:3]}
        lines = [line for line in screen_text(app).splitlines() if "● " in line]
        assert len(lines) == 3 and all(any(a in line for a in agents) for line in lines)

        # Decided elsewhere: its mark goes with it.
        await broker.deny(DenyParams(request_id=ids[1], reason="decided elsewhere"))
        await rows(pilot, 6)
        assert marked(app) == [ids[0], ids[2]]
        await until(pilot, lambda: "2 marked" in screen_text(app))

        await pilot.press("M")
        await until(pilot, lambda: "marked ·" not in screen_text(app))
        assert marked(app) == [] and "● " not in screen_text(app)


async def test_mark_all_the_filter_matches_then_deny_them(console, paths: Paths, clock: FakeClock):
    ids = seed_pending(paths, 12, clock())
    high = [request_id for n, request_id in enumerate(ids) if n % 5 == 0]  # req 0, 5, 10
    app = console()
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await rows(pilot, 12)
        broker = app.runtime.broker
        await pilot.press("slash")
        await type_text(pilot, "risk:high")
        await pilot.press("enter")
        await rows(pilot, 3)
        await pilot.press("m")
        await until(pilot, lambda: "3 marked" in notices(app))
        assert sorted(marked(app)) == sorted(high)

        await pilot.press("d")
        await until(pilot, lambda: isinstance(app.screen, BulkModal))
        await pilot.press("enter")
        await until(pilot, lambda: "A reason is required" in error_text(app))
        await type_text(pilot, "keys in the inputs")
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, ApprovalsScreen))
        await until(pilot, lambda: "3 denied" in listed_notices(app))
        assert all(broker.get(i).state == State.denied for i in high)
        assert all(broker.get(i).reason == "keys in the inputs" for i in high)
        assert sum(broker.get(i).state == State.pending for i in ids) == 9


def test_marks_and_the_summary_of_a_bulk_decision():
    marks = Marks()
    assert not marks and marks.total == Decimal(0)
    summary, everything = outcome_text({"req_1": "approved", "req_2": "approved"}, True)
    assert (summary, everything) == ("2 approved", True)
    summary, everything = outcome_text(
        {"req_1": "denied", "req_2": "not denied: request req_2 is expired, not pending"}, False
    )
    assert summary == "1 denied, 1 not: req_2: request req_2 is expired, not pending"
    assert not everything


def test_snapshot_bulk_confirmation(snap_compare: Any, console, paths: Paths, clock: FakeClock):
    """Four marked requests: the dialog with their count, their total, the total to type."""
    seed_pending(paths, 6, clock())
    app = console(confirm_above_usdc=Decimal("0.02"))

    async def run_before(pilot: Pilot[Any]) -> None:
        await rows(pilot, 6)
        await mark_first(pilot, 4)
        await pilot.press("a")
        await until(pilot, lambda: isinstance(app.screen, BulkModal))

    assert snap_compare(app, terminal_size=(120, 40), run_before=run_before)


def test_snapshot_marked_rows(snap_compare: Any, console, paths: Paths, clock: FakeClock):
    """Marked rows carry a mark before the agent; the status line counts them and their total."""
    seed_pending(paths, 6, clock())
    app = console()

    async def run_before(pilot: Pilot[Any]) -> None:
        await rows(pilot, 6)
        queue(app).move_cursor(row=1)
        await pilot.press("space", "down", "space")
        await until(pilot, lambda: "2 marked" in screen_text(app))

    assert snap_compare(app, terminal_size=(120, 40), run_before=run_before)
