"""Budgets in sight: for the request the operator is looking at, each budget it draws on with what
is spent and reserved in its window now, what remains, its warn level and what approving would
make of it."""

from __future__ import annotations

from decimal import Decimal

from helpers import eventually

from svc_console.agent import AsyncAgent
from svc_console.core.buckets import buckets_for, slot_of
from svc_console.core.states import State
from svc_console.policy.budget_view import budget_lines
from svc_console.policy.budgets import RollingTotals
from svc_console.policy.engine import CompiledPolicy
from svc_console.policy.facts import Facts
from svc_console.policy.loader import load_text

NOW = 1_795_000_000.0
POLICY = """# SKILLS.md

```policy
budgets:
  - name: daily allowance
    per: agent
    window: day
    warn_usdc: 0.02
    max_usdc: 0.05
  - name: providers
    per: provider
    for: [prov_other]
    window: hour
    max_usdc: 1
```
"""


def test_each_budget_the_request_draws_on_with_spent_reserved_and_after():
    policy = CompiledPolicy(load_text(POLICY))
    totals = RollingTotals()
    bucket = buckets_for("bot", "prov_searchly", "A7")
    totals.apply([(bucket, slot_of(NOW - 600), 15_000)], NOW)  # 0.015 in the day
    facts = Facts(agent="bot", kind="market_call", amount=10_000, provider="prov_searchly")
    (line,) = budget_lines(policy, totals, facts, {("agent", "bot"): 5_000}, NOW)
    assert line.budget == "daily allowance: bot" and line.window == "day"
    assert (line.spent, line.reserved, line.after) == (10_000, 5_000, 25_000)
    assert line.remaining == 35_000 and line.remaining_after == 25_000
    assert line.warn == 20_000 and line.passes_warn and not line.passes_max
    assert line.where == "SKILLS.md:5"  # the budget's first line
    # Already approved: its amount is in the totals, not added again.
    (counted,) = budget_lines(policy, totals, facts, {}, NOW, counted=True)
    assert counted.after == 15_000 and counted.reserved == 0


async def test_the_broker_shows_the_budgets_of_a_pending_request(paths, make_runtime):
    paths.home.mkdir(parents=True, exist_ok=True)
    (paths.home / "SKILLS.md").write_text(POLICY)
    runtime = make_runtime()
    await runtime.start()
    try:
        ids = []
        for query in ("one", "two"):
            async with AsyncAgent("bot", runtime.paths.socket) as client:
                search = {"query": query}
                ticket = await client.submit(
                    endpoint_id="ep_websearch_basic", inputs=search, purpose="research"
                )
            ids.append(ticket["request_id"])
        await eventually(lambda: all(runtime.broker.get(i).state == State.pending for i in ids))
        from svc_console.broker.params import ApproveParams

        await runtime.broker.approve(ApproveParams(request_id=ids[0]))
        await eventually(lambda: runtime.broker.get(ids[0]).state == State.succeeded)
        (line,) = runtime.broker.budgets_for(runtime.broker.get(ids[1]))
        assert (line.spent, line.reserved, line.after) == (10_000, 0, 20_000)
        assert Decimal(line.remaining).scaleb(-6) == Decimal("0.04")
        assert not line.passes_warn  # 0.02 is the warn level: at it, not past it
    finally:
        await runtime.stop()
