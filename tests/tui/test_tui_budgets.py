"""Budgets in sight: the detail of a pending request shows each budget it draws on, with what is
spent and reserved in its window, what is left, and what approving would make of it against its
warn level and its stop; past either, the line says so in its colour and in words."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from helpers import FakeClock, agent_token
from textual.pilot import Pilot
from tui_support import build_console, clear_notices, rows, started, until

from svc_console.agent import AsyncAgent
from svc_console.broker.params import ApproveParams
from svc_console.config.paths import Paths
from svc_console.core.states import State
from svc_console.policy.budget_view import BudgetLine
from svc_console.runtime import Runtime
from svc_console.tui.app import ConsoleApp
from svc_console.tui.approvals.budgets import budget_text
from svc_console.tui.approvals.detail import RequestDetail
from svc_console.tui.colors import Palette

SEARCH = {"endpoint_id": "ep_websearch_basic", "purpose": "research"}  # 0.01 USDC a call
BUDGETS = """# SKILLS.md

```policy
budgets:
  - name: daily allowance
    per: agent
    window: day
    warn_usdc: 0.02
    max_usdc: 0.05
  - name: everyone
    per: overall
    window: hour
    warn_usdc: 0.015
    max_usdc: 1
```
"""
PALETTE = Palette("bold", "dim", "red", "yellow", "blue", "green")


@pytest.fixture
def console(make_runtime: Callable[..., Runtime], clock: FakeClock) -> Callable[..., ConsoleApp]:
    return lambda **options: build_console(make_runtime, clock, **options)


async def pending(pilot: Pilot[Any], app: ConsoleApp, agent: str, query: str) -> str:
    broker = app.runtime.broker
    async with AsyncAgent(
        agent, app.runtime.paths.socket, token=agent_token(app.runtime.paths, agent)
    ) as client:
        request_id = (await client.submit(**SEARCH, inputs={"query": query}))["request_id"]
    await until(pilot, lambda: broker.get(request_id).state == State.pending)
    return request_id


def test_a_budget_line_says_now_after_and_what_it_passes():
    line = BudgetLine("daily allowance: bot", "day", 10_000, 5_000, 20_000, 50_000, 25_000, "S:5")
    text = budget_text(line, PALETTE)
    assert text.plain == (
        "daily allowance: bot (day)  S:5\n"
        "spent 0.01 · reserved 0.005 · left 0.035 → after 0.025 of 0.05, warn 0.02"
        " · past its warn level"
    )
    over = BudgetLine("everyone", "hour", 10_000, 0, None, 15_000, 20_000, "S:9")
    text = budget_text(over, PALETTE)
    assert text.plain.endswith("→ after 0.02 of 0.015 · past its stop")
    assert any(span.style == "red" for span in text.spans)


async def test_the_detail_shows_the_budgets_a_request_draws_on(console, paths: Paths):
    paths.home.mkdir(parents=True, exist_ok=True)
    (paths.home / "SKILLS.md").write_text(BUDGETS)
    app = console()
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await started(pilot)
        first = await pending(pilot, app, "research-bot", "solar")
        await app.runtime.broker.approve(ApproveParams(request_id=first))
        await until(pilot, lambda: app.runtime.broker.get(first).state == State.succeeded)
        await pending(pilot, app, "research-bot", "wind")
        await rows(pilot, 1)
        # The selected request left (approved elsewhere): the operator chooses the new one.
        await pilot.press("k")
        detail = app.screen.query_one(RequestDetail)
        await until(pilot, lambda: "Budgets: now → after approving" in detail.text)
        text = " ".join(detail.text.split())
        assert "daily allowance: research-bot (day) SKILLS.md:5" in text
        assert "spent 0.01 · reserved 0.00 · left 0.04 → after 0.02 of 0.05, warn 0.02" in text
        assert "→ after 0.02 of 1.00, warn 0.015 · past its warn level" in text


def test_snapshot_detail_with_budgets(snap_compare: Any, console, paths: Paths):
    """A pending request's detail with its budgets, one past its warn level."""
    paths.home.mkdir(parents=True, exist_ok=True)
    (paths.home / "SKILLS.md").write_text(BUDGETS)
    app = console()

    async def run_before(pilot: Pilot[Any]) -> None:
        await started(pilot)
        broker = app.runtime.broker
        request_id = await pending(pilot, app, "research-bot", "solar")
        await broker.approve(ApproveParams(request_id=request_id))
        await until(pilot, lambda: broker.get(request_id).state == State.succeeded)
        await pending(pilot, app, "research-bot", "tides")
        await rows(pilot, 1)
        await pilot.press("k")  # the approved request left: the operator chooses the new one
        detail = app.screen.query_one(RequestDetail)
        await until(pilot, lambda: "past its warn" in " ".join(detail.text.split()))
        await clear_notices(pilot)

    assert snap_compare(app, terminal_size=(120, 40), run_before=run_before)
