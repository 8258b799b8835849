"""The approvals screen against the real thing: the sandbox over HTTP, the Unix socket, the SQLite
ledger. Agents submit with `AsyncAgent`; the operator is a Textual pilot pressing keys."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from helpers import FakeClock, runtime_ledger
from pydantic import ConfigDict
from rich.console import Console
from textual.pilot import Pilot
from textual.widgets import Input, Static
from tui_support import (
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
from svc_console.core.models import SpendRequest, Verdict
from svc_console.core.states import State
from svc_console.ledger import Ledger
from svc_console.ledger.request_windows import RequestQuery
from svc_console.runtime import Runtime
from svc_console.tui import present
from svc_console.tui.app import ConsoleApp
from svc_console.tui.approvals.detail import RequestDetail, render
from svc_console.tui.approvals.history import HistoryTable
from svc_console.tui.approvals.screen import ApprovalsScreen
from svc_console.tui.colors import Palette
from svc_console.tui.modals import ConfirmAmountModal, DenyReasonModal
from svc_console.tui.request_lists import PAGE_SIZE, parse_filter, with_token
from svc_console.tui.themes import BUNDLED_THEMES, ThemeError, load_theme, load_themes

# Personal data the operator must see (a secret would be refused at the socket: test_secret_inputs).
CONTACT = "jane.doe@example.org"
SEARCH = {
    "endpoint_id": "ep_websearch_basic",
    "inputs": {"query": f"solar panel prices 2026 {CONTACT}"},
    "purpose": "background for the weekly energy note",
}
SCRAPE = {
    "endpoint_id": "ep_scrape_page",
    "inputs": {"url": "https://example.com/solar/tariffs"},
    "purpose": "read the regulator's tariff page",
}
HOSTILE = "\x1b[31mRED\x1b]52;c;SGVsbG8=\x07 [@click=app.quit]x[/] \u202eevil"


@pytest.fixture
def console(make_runtime: Callable[..., Runtime], clock: FakeClock) -> Callable[..., ConsoleApp]:
    return lambda **options: build_console(make_runtime, clock, **options)


def history(app: ConsoleApp) -> HistoryTable:
    return app.screen.query_one(HistoryTable)


def shown_ids(app: ConsoleApp) -> list[str]:
    return list(queue(app).requests)


async def two_requests(pilot: Pilot[Any], app: ConsoleApp) -> tuple[str, str]:
    """Two requests, each waited for until it is announced: a row can show before its
    announcement (the page is read from the ledger), and a screenshot must not catch one late."""
    async with AsyncAgent("research-bot", app.runtime.paths.socket) as agent:
        # One after the other, so the rows' order never depends on the sandbox's timing.
        first = (await agent.submit(**SEARCH))["request_id"]
        await until(pilot, lambda: "New request from research-bot: Web Search" in notices(app))
        second = (await agent.submit(**SCRAPE))["request_id"]
        await until(pilot, lambda: "New request from research-bot: Page Scraper" in notices(app))
    await rows(pilot, 2)
    return first, second


# -- snapshots ----------------------------------------------------------------------------------


def test_snapshot_two_pending_requests(snap_compare: Any, console: Callable[..., ConsoleApp]):
    """Two requests from an agent: the queue, the first one's detail (an e-mail), the banner."""
    app = console()

    async def run_before(pilot: Pilot[Any]) -> None:
        await started(pilot)
        await two_requests(pilot, app)
        await clear_notices(pilot)

    assert snap_compare(app, terminal_size=(120, 40), run_before=run_before)


def test_snapshot_two_pending_requests_narrow(
    snap_compare: Any, console: Callable[..., ConsoleApp]
):
    """The same queue at 80x24: the list above, the detail below, the footer's keys fit."""
    app = console()

    async def run_before(pilot: Pilot[Any]) -> None:
        await started(pilot)
        await two_requests(pilot, app)
        await clear_notices(pilot)

    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)


def test_snapshot_empty_queue_narrow(snap_compare: Any, console: Callable[..., ConsoleApp]):
    """No requests at 80x24: the banner and the friendly empty state naming the socket."""
    app = console()

    async def run_before(pilot: Pilot[Any]) -> None:
        await started(pilot)

    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)


def test_snapshot_history(snap_compare: Any, console: Callable[..., ConsoleApp]):
    """One request approved and charged, one denied: the history tab with outcome and charge."""
    app = console()

    async def run_before(pilot: Pilot[Any]) -> None:
        await started(pilot)
        first, second = await two_requests(pilot, app)
        broker = app.runtime.broker
        await pilot.press("a")
        await until(pilot, lambda: broker.get(first).state == State.succeeded)
        await broker.deny(DenyParams(request_id=second, reason="not this week"))
        await rows(pilot, 0)
        await pilot.press("h")
        await until(pilot, lambda: history(app).row_count == 2)
        await clear_notices(pilot)

    assert snap_compare(app, terminal_size=(120, 40), run_before=run_before)


def test_snapshot_refusal_notification(snap_compare: Any, console: Callable[..., ConsoleApp]):
    """The error state: an approval the broker refuses is one notification, the screen stays."""
    app = console()

    async def run_before(pilot: Pilot[Any]) -> None:
        await started(pilot)
        first, _ = await two_requests(pilot, app)
        await clear_notices(pilot)
        runtime = app.runtime
        runtime.ledger.transition(first, State.expired, at=runtime.broker.clock())
        await pilot.press("a")
        await until(pilot, lambda: "Could not approve" in screen_text(app))

    assert snap_compare(app, terminal_size=(120, 40), run_before=run_before)


def test_snapshot_filtered_and_sorted_narrow(
    snap_compare: Any, console: Callable[..., ConsoleApp], paths: Paths, clock: FakeClock
):
    """120 requests waiting, filtered to the high-risk ones, largest first, at 80x24."""
    seed_pending(paths, 120, clock())
    app = console()

    async def run_before(pilot: Pilot[Any]) -> None:
        await started(pilot)
        await pilot.press("slash")
        await type_text(pilot, "risk:high")
        await pilot.press("enter", "s")
        await until(pilot, lambda: "largest first" in screen_text(app))

    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)


def test_snapshot_no_match(snap_compare: Any, console: Callable[..., ConsoleApp]):
    """A filter nothing matches says so and how to clear it."""
    app = console()

    async def run_before(pilot: Pilot[Any]) -> None:
        await started(pilot)
        await two_requests(pilot, app)
        await clear_notices(pilot)
        await pilot.press("slash")
        await type_text(pilot, "nobody")
        await until(pilot, lambda: "No request matches" in screen_text(app))

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
            await until(pilot, lambda: "New request from research-bot" in screen_text(app))
            assert rang, "a new request rings the bell"
            text = screen_text(app)
            assert "SANDBOX · no real money moves" in text
            assert CONTACT in text and "input_email" in text

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


async def test_each_new_request_rings_and_is_announced_once(console: Callable[..., ConsoleApp]):
    app = console()
    rang: list[bool] = []
    app.bell = lambda: rang.append(True)  # type: ignore[method-assign]
    notes = record_notifications(app)
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await started(pilot)
        broker = app.runtime.broker
        async with AsyncAgent("research-bot", app.runtime.paths.socket) as agent:
            for params in (SEARCH, SCRAPE, SCRAPE):
                await agent.submit(**params)
            await until(pilot, lambda: len(broker.pending()) == 3)
        await rows(pilot, 3)

        def arrivals() -> list[str]:
            return [text for text in notes if "new request" in text.lower()]

        def announced() -> int:
            return sum(int(text.split()[0]) if text[0].isdigit() else 1 for text in arrivals())

        # Arriving together they share one notification ("3 new requests ..."): each request is
        # announced once, and the bell rings at least once, at most once a request.
        await until(pilot, lambda: announced() >= 3)
        assert announced() == 3 and 1 <= len(rang) <= 3


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
            await until(pilot, lambda: isinstance(app.screen, DenyReasonModal))
            await pilot.press("enter")
            await until(pilot, lambda: "A reason is required" in screen_text(app))
            assert app.screen.query_one("#dialog-error", Static).has_class("-shown")
            assert isinstance(app.screen, DenyReasonModal)
            assert broker.get(request_id).state == State.pending

            await pilot.press("escape")
            await until(pilot, lambda: isinstance(app.screen, ApprovalsScreen))
            assert broker.get(request_id).state == State.pending

            await pilot.press("d")
            await until(pilot, lambda: isinstance(app.screen, DenyReasonModal))
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
            detail = app.screen.query_one(RequestDetail)
            await until(pilot, lambda: "type 0.01 to confirm" in " ".join(detail.text.split()))

            await pilot.press("a")
            await until(pilot, lambda: isinstance(app.screen, ConfirmAmountModal))
            await type_text(pilot, "0.02")
            await pilot.press("enter")
            await until(pilot, lambda: "0.02 is not the amount" in screen_text(app))
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
        # Its arrival announced first (gathered for a second), or it would be the newest notice.
        await clear_notices(pilot)
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
        first, second = await two_requests(pilot, app)

        await pilot.press("j")
        await until(pilot, lambda: queue(app).selected_id == second)
        await pilot.press("k")
        await until(pilot, lambda: queue(app).selected_id == first)
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
        await until(pilot, lambda: "New request from" in screen_text(app))
        text = screen_text(app)
        assert "<ESC>[31mRED<ESC>]52;c;SGVsbG8=<BEL>" in text
        assert "[@click=app.quit]x[/]" in text
        assert "<U+202E>evil" in text
        assert "\x1b" not in text and "\u202e" not in text
        # Clicking where the would-be link is drawn does nothing either.
        await pilot.click("#detail")
        await pilot.pause()
        assert app.is_running and app.return_code is None
        # Typed into the filter, the same text finds the request and stays text.
        await pilot.press("slash")
        await type_text(pilot, "[@click=app.quit]")
        await until(pilot, lambda: queue(app).row_count == 0)
        assert app.is_running and "[@click=app.quit]" in screen_text(app)


async def test_the_detail_pane_sizes_scrolls_and_explains_itself(
    console: Callable[..., ConsoleApp],
):
    app = console()
    async with app.run_test(size=(160, 48)) as pilot:
        await started(pilot)
        async with AsyncAgent("research-bot", app.runtime.paths.socket) as agent:
            await agent.submit(**{**SEARCH, "purpose": "\n".join(f"line {n}" for n in range(80))})
        await rows(pilot, 1)
        await pilot.press("v")  # all of the agent's text: longer than the pane
        pane = app.screen.query_one("#detail-pane")
        detail = app.screen.query_one(RequestDetail)
        await until(pilot, lambda: detail.max_scroll_y > 0)
        # A share of the terminal, not a fixed 46 columns: 40% of 160 by default.
        assert pane.outer_size.width == 64
        await pilot.press("greater_than_sign", "greater_than_sign")
        await until(pilot, lambda: pane.outer_size.width == 96)
        for _ in range(5):  # past the largest size: it stays there
            await pilot.press("greater_than_sign")
        await until(pilot, lambda: pane.outer_size.width == 112)
        for _ in range(6):
            await pilot.press("less_than_sign")
        await until(pilot, lambda: pane.outer_size.width == 48)  # 30% of 160
        await pilot.press("J")
        await until(pilot, lambda: detail.scroll_y > 0)
        await pilot.press("K")
        await until(pilot, lambda: detail.scroll_y == 0)
        text = screen_text(app)
        assert "J/K scroll · </> size · F1 help" in text
        assert "risk: H high · W warning" in text
        await pilot.press("f1")
        await until(pilot, lambda: "Reading the screen" in screen_text(app))
        assert "H2 W1 = two high-severity flags and one warning" in screen_text(app)


async def test_the_detail_pane_stacked_takes_a_share_of_the_height(
    console: Callable[..., ConsoleApp],
):
    app = console()
    async with app.run_test(size=(80, 24)) as pilot:
        await started(pilot)
        async with AsyncAgent("research-bot", app.runtime.paths.socket) as agent:
            await agent.submit(**SEARCH)
        await rows(pilot, 1)
        pane = app.screen.query_one("#detail-pane")
        await until(pilot, lambda: pane.outer_size.width == 80)
        before = pane.outer_size.height
        await pilot.press("greater_than_sign")
        await until(pilot, lambda: pane.outer_size.height > before)
        await pilot.press("less_than_sign", "less_than_sign")
        await until(pilot, lambda: pane.outer_size.height < before)
        assert pane.outer_size.width == 80


# -- sorting, filtering, paging, history --------------------------------------------------------


async def test_sort_keys_reorder_the_queue(
    console: Callable[..., ConsoleApp], paths: Paths, clock: FakeClock
):
    ids = seed_pending(paths, 12, clock())
    app = console()
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await rows(pilot, 12)
        ledger = app.runtime.ledger
        requests = {r.id: r for r in ledger.window(RequestQuery(states=(State.pending,)))}
        assert shown_ids(app) == ids  # oldest first
        assert "oldest first" in screen_text(app)

        await pilot.press("s")  # amount, largest first
        await until(pilot, lambda: "largest first" in screen_text(app))
        amounts = [requests[i].estimate.amount_usdc for i in shown_ids(app)]
        assert amounts == sorted(amounts, reverse=True) and amounts[0] > amounts[-1]

        await pilot.press("S")  # reversed
        await until(pilot, lambda: "smallest first" in screen_text(app))
        amounts = [requests[i].estimate.amount_usdc for i in shown_ids(app)]
        assert amounts == sorted(amounts)

        await pilot.press("s")  # time left
        await until(pilot, lambda: "least time left first" in screen_text(app))
        expiries = [requests[i].expires_at for i in shown_ids(app)]
        assert expiries == sorted(expiries) and shown_ids(app) != ids

        await pilot.press("s")  # agent
        await until(pilot, lambda: "agent A to Z" in screen_text(app))
        agents = [requests[i].agent for i in shown_ids(app)]
        assert agents == sorted(agents) and agents[0] == "alpha-bot"

        await pilot.press("s")  # and back to age
        await until(pilot, lambda: "oldest first" in screen_text(app))
        assert shown_ids(app) == ids

        # A click on a column's header sorts by it.
        header = next(line for line in screen_text(app).splitlines() if "est. USDC" in line)
        await pilot.click("#pending", offset=(header.index("est. USDC") + 2, 0))
        await until(pilot, lambda: "largest first" in screen_text(app))


async def test_filter_by_words_risk_and_verdict(
    console: Callable[..., ConsoleApp], paths: Paths, clock: FakeClock
):
    seed_pending(paths, 30, clock())
    app = console()
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await rows(pilot, 30)
        await pilot.press("slash")
        await until(pilot, lambda: app.screen.query_one("#filter").has_focus)
        await type_text(pilot, "zulu")
        await until(pilot, lambda: queue(app).row_count == 4)  # requests 4, 11, 18, 25
        assert all(r.agent == "zulu-bot" for r in queue(app).requests.values())
        assert "Pending 4/30" in screen_text(app)
        # While typing, letters are text, not keys: nothing was approved or sorted.
        assert len(app.runtime.broker.pending(limit=100)) == 30

        await pilot.press("space")
        await type_text(pilot, "risk:high")
        await until(pilot, lambda: queue(app).row_count == 1)  # 25: the only multiple of five
        await pilot.press("enter")
        await until(pilot, lambda: queue(app).has_focus and "zulu risk:high" in screen_text(app))

        await pilot.press("escape")
        await rows(pilot, 30)
        assert "Pending 30" in screen_text(app)

        # From the palette's commands: verdict and risk tokens.
        screen = app.screen
        await screen.run_action("filter_token('risk:none')")
        # Neither a multiple of 5 (high) nor of 3 (warn): 30 - 6 - 10 + 2 = 16.
        await until(pilot, lambda: queue(app).row_count == 16)
        await screen.run_action("filter_token('verdict:deny')")
        await until(pilot, lambda: "No request matches the filter" in screen_text(app))
        await pilot.press("escape")
        await rows(pilot, 30)

        # A bad token is named and the rest of the filter still applies.
        await pilot.press("slash")
        await type_text(pilot, "echo risk:extreme")
        await until(pilot, lambda: "risk: is high, warn or none" in screen_text(app))
        assert all(r.agent == "echo-bot" for r in queue(app).requests.values())


async def test_paging_through_the_queue(
    console: Callable[..., ConsoleApp], paths: Paths, clock: FakeClock
):
    ids = seed_pending(paths, 2 * PAGE_SIZE + 20, clock())
    app = console()
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await rows(pilot, PAGE_SIZE)
        # Only the page on screen is in the table, never the whole queue.
        assert shown_ids(app) == ids[:PAGE_SIZE]
        assert f"1\N{EN DASH}{PAGE_SIZE} of 120" in screen_text(app)

        await pilot.press("right_square_bracket")
        await until(pilot, lambda: shown_ids(app) == ids[PAGE_SIZE : 2 * PAGE_SIZE])
        assert f"{PAGE_SIZE + 1}\N{EN DASH}{2 * PAGE_SIZE} of 120" in screen_text(app)
        await pilot.press("right_square_bracket")
        await rows(pilot, 20)
        await pilot.press("right_square_bracket")  # there is no fourth page: nothing moves
        await pilot.pause()
        assert shown_ids(app) == ids[2 * PAGE_SIZE :]

        await pilot.press("left_square_bracket")
        await rows(pilot, PAGE_SIZE)
        # Past the last row, the next page; before the first row, the previous one.
        queue(app).move_cursor(row=PAGE_SIZE - 1)
        await pilot.press("j")
        await until(pilot, lambda: queue(app).selected_id == ids[2 * PAGE_SIZE])
        await pilot.press("k")
        await until(pilot, lambda: queue(app).selected_id == ids[2 * PAGE_SIZE - 1])
        await pilot.press("down")
        await until(pilot, lambda: queue(app).selected_id == ids[2 * PAGE_SIZE])
        await pilot.press("up")
        await until(pilot, lambda: queue(app).selected_id == ids[2 * PAGE_SIZE - 1])


async def test_history_tab_shows_outcomes_and_charges(console: Callable[..., ConsoleApp]):
    app = console()
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await started(pilot)
        broker = app.runtime.broker
        first, second = await two_requests(pilot, app)
        await pilot.press("a")
        await until(pilot, lambda: broker.get(first).state == State.succeeded)
        await pilot.press("d")
        await type_text(pilot, "too broad")
        await pilot.press("enter")
        await rows(pilot, 0)

        await pilot.press("h")
        await until(pilot, lambda: history(app).row_count == 2 and history(app).has_focus)
        assert list(history(app).requests) == [second, first]  # newest first
        text = screen_text(app)
        assert "succeeded" in text and "denied" in text and "History 2" in text
        # The detail of the selected (denied) request names the decision, who made it and why.
        detail = app.screen.query_one(RequestDetail).text
        assert (
            "too broad" in detail
            and "Decision" in detail
            and "by        tui · uid" in detail
            and "pid" not in detail
        )

        await pilot.press("j")
        await until(
            pilot, lambda: "charged   0.01 USDC" in app.screen.query_one(RequestDetail).text
        )
        # Approving and denying belong to the pending tab: the keys do nothing here.
        await pilot.press("a", "d")
        await until(pilot, lambda: isinstance(app.screen, ApprovalsScreen))
        assert "a Approve" not in screen_text(app) and "p Pending" in screen_text(app)

        await pilot.press("p")
        await until(pilot, lambda: queue(app).has_focus)
        assert "No requests waiting." in screen_text(app)


def test_filter_text_is_understood():
    assert parse_filter("solar  risk:HIGH verdict:auto") == parse_filter("solar").__class__(
        text="solar", verdict="auto_approve", risk="high"
    )
    assert parse_filter("verdict:maybe x").problem == "verdict: is ask, deny or auto"
    assert parse_filter("url:http://x").text == "url:http://x"
    assert with_token("a risk:high b", "risk:none") == "a b risk:none"


def test_request_windows_page_in_sql(paths: Paths, clock: FakeClock):
    """The ledger's windowed query: pages never overlap, counts match, wildcards are literal."""
    ids = seed_pending(paths, 25, clock())
    ledger = runtime_ledger(paths)
    try:
        query = RequestQuery(states=(State.pending,), order="agent")
        pages = [ledger.window(query, offset=o, limit=10) for o in (0, 10, 20)]
        seen = [r.id for page in pages for r in page]
        assert sorted(seen) == sorted(ids) and len(seen) == len(set(seen)) == 25
        assert ledger.count(query) == 25
        assert ledger.count(RequestQuery(states=(State.pending,), text="%")) == 0
        assert ledger.count(RequestQuery(states=(State.pending,), text="WEB kilo")) == 4
        assert ledger.count(RequestQuery(states=(State.denied,))) == 0
        # A request's position is where its query's pages put it, in any order or filter.
        for order, descending, text in (("agent", False, ""), ("amount", True, "kilo")):
            ranked = RequestQuery((State.pending,), order=order, descending=descending, text=text)
            listed = [r.id for r in ledger.window(ranked, offset=0, limit=100)]
            assert [ledger.position(ranked, i) for i in listed] == list(range(len(listed)))
        outside = RequestQuery(states=(State.pending,), text="kilo")
        assert ledger.position(outside, next(i for i in ids if i not in listed)) is None
        with pytest.raises(ValueError, match="unknown order"):
            RequestQuery(states=(State.pending,), order="amount; DROP TABLE requests")
    finally:
        ledger.close()


def test_detail_renders_whatever_the_verdict_carries():
    """Rule citations and budget figures when the policy engine gives them; an unknown field of a
    newer engine still shown, as text."""

    class CitedVerdict(Verdict):
        model_config = ConfigDict(extra="allow")
        citations: list[dict[str, Any]] = []
        budgets: list[dict[str, Any]] = []
        policy_sha256: str | None = None

    verdict = CitedVerdict(
        outcome="ask",
        summary="near the daily cap",
        rules=["daily-cap"],
        citations=[
            {"effect": "warn", "rule": "daily-cap", "reason": "80% used", "file": "/p/SKILLS.md"}
            | {"line": 12}
        ],
        budgets=[
            {"budget": "overall day", "before_usdc": "4.00", "after_usdc": "4.50"}
            | {"warn_usdc": "4.00", "max_usdc": "5.00"},
            {"budget": "agent week", "before_usdc": "9.00", "after_usdc": "11.00"}
            | {"max_usdc": "10.00"},
        ],
        policy_sha256="ab" * 32,
        surprise="[red]x[/]",
    )
    request = SpendRequest(
        id="req_1",
        agent="research-bot",
        kind="market_call",
        endpoint_id="ep_websearch_basic",
        inputs={},
        purpose="p",
        state=State.pending,
        created_at=0,
        updated_at=0,
        verdict=verdict,
    )
    colours = Palette("bold", "dim", "red", "yellow", "blue", "green")
    console = Console(width=160, record=True, color_system=None)
    console.print(render(request, colours))
    text = console.export_text()
    assert "warn: daily-cap · 80% used (SKILLS.md:12)" in text
    assert "overall day: 4.00 → 4.50 of 5.00 USDC (warns at 4.00)" in text
    assert "agent week: 9.00 → 11.00 of 10.00 USDC" in text
    assert "sha256 abababababab…" in text and "[red]x[/]" in text
    budgets = present.budget_lines(verdict)
    assert [tone for _, tone in budgets] == ["warn", "high"]
    assert present.rule_lines(Verdict(outcome="ask", summary="s", rules=["a", "b"])) == ["a", "b"]


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
    await until(pilot, lambda: app.return_code == 0)
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


@pytest.mark.engines("sqlite")  # one broker holds a ledger file; brokers share PostgreSQL
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
        assert screen_text(app).count("Theme not loaded") == 1


def test_bundled_themes_load():
    loaded = load_themes([BUNDLED_THEMES])
    assert loaded.problems == []
    assert {"console-dark", "console-light", "console-high-contrast"} <= set(loaded.themes)
    assert loaded.themes["console-light"].dark is False
    contrast = loaded.themes["console-high-contrast"]
    assert (contrast.background, contrast.foreground) == ("#000000", "#FFFFFF")


def test_theme_errors_name_the_file_and_problem(tmp_path: Path):
    cases = {
        "syntax.toml": ("name = ", "not valid TOML"),
        "unknown.toml": ('name = "x"\nprimary = "#000000"\nprimry = "#fff"\n', "unknown key"),
        "colour.toml": ('name = "x"\nprimary = "not-a-colour"\n', "is not a colour"),
        "noprimary.toml": ('name = "x"\n', "'primary' is required"),
        "badname.toml": ('name = "Bad Name"\nprimary = "#000000"\n', "'name' must be"),
        "dark.toml": ('name = "x"\nprimary = "#000000"\ndark = "yes"\n', "'dark' must be"),
    }
    for name, (text, problem) in cases.items():
        path = tmp_path / name
        path.write_text(text)
        with pytest.raises(ThemeError, match=problem) as caught:
            load_theme(path)
        assert name in str(caught.value)


# -- the core stays free of Textual -------------------------------------------------------------


@pytest.mark.parametrize("module", ["svc_console.broker", "svc_console.ledger", "svc_console.tui"])
def test_core_does_not_import_textual(module: str):
    """The broker and the ledger never need Textual; the TUI package itself loads it only when
    the app is used."""
    check = (
        f"import {module}, sys; "
        "assert not any(m == 'textual' or m.startswith('textual.') for m in sys.modules)"
    )
    subprocess.run([sys.executable, "-c", check], check=True)
