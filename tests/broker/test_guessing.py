"""Guessing is slow and cheap to record: a wrong passphrase or operator token makes its peer wait
before the next try is checked (1 s, doubling per failure, at most a minute), tries made while it
waits are refused unchecked (so parallel connections buy nothing), nothing sleeps (the broker and
other peers go on), and the audit chain keeps each burst of refusals as its first refusal and one
event with the count of the rest. The clock is the test's: no real time passes for a wait."""

from __future__ import annotations

import asyncio
import json
import os
from typing import Any

import pytest
from helpers import SEARCH, FakeClock, eventually, operator
from operator_support import PASSPHRASE, refused_reasons, set_passphrase

from svc_console.agent import AgentError, AsyncAgent
from svc_console.broker import BrokerConfig, errors
from svc_console.broker.backoff import Backoff
from svc_console.broker.deciders import Peer
from svc_console.broker.params import Credentials
from svc_console.config.agents import AgentSettings
from svc_console.config.operator_accounts import OperatorAccounts
from svc_console.core.states import State
from svc_console.runtime import Runtime

OPEN = AgentSettings(enrolment="open")


def test_the_wait_doubles_per_failure_up_to_a_minute_and_a_success_ends_it():
    clock = FakeClock()
    backoff = Backoff(clock)
    assert backoff.retry_in(0) == 0
    waits = [backoff.failed(0) for _ in range(9)]
    assert waits == [1, 2, 4, 8, 16, 32, 60, 60, 60]
    assert backoff.retry_in(0) == 60
    clock.advance(59)
    assert backoff.retry_in(0) == 1
    assert backoff.retry_in(1000) == 0  # another peer waits for nothing
    backoff.succeeded(0)
    assert backoff.retry_in(0) == 0 and backoff.failed(0) == 1  # counted from the start again


def test_failures_long_past_are_forgotten():
    clock = FakeClock()
    backoff = Backoff(clock)
    for _ in range(5):
        backoff.failed(0)
    clock.advance(backoff.forget_s)
    assert backoff.retry_in(0) == 0 and backoff.failed(0) == 1


@pytest.fixture
async def console(paths, sandbox, keep_started, clock) -> Runtime:
    """Agents of this user accepted, a passphrase set, a pending request, the test's clock."""
    set_passphrase(paths.home)
    runtime = Runtime(
        paths=paths,
        sandbox=sandbox,
        config=BrokerConfig(),
        agent_settings=OPEN,
        broker_options={"clock": clock},
    )
    return await keep_started(runtime)


async def pending_request(runtime: Runtime) -> str:
    async with AsyncAgent("bot", runtime.paths.socket) as agent:
        ticket = await agent.submit(**SEARCH, purpose="guess my passphrase")
    await eventually(lambda: runtime.broker.get(ticket["request_id"]).state == State.pending)
    return ticket["request_id"]


async def attempt(line: Any, request_id: str, passphrase: str) -> str:
    """One approval with `passphrase`: its refusal's reason, or "approved"."""
    try:
        said = await line.call(
            "approvals.approve", {"request_id": request_id, "passphrase": passphrase}
        )
    except AgentError as refused:
        return refused.reason
    return said["state"]


def waiting(runtime: Runtime) -> float:
    return runtime.operator_socket.methods.proof.backoff.retry_in(os.getuid())


async def test_after_a_wrong_passphrase_even_the_right_one_waits_its_turn(console, clock):
    request_id = await pending_request(console)
    async with operator(console) as line:
        assert await attempt(line, request_id, "a first guess") == "passphrase_required"
        assert waiting(console) == 1
        with pytest.raises(AgentError) as early:
            await line.call(
                "approvals.approve", {"request_id": request_id, "passphrase": PASSPHRASE}
            )
        assert early.value.reason == "too_many_tries"
        assert early.value.data["retry_in_s"] == 1 and "try again in 1 s" in early.value.message
        assert console.broker.get(request_id).state == State.pending
        clock.advance(1)
        assert await attempt(line, request_id, PASSPHRASE) == "approved"
    assert waiting(console) == 0  # a success ends the count


async def test_a_guessing_loop_gets_a_try_a_minute_and_leaves_a_few_events(console, clock):
    request_id = await pending_request(console)
    refusal_events = (
        "SELECT count(*) FROM events WHERE type IN ('decision_refused', 'decisions_refused')"
    )
    before = console.ledger.db.execute(refusal_events).fetchone()[0]
    checked, refused_unchecked, start = 0, 0, clock()
    async with operator(console) as line:
        # As fast as the console lets it, for an hour of the console's clock.
        while clock() - start < 3600:
            reason = await attempt(line, request_id, f"guess {checked}")
            if reason == "too_many_tries":
                refused_unchecked += 1
                clock.advance(waiting(console))
            else:
                assert reason == "passphrase_required"
                checked += 1
                assert await attempt(line, request_id, "at once again") == "too_many_tries"
                refused_unchecked += 1
    # 1 + 2 + 4 + ... + 32 s for the first six, then one a minute.
    assert checked == 6 + (3600 - 63) // 60 + 1
    assert console.broker.get(request_id).decision is None  # it expired meanwhile, undecided
    reasons = refused_reasons(console)
    assert reasons == {
        "wrong operator passphrase": checked,
        "a try while backing off": refused_unchecked,
    }
    # The first refusal whole, then one event per ten minutes of the burst, and its end (the
    # request's own expiry, whenever upkeep records it, is no refusal's event).
    added = console.ledger.db.execute(refusal_events).fetchone()[0] - before
    assert added <= 1 + 3600 // 600 + 1
    summaries = [
        json.loads(data)
        for (data,) in console.ledger.db.execute(
            "SELECT data FROM events WHERE type = 'decisions_refused'"
        )
    ]
    assert sum(s["count"] for s in summaries) == checked + refused_unchecked - 1
    assert all(s["requests"] == [request_id] for s in summaries)
    assert all(s["evidence"]["uid"] == os.getuid() for s in summaries)


async def test_tries_made_together_are_checked_one_at_a_time(console):
    request_id = await pending_request(console)
    lines = [operator(console) for _ in range(12)]
    opened = [await line.__aenter__() for line in lines]
    try:
        reasons = await asyncio.gather(
            *(attempt(line, request_id, f"parallel guess {n}") for n, line in enumerate(opened))
        )
        # Meanwhile the broker answers everyone else: the queue, and an agent.
        listed = await opened[0].call("approvals.list", {})
        assert [r["id"] for r in listed] == [request_id]
        await pending_request(console)
    finally:
        for line in lines:
            await line.__aexit__(None, None, None)
    assert sorted(reasons) == ["passphrase_required"] + ["too_many_tries"] * 11
    assert waiting(console) == 1  # one check was made, one failure counted


async def test_another_peer_does_not_wait_for_a_guesser(console):
    proof = console.operator_socket.methods.proof
    guesser = Peer(pid=os.getpid(), uid=4242, gid=4242)
    operator_peer = Peer(pid=os.getpid(), uid=os.getuid(), gid=os.getgid())
    for _ in range(3):
        with pytest.raises(errors.NotAuthorised):
            await proof.decider(guesser, None, Credentials(passphrase="guess"))
    assert proof.backoff.retry_in(4242) > 0
    decider = await proof.decider(operator_peer, None, Credentials(passphrase=PASSPHRASE))
    assert decider.uid == os.getuid()


async def test_a_wrong_operator_token_waits_as_a_wrong_passphrase_does(
    paths, sandbox, keep_started, clock
):
    OperatorAccounts(paths.operator_accounts).add("alice")
    runtime = await keep_started(
        Runtime(
            paths=paths,
            sandbox=sandbox,
            agent_settings=OPEN,
            broker_options={"clock": clock},
        )
    )
    request_id = await pending_request(runtime)
    async with operator(runtime) as line:
        for expected in ("operator_required", "too_many_tries"):
            with pytest.raises(AgentError) as refused:
                await line.call(
                    "approvals.approve",
                    {"request_id": request_id, "operator": "alice", "token": "svcop_guess"},
                )
            assert refused.value.reason == expected
    assert waiting(runtime) == 1
