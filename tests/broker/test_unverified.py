"""Unverified agents share one budget, end to end (sandbox, the agents' socket, the SQLite ledger,
a real SKILLS.md): in open enrolment, every agent that did not prove its name counts as one agent,
`(unverified)`, for per-agent budgets, rate limits and the circuit breaker, so fifty invented
names get what one would; a registered agent keeps its own."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest
from helpers import SEARCH, agent_token, eventually

from svc_console.agent import AsyncAgent
from svc_console.core.states import FINAL, State
from svc_console.ledger import pauses
from svc_console.runtime import Runtime

# Two auto-approvals a day per agent: a web search costs 0.01 USDC.
TWO_EACH = """
```policy
auto_approve:
  - name: small searches
    when:
      endpoints: [ep_websearch_basic]
      max_usdc: 0.05
    budgets:
      - per: agent
        window: day
        max_usdc: 0.02
```
"""
TWO_REQUESTS_EACH = """
```policy
rate_limits:
  - per: agent
    window: 10m
    max_requests: 2
    then: deny
```
"""
BREAKER = """
```policy
deny:
  endpoints: [ep_scrape_page]
circuit_breaker:
  failures: 3
  window: 15m
```
"""


@pytest.fixture
def start(paths, make_runtime, keep_started) -> Callable[..., Awaitable[Runtime]]:
    async def run(policy: str) -> Runtime:
        paths.home.mkdir(parents=True, exist_ok=True)
        (paths.home / "SKILLS.md").write_text(policy)
        return await keep_started(make_runtime(pending_ttl_s=3600))

    return run


async def judged(runtime: Runtime, agent: str, token: str | None = None, **params) -> object:
    async with AsyncAgent(agent, runtime.paths.socket, token=token) as client:
        ticket = await client.submit(**{**SEARCH, "purpose": "research", **params})
    return await eventually(
        lambda: (
            (r := runtime.broker.get(ticket["request_id"])).state in (*FINAL, State.pending) and r
        ),
        timeout=60,
    )


async def invented(runtime: Runtime, count: int, **params) -> list:
    """One request from each of `count` invented names, all at once."""
    return await asyncio.gather(*(judged(runtime, f"made-up-{n}", **params) for n in range(count)))


async def test_fifty_invented_names_pass_a_per_agent_cap_of_two_approvals_twice(start, paths):
    runtime = await start(TWO_EACH)
    done = await invented(runtime, 50)
    approved = [r for r in done if r.verdict.outcome == "auto_approve"]
    assert len(approved) == 2
    assert len({r.agent for r in done}) == 50 and not any(r.agent_verified for r in done)
    waiting = [r for r in done if r.state == State.pending]
    assert len(waiting) == 48
    assert any("(unverified)" in c.reason for c in waiting[0].verdict.citations)
    # A registered agent has a budget of its own.
    token = agent_token(paths, "research-bot")
    mine = [await judged(runtime, "research-bot", token) for _ in range(3)]
    assert [r.verdict.outcome for r in mine] == ["auto_approve", "auto_approve", "ask"]


async def test_fifty_invented_names_pass_a_per_agent_rate_limit_of_two_twice(start):
    runtime = await start(TWO_REQUESTS_EACH)
    done = await invented(runtime, 50)
    assert sum(r.state == State.pending for r in done) == 2
    denied = [r for r in done if r.state == State.denied]
    assert len(denied) == 48
    assert "agent (unverified): 3rd request in 10 minutes" in denied[0].reason


async def test_failures_of_invented_names_pause_them_all_as_one(start, paths):
    runtime = await start(BREAKER)
    for n in range(3):
        scrape = {"endpoint_id": "ep_scrape_page", "inputs": {"url": f"https://a.example/{n}"}}
        assert (await judged(runtime, f"flaky-{n}", **scrape)).state == State.denied
    assert [p.agent for p in pauses.paused(runtime.ledger)] == ["(unverified)"]
    another = await judged(runtime, "fresh-name")
    assert "agent (unverified)'s rules are paused" in another.verdict.summary
    # A registered agent is not paused with them.
    mine = await judged(runtime, "steady-bot", agent_token(paths, "steady-bot"))
    assert "paused" not in mine.verdict.summary
