"""The two-person rule in the approvals detail: a pending request above the rule's amount says
that two operators approve it, and, once one has, who did and that a second is needed."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from helpers import FakeClock
from textual.pilot import Pilot
from tui_support import build_console, clear_notices, listed_notices, rows, started, until

from svc_console.agent import AsyncAgent
from svc_console.broker.deciders import Decider
from svc_console.broker.params import ApproveParams
from svc_console.config.paths import Paths
from svc_console.core.states import State
from svc_console.runtime import Runtime
from svc_console.tui.app import ConsoleApp
from svc_console.tui.approvals.detail import RequestDetail

TWO_PERSON = "# SKILLS.md\n\n```policy\ntwo_person:\n  above_usdc: 0.005\n```\n"  # a search: 0.01


@pytest.fixture
def console(make_runtime: Callable[..., Runtime], clock: FakeClock, paths: Paths) -> ConsoleApp:
    paths.home.mkdir(parents=True, exist_ok=True)
    (paths.home / "SKILLS.md").write_text(TWO_PERSON)
    return build_console(make_runtime, clock)


async def half_approved(pilot: Pilot[Any], app: ConsoleApp) -> RequestDetail:
    """A request asked, seen with no approval yet, then approved once, by bob."""
    broker = app.runtime.broker
    async with AsyncAgent("research-bot", app.runtime.paths.socket) as agent:
        ticket = await agent.submit(
            endpoint_id="ep_websearch_basic", inputs={"query": "tides"}, purpose="research"
        )
    request_id = ticket["request_id"]
    await until(pilot, lambda: broker.get(request_id).state == State.pending)
    await rows(pilot, 1)
    detail = app.screen.query_one(RequestDetail)
    await until(pilot, lambda: "none has yet" in " ".join(detail.text.split()))
    await broker.approve(
        ApproveParams(request_id=request_id), Decider.on_operator_socket(None, "bob")
    )
    await until(pilot, lambda: "approved by bob" in " ".join(detail.text.split()))
    return detail


async def test_the_detail_says_who_approved_and_that_a_second_is_needed(console):
    async with console.run_test(size=(120, 40), notifications=True) as pilot:
        await started(pilot)
        detail = await half_approved(pilot, console)
        text = " ".join(detail.text.split())
        assert (
            "approval approved by bob; needs a second operator (two different operators"
            " approve above 0.005 USDC)" in text
        )
        assert console.runtime.broker.pending()[0].state == State.pending


async def test_a_first_approval_in_the_tui_is_the_settings_operator_and_leaves_it_pending(
    console,
):
    console.runtime.console_operator = "carol"  # settings.toml [operator] name
    async with console.run_test(size=(120, 40), notifications=True) as pilot:
        await started(pilot)
        await half_approved(pilot, console)
        broker = console.runtime.broker
        request_id = broker.pending()[0].id
        # bob approved once over the socket; carol, at the TUI, is the second operator.
        await pilot.press("a")
        await until(pilot, lambda: broker.get(request_id).state == State.succeeded)
        assert broker.get(request_id).decision.by == "bob, carol"


async def test_the_tuis_first_approval_says_a_second_operator_is_needed(console):
    console.runtime.console_operator = "carol"
    async with console.run_test(size=(120, 40), notifications=True) as pilot:
        await started(pilot)
        broker = console.runtime.broker
        async with AsyncAgent("research-bot", console.runtime.paths.socket) as agent:
            await agent.submit(
                endpoint_id="ep_websearch_basic", inputs={"query": "moon"}, purpose="research"
            )
        await rows(pilot, 1)
        await pilot.press("a")
        # Said at once; the request's arrival may be announced after it (gathered for a second).
        await until(pilot, lambda: "it needs a second operator" in listed_notices(console))
        request = broker.pending()[0]
        assert broker.decisions.operator_approvals(request) == ["carol"]


def test_snapshot_a_request_approved_by_one_operator_of_two(snap_compare: Any, console):
    async def run_before(pilot: Pilot[Any]) -> None:
        await started(pilot)
        await half_approved(pilot, console)
        await clear_notices(pilot)

    assert snap_compare(console, terminal_size=(120, 40), run_before=run_before)
