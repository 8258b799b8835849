"""Decisions that stand for a while, end to end (sandbox, sockets, SQLite ledger): a grant approves
the same agent's calls to the same endpoint within its per-call amount and its total, and stops
when its time is up, when it is revoked or when the console stops; concurrent requests cannot pass
its total; a denying grant denies; bad grants are refused with nothing decided; grants and what
they approved survive a restart and are evidence in the audit chain."""

from __future__ import annotations

import asyncio
import subprocess
from collections.abc import Awaitable, Callable
from decimal import Decimal

import pytest
from helpers import FakeClock, agent_token, eventually, operator
from operator_support import operator_cli, set_passphrase

from svc_console.agent import AgentError, AsyncAgent
from svc_console.broker.errors import InvalidParams
from svc_console.broker.params import ApproveParams, DenyParams
from svc_console.core.states import FINAL, State
from svc_console.ledger import audit, grants
from svc_console.runtime import Runtime

SEARCH = {"endpoint_id": "ep_websearch_basic", "purpose": "research"}  # 0.01 USDC a call
FX = {"endpoint_id": "ep_fx_rates", "purpose": "rates", "inputs": {"symbol": "EURUSD"}}


@pytest.fixture
def start(paths, make_runtime, keep_started) -> Callable[..., Awaitable[Runtime]]:
    # Agents of the tests' own user are accepted: the operator's commands need the passphrase.
    set_passphrase(paths.home)
    return lambda **options: keep_started(make_runtime(**options))


async def settled(
    runtime: Runtime, agent: str = "bot", query: str = "solar", verified: bool = True, **other
) -> object:
    """Submit as registered `agent` (a grant is for one agent: every unverified one counts as
    one), or as an agent that only gives that name, and wait until the request no longer moves
    without the operator."""
    params = {**SEARCH, "inputs": {"query": query}, **other}
    token = agent_token(runtime.paths, agent) if verified else None
    async with AsyncAgent(agent, runtime.paths.socket, token=token) as client:
        ticket = await client.submit(**params)
    return await eventually(
        lambda: (
            (r := runtime.broker.get(ticket["request_id"])).state in (*FINAL, State.pending) and r
        )
    )


async def approve_for(runtime: Runtime, lasting: str, total: str, query: str = "first") -> object:
    first = await settled(runtime, query=query)
    assert first.state == State.pending
    await runtime.broker.approve(
        ApproveParams(request_id=first.id, grant_for=lasting, grant_total=Decimal(total))
    )
    return first


async def test_a_grant_approves_calls_like_the_one_approved_up_to_its_total(start):
    runtime = await start()
    first = await approve_for(runtime, "1h", "0.03")
    done = [await settled(runtime, query=f"q{n}") for n in range(4)]
    assert [r.state for r in done[:3]] == [State.succeeded] * 3
    approved = done[0]
    assert approved.decision.by == "grant 1"
    assert approved.verdict.summary.startswith("approved by grant 1: the operator's grant (tui)")
    assert "0.00 of 0.03 USDC approved before this call" in approved.verdict.summary
    assert done[3].state == State.pending, done[3].verdict  # the fourth would pass the total
    note = next(c for c in done[3].verdict.citations if c.rule == "grant 1")
    assert note.effect == "note" and note.reason == (
        "has approved 0.03 of its 0.03 USDC: this call would pass it"
    )
    row = grants.get(runtime.ledger, 1)
    assert row.used_usdc == 30_000 and row.request_id == first.id
    # Another agent, or another endpoint, is not covered.
    assert (await settled(runtime, agent="other-bot")).state == State.pending
    assert (await settled(runtime, **FX)).state == State.pending


async def test_a_grant_made_for_an_unverified_agent_is_for_every_unverified_one(start):
    runtime = await start()
    first = await settled(runtime, agent="made-up-1", query="first", verified=False)
    await runtime.broker.approve(
        ApproveParams(request_id=first.id, grant_for="1h", grant_total=Decimal("1"))
    )
    assert grants.get(runtime.ledger, 1).agent == "(unverified)"
    other = await settled(runtime, agent="made-up-2", query="q1", verified=False)
    assert other.state == State.succeeded and other.decision.by == "grant 1"
    # A registered agent has grants of its own only.
    assert (await settled(runtime, query="q2")).state == State.pending


async def test_a_grant_expires_and_stops_approving(start):
    clock = FakeClock()
    runtime = await start(clock=clock, pending_ttl_s=86_400)
    await approve_for(runtime, "15m", "1")
    assert (await settled(runtime, query="inside")).state == State.succeeded
    clock.advance(15 * 60 + 1)
    late = await settled(runtime, query="after")
    assert late.state == State.pending
    assert not any(c.rule == "grant 1" for c in late.verdict.citations)
    async with operator(runtime) as console:
        assert await console.call("grants.list", {}) == []
        ended = await console.call("grants.list", {"all": True})
    assert [g["id"] for g in ended] == [1]


async def test_concurrent_requests_cannot_pass_a_grants_total_together(start):
    runtime = await start()
    await approve_for(runtime, "1h", "0.05")

    async def one(n: int) -> str:
        token = agent_token(runtime.paths, "bot")
        async with AsyncAgent("bot", runtime.paths.socket, token=token) as client:
            ticket = await client.submit(**{**SEARCH, "inputs": {"query": f"burst {n}"}})
        return ticket["request_id"]

    ids = await asyncio.gather(*(one(n) for n in range(20)))
    states = await eventually(
        lambda: (
            (s := [runtime.broker.get(i).state for i in ids])
            and all(x in (State.pending, State.succeeded) for x in s)
            and s
        ),
        timeout=30,
    )
    assert states.count(State.succeeded) == 5 and states.count(State.pending) == 15
    assert grants.get(runtime.ledger, 1).used_usdc == 50_000


async def test_a_denying_grant_denies_calls_like_the_one_denied(start):
    runtime = await start()
    first = await settled(runtime, query="first")
    await runtime.broker.deny(DenyParams(request_id=first.id, reason="not now", grant_for="1h"))
    again = await settled(runtime, query="again")
    assert again.state == State.denied
    assert again.reason.startswith("denied by grant 1: denied by the operator (tui), until ")
    assert (await settled(runtime, **FX)).state == State.pending


async def test_revoking_ends_a_grant_and_both_are_in_the_audit_chain(start):
    runtime = await start()
    first = await approve_for(runtime, "1h", "1")
    assert (await settled(runtime, query="covered")).state == State.succeeded
    listed = await _cli(runtime, "grants", "list")
    assert listed.returncode == 0, listed.stderr
    assert "approve up to 0.01 USDC a call, 0.01 of 1.00 used  bot → ep_websearch_basic" in (
        listed.stdout
    )
    revoked = await _cli(runtime, "grants", "revoke", "1")
    assert revoked.returncode == 0 and "grant 1 revoked" in revoked.stdout
    assert (await settled(runtime, query="after")).state == State.pending
    again = await _cli(runtime, "grants", "revoke", "1")
    assert again.returncode == 2 and "no grant 1 in force" in again.stderr
    kinds = [e["type"] for e in runtime.ledger.events(first.id)]
    assert "grant_made" in kinds and "grant_ended" in kinds
    report = audit.verify(runtime.ledger.path, url=runtime.ledger.url)
    assert report.intact, (report.broken, report.problems)


async def test_a_session_grant_ends_with_the_console_and_a_timed_one_survives_it(start):
    runtime = await start()
    await approve_for(runtime, "session", "1", query="a")
    second = await settled(runtime, agent="bot2", query="b")
    await runtime.broker.approve(
        ApproveParams(request_id=second.id, grant_for="1h", grant_total=Decimal("0.02")),
    )
    assert second.state == State.pending
    await eventually(lambda: runtime.broker.get(second.id).state == State.succeeded)
    assert (await settled(runtime, query="c")).state == State.succeeded  # by grant 1
    await runtime.stop()

    runtime = await start()
    assert [g.id for g in grants.in_force(runtime.ledger, runtime.broker.clock())] == [2]
    assert grants.get(runtime.ledger, 1).ended_reason == "the console stopped"
    assert (await settled(runtime, query="c2")).state == State.pending  # grant 1 has ended
    by_two = await settled(runtime, agent="bot2", query="d")
    assert by_two.state == State.succeeded and by_two.decision.by == "grant 2"
    assert (await settled(runtime, agent="bot2", query="e")).state == State.succeeded
    assert (await settled(runtime, agent="bot2", query="f")).state == State.pending  # full


@pytest.mark.parametrize(
    ("grant_for", "total", "message"),
    [
        ("1h", None, "a grant that approves needs a total (--total USDC)"),
        ("1h", "0.005", "a total of 0.005 USDC is below one call's 0.01 USDC"),
        ("forever", "1", "--for must be a duration such as 15m, 1h or 2d, or session"),
        ("5s", "1", "--for must be a duration such as 15m, 1h or 2d, or session"),
    ],
)
async def test_a_bad_grant_is_refused_and_nothing_is_decided(start, grant_for, total, message):
    runtime = await start()
    first = await settled(runtime)
    params = ApproveParams(
        request_id=first.id,
        grant_for=grant_for,
        grant_total=Decimal(total) if total else None,
    )
    with pytest.raises(InvalidParams) as refused:
        await runtime.broker.approve(params)
    assert message in str(refused.value)
    assert runtime.broker.get(first.id).state == State.pending
    assert runtime.broker.get(first.id).decision is None
    assert grants.recent(runtime.ledger) == []


async def test_the_cli_makes_a_grant_with_the_approval_and_refuses_a_total_alone(start):
    runtime = await start()
    first = await settled(runtime)
    alone = await _cli(runtime, "approvals", "approve", first.id, "--total", "1")
    assert alone.returncode == 2 and "--total goes with --for" in alone.stderr
    assert runtime.broker.get(first.id).state == State.pending
    made = await _cli(runtime, "approvals", "approve", first.id, "--for", "1h", "--total", "0.5")
    assert made.returncode == 0, made.stderr
    assert "and calls like it for 1h, up to 0.5 USDC in all" in made.stdout
    assert grants.get(runtime.ledger, 1).total_usdc == 500_000
    token = agent_token(runtime.paths, "bot")
    async with AsyncAgent("bot", runtime.paths.socket, token=token) as client:
        with pytest.raises(AgentError, match="served only on the operator socket"):
            await client.call("grants.revoke", {"grant_id": 1})  # an agent cannot revoke grants


async def _cli(runtime: Runtime, *args: str) -> subprocess.CompletedProcess[str]:
    """The command as the operator runs it, typing the passphrase the test set (in a thread:
    the console it speaks to runs on this test's loop)."""
    return await operator_cli(runtime.paths.home, *args)
