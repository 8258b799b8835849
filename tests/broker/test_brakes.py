"""Brakes for a runaway agent, end to end: a real SKILLS.md, the agents' and operator sockets, the
SQLite ledger and the sandbox over HTTP. Repeated calls sent to the operator; a rate limit that
denies the request past it, allows again once the window has passed, and cannot be passed by
concurrent submissions; a circuit breaker that pauses an agent until an operator resumes it,
both decisions in the audit chain; counts and pauses that survive a restart."""

from __future__ import annotations

import asyncio
import json
import subprocess
from collections.abc import Awaitable, Callable

import pytest
from helpers import FakeClock, agent_token, eventually, operator
from operator_support import operator_cli, set_passphrase

from svc_console.agent import AgentError, AsyncAgent
from svc_console.core.states import FINAL, State
from svc_console.ledger import audit, pauses
from svc_console.runtime import Runtime

SEARCH = {"endpoint_id": "ep_websearch_basic", "purpose": "research"}  # 0.01 USDC, A7, verified
SCRAPE = {"endpoint_id": "ep_scrape_page"}
AUTO = """
```policy
auto_approve:
  - name: small searches
    when:
      domain_types: [A7]
      max_usdc: 0.05
```
"""
REPEATS = (
    AUTO
    + """
```policy
repeats:
  max_same: 3
  window: 10m
  then: ask
```
"""
)
RATE = """
```policy
rate_limits:
  - per: agent
    window: 10m
    max_requests: 100
    then: deny
```
"""
BREAKER = (
    AUTO
    + """
```policy
deny:
  endpoints: [ep_scrape_page]
circuit_breaker:
  failures: 5
  window: 15m
  then: pause_agent
```
"""
)


@pytest.fixture
def start(paths, make_runtime, keep_started) -> Callable[..., Awaitable[Runtime]]:
    """Start a runtime with `text` as its SKILLS.md; whatever a test leaves running is stopped."""

    async def run(text: str | None, **options) -> Runtime:
        paths.home.mkdir(parents=True, exist_ok=True)
        if text is not None:
            (paths.home / "SKILLS.md").write_text(text)
        # Agents of the tests' own user are accepted: the operator's commands need it.
        set_passphrase(paths.home)
        return await keep_started(make_runtime(**options))

    return run


async def settled(runtime: Runtime, agent: str, inputs: dict, **overrides) -> object:
    """Submit as registered `agent` (brakes count each such agent apart) and wait until the
    request no longer moves without the operator."""
    token = agent_token(runtime.paths, agent)
    async with AsyncAgent(agent, runtime.paths.socket, token=token) as client:
        ticket = await client.submit(**{**SEARCH, "inputs": inputs, **overrides})
    request_id = ticket["request_id"]
    return await eventually(
        lambda: (r := runtime.broker.get(request_id)).state in (*FINAL, State.pending) and r
    )


async def test_the_fourth_identical_call_waits_for_the_operator_whatever_the_key_order(start):
    runtime = await start(REPEATS)
    orders = [{"query": "solar", "max_results": 5}, {"max_results": 5, "query": "solar"}]
    done = [await settled(runtime, "loop-bot", orders[n % 2]) for n in range(5)]
    assert [r.state for r in done] == [State.succeeded] * 3 + [State.pending] * 2
    fourth, fifth = done[3], done[4]
    assert fourth.verdict.outcome == "ask"
    cite = next(c for c in fourth.verdict.citations if c.rule == "repeats")
    assert cite.effect == "ask" and cite.reason.startswith("4th identical call in ")
    assert cite.reason.endswith(", ".join(r.id for r in done[:3]))  # the earlier ones, named
    assert fourth.verdict.summary.startswith("the operator decides: repeats (SKILLS.md:")
    assert "5th identical call" in fifth.verdict.summary
    flags = {flag.code: flag.reason for flag in fourth.risk}
    assert flags["repeated_call"] == cite.reason
    # Other inputs, or another agent, are not a repeat.
    assert (await settled(runtime, "loop-bot", {"query": "wind"})).state == State.succeeded
    assert (await settled(runtime, "other-bot", orders[0])).state == State.succeeded


async def test_a_rate_limit_denies_the_101st_request_and_allows_again_after_the_window(start):
    clock = FakeClock()
    runtime = await start(RATE, clock=clock, pending_ttl_s=86_400)
    for n in range(100):
        assert (await settled(runtime, "busy-bot", {"query": f"q{n}"})).state == State.pending
    denied = await settled(runtime, "busy-bot", {"query": "one more"})
    assert denied.state == State.denied
    assert denied.reason == (
        "denied by rate_limits[0] (SKILLS.md:4): agent busy-bot: 101st request in 10 minutes"
        " (at most 100)"
    )
    # Another agent has a count of its own.
    assert (await settled(runtime, "calm-bot", {"query": "q"})).state == State.pending
    clock.advance(10 * 60 - 20)  # still inside the window
    assert (await settled(runtime, "busy-bot", {"query": "q101"})).state == State.denied
    clock.advance(40)  # past the window and its last cell
    assert (await settled(runtime, "busy-bot", {"query": "q102"})).state == State.pending


async def test_concurrent_submissions_cannot_pass_a_rate_limit_together(start):
    runtime = await start(RATE.replace("max_requests: 100", "max_requests: 10"))

    async def one(n: int) -> str:
        async with AsyncAgent("burst-bot", runtime.paths.socket) as client:
            ticket = await client.submit(**{**SEARCH, "inputs": {"query": f"burst {n}"}})
        return ticket["request_id"]

    ids = await asyncio.gather(*(one(n) for n in range(30)))
    states = await eventually(
        lambda: (
            (s := [runtime.broker.get(i).state for i in ids])
            and all(x in (State.pending, State.denied) for x in s)
            and s
        ),
        timeout=20,
    )
    assert states.count(State.pending) == 10 and states.count(State.denied) == 20


async def test_five_failures_pause_the_agent_until_an_operator_resumes_it(start):
    runtime = await start(BREAKER)
    for n in range(5):
        url = {"url": f"https://a.example/{n}"}
        assert (await settled(runtime, "flaky-bot", url, **SCRAPE)).state == State.denied
    assert [(p.agent, p.by) for p in pauses.paused(runtime.ledger)] == [
        ("flaky-bot", "policy: circuit_breaker")
    ]
    why = pauses.paused(runtime.ledger)[0].reason
    assert why == "5 requests in a row denied or failed within 15 minutes"
    # A search the auto-approve rule would approve now waits for the operator.
    waiting = await settled(runtime, "flaky-bot", {"query": "solar"})
    assert waiting.state == State.pending
    assert waiting.verdict.summary == (
        "the operator decides: circuit_breaker (SKILLS.md:13): agent flaky-bot's rules are paused"
        f" ({why}) until an operator resumes it"
    )
    # Other agents are not paused.
    assert (await settled(runtime, "steady-bot", {"query": "solar"})).state == State.succeeded
    # The paused agent cannot resume itself over the agents' socket: the method is not there.
    token = agent_token(runtime.paths, "flaky-bot")
    async with AsyncAgent("flaky-bot", runtime.paths.socket, token=token) as client:
        with pytest.raises(AgentError):
            await client.call("agents.resume", {"agent": "flaky-bot"})
    async with operator(runtime) as console:
        listed = await console.call("agents.paused", {})
        assert [p["agent"] for p in listed] == ["flaky-bot"] and listed[0]["reason"] == why
    resumed = await _cli(runtime, "agents", "resume", "flaky-bot")
    assert resumed.returncode == 0, resumed.stderr
    assert "flaky-bot resumed" in resumed.stdout
    assert pauses.paused(runtime.ledger) == []
    assert (await settled(runtime, "flaky-bot", {"query": "wind"})).state == State.succeeded
    kinds = [
        row[0]
        for row in runtime.ledger.db.execute(
            "SELECT type FROM events WHERE type IN ('agent_paused', 'agent_resumed') ORDER BY seq"
        )
    ]
    assert kinds == ["agent_paused", "agent_resumed"]
    report = audit.verify(runtime.ledger.path, url=runtime.ledger.url)
    assert report.intact, (report.broken, report.problems)
    again = await _cli(runtime, "agents", "resume", "flaky-bot")
    assert again.returncode == 2 and "agent flaky-bot is not paused" in again.stderr


async def test_a_success_ends_the_run_of_failures(start):
    runtime = await start(BREAKER)
    url = {"url": "https://a.example/"}
    for _ in range(4):
        await settled(runtime, "mixed-bot", url, **SCRAPE)
    assert (await settled(runtime, "mixed-bot", {"query": "ok"})).state == State.succeeded
    for _ in range(4):
        await settled(runtime, "mixed-bot", url, **SCRAPE)
    assert pauses.paused(runtime.ledger) == []


async def test_a_restart_keeps_the_counts_and_the_pauses(start):
    text = (
        BREAKER + RATE.replace("max_requests: 100", "max_requests: 8") + REPEATS.replace(AUTO, "")
    )
    runtime = await start(text)
    for _ in range(3):
        assert (await settled(runtime, "loop-bot", {"query": "same"})).state == State.succeeded
    for n in range(5):
        await settled(runtime, "flaky-bot", {"url": f"https://b.example/{n}"}, **SCRAPE)
    await runtime.stop()

    runtime = await start(None)
    repeat = await settled(runtime, "loop-bot", {"query": "same"})
    assert repeat.state == State.pending and "4th identical call" in repeat.verdict.summary
    # loop-bot has 4 requests in the window that went on, so 4 more pass and the 9th is denied.
    for n in range(4):
        assert (await settled(runtime, "loop-bot", {"query": f"new {n}"})).state != State.denied
    assert (await settled(runtime, "loop-bot", {"query": "ninth"})).state == State.denied
    paused = await settled(runtime, "flaky-bot", {"query": "solar"})
    assert paused.state == State.pending
    assert "flaky-bot's rules are paused" in paused.verdict.summary


async def _cli(runtime: Runtime, *args: str) -> subprocess.CompletedProcess[str]:
    """The command as the operator runs it, typing the passphrase the test set (in a thread:
    the console it speaks to runs on this test's loop)."""
    return await operator_cli(runtime.paths.home, *args)


@pytest.mark.engines("sqlite")  # the CLI reads the sandbox's ledger from its file
async def test_explain_names_the_brake_and_its_count_and_simulate_replays_the_brakes(
    start, tmp_path
):
    runtime = await start(AUTO)
    for _ in range(3):
        assert (await settled(runtime, "loop-bot", {"query": "same"})).state == State.succeeded
    for n in range(2):
        scrape_inputs = {"url": f"https://c.example/{n}"}
        assert (
            await settled(runtime, "scrape-bot", scrape_inputs, **SCRAPE)
        ).state == State.pending
    draft = tmp_path / "draft.md"
    draft.write_text(REPEATS)
    request = json.dumps(
        {"agent": "loop-bot", "endpoint_id": "ep_websearch_basic", "inputs": {"query": "same"}}
    )
    explained = await _cli(runtime, "policy", "explain", str(draft), "--request", request)
    assert explained.returncode == 0, explained.stderr
    assert "verdict: ask" in explained.stdout
    assert "ask          repeats (draft.md:" in explained.stdout
    assert "4th identical call in" in explained.stdout
    # A draft allowing one identical call: the 2nd and 3rd would have asked the operator.
    draft.write_text(
        REPEATS.replace("max_same: 3", "max_same: 1")
        + BREAKER.replace(AUTO, "").replace("failures: 5", "failures: 2")
    )
    simulated = await _cli(runtime, "policy", "simulate", str(draft), "--since", "1d")
    assert simulated.returncode == 0, simulated.stderr
    assert "now asking operator:   2" in simulated.stdout
    assert "2nd identical call" in simulated.stdout and "3rd identical call" in simulated.stdout
    assert "agents the circuit breaker would have paused" in simulated.stdout
    assert (
        "scrape-bot at " in simulated.stdout
        and "2 requests in a row denied or failed within 15 minutes" in simulated.stdout
    )


async def test_a_new_version_keeps_the_counts_and_cites_its_own_lines(start):
    runtime = await start(REPEATS)
    for _ in range(3):
        assert (await settled(runtime, "loop-bot", {"query": "same"})).state == State.succeeded
    moved = "# SKILLS.md\n\nWhy we brake.\n\nMore prose.\n" + REPEATS
    (runtime.paths.home / "SKILLS.md").write_text(moved)
    assert runtime.policy.reload().state == "active"
    fourth = await settled(runtime, "loop-bot", {"query": "same"})
    assert fourth.state == State.pending
    line = 1 + moved.splitlines().index("repeats:")
    assert fourth.verdict.summary.startswith(f"the operator decides: repeats (SKILLS.md:{line}):")
    assert "4th identical call" in fourth.verdict.summary
    # Other brakes: counted again from the ledger, the four calls included.
    (runtime.paths.home / "SKILLS.md").write_text(moved.replace("max_same: 3", "max_same: 4"))
    assert runtime.policy.reload().state == "active"
    fifth = await settled(runtime, "loop-bot", {"query": "same"})
    assert fifth.state == State.pending and "5th identical call" in fifth.verdict.summary
