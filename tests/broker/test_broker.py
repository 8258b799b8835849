"""The approval loop end to end: a real Unix socket, a real SQLite ledger and the sandbox over
real HTTP. Agents speak through `svc_console.agent`, exactly as real agents do."""

from __future__ import annotations

import asyncio
import json
import os
import stat
from decimal import Decimal

import pytest
from helpers import SEARCH, eventually, submit

from svc_console.agent import AgentError, AsyncAgent
from svc_console.broker.params import ApproveParams, DenyParams
from svc_console.core.states import State


async def pending(runtime, request_id):
    broker = runtime.broker
    return await eventually(lambda: broker.get(request_id).state == State.pending and True)


def event_seq(runtime, request_id, kind):
    rows = runtime.ledger.events(request_id)
    return next(row["seq"] for row in rows if row["type"] == kind)


async def test_submit_approve_execute_returns_upstream_result(runtime, sandbox):
    async with AsyncAgent("research-bot", runtime.paths.socket) as agent:
        ticket = await agent.submit(**SEARCH, purpose="weekly note")
        assert ticket["state"] == "received"
        await pending(runtime, ticket["request_id"])
        request = runtime.broker.get(ticket["request_id"])
        assert request.endpoint.name == "Web Search"
        assert request.estimate.amount_usdc == Decimal("0.01")
        assert request.estimate.chain == "base" and request.estimate.protocol == "x402"
        assert request.skill and "Web Search" in request.skill
        assert any(flag.code == "first_use" for flag in request.risk)

        await runtime.broker.approve(ApproveParams(request_id=ticket["request_id"]))
        done = await agent.wait_for_outcome(ticket["request_id"], timeout_s=10)

    assert done["state"] == "succeeded"
    assert done["decision"]["approved"] is True and done["decision"]["by"] == "tui"
    evidence = done["decision"]["evidence"]
    assert evidence["channel"] == "tui" and evidence["pid"] == os.getpid()
    assert evidence["uid"] == os.getuid() and evidence["process"]
    assert done["outcome"]["charged_usdc"] == "0.01"
    assert json.loads(done["outcome"]["body"])  # the provider's JSON, verbatim
    # Invariant 1: the decision was committed before the execution started.
    assert event_seq(runtime, ticket["request_id"], "approved") < event_seq(
        runtime, ticket["request_id"], "executing"
    )
    decision_at = runtime.ledger.db.execute("SELECT at FROM decisions").fetchone()[0]
    started_at = runtime.ledger.db.execute("SELECT started_at FROM executions").fetchone()[0]
    assert decision_at <= started_at
    assert sandbox.state.executions_count() == 1


async def test_a_wait_for_a_change_is_answered_at_once_when_the_state_seen_is_past(runtime):
    """`executing` can begin and end between two waits of a client following a request: a
    client that says what it last saw is answered as soon as the request is past it, and the
    start of an execution is a change watchers hear while it lasts."""
    ticket = await submit(runtime)
    request_id = ticket["request_id"]
    await pending(runtime, request_id)
    async with AsyncAgent("bot", runtime.paths.socket) as agent:
        asked = {"request_id": request_id, "until": "change", "timeout_s": 3600}
        async with asyncio.timeout(20):  # a bound for a hang; the answer is immediate
            answered = await agent.call("spend.wait", {**asked, "seen": "received"})
        assert answered["state"] == "pending"
        heard: list[str] = []
        runtime.broker.subscribe(lambda request: heard.append(request.state.value))
        following = asyncio.create_task(agent.call("spend.wait", {**asked, "seen": "pending"}))
        await runtime.broker.approve(ApproveParams(request_id=request_id))
        # Whenever the wait reached the broker, before the approval or after: past pending.
        assert (await following)["state"] in ("approved", "executing", "succeeded")
        # The ledger holds the new state a moment before listeners hear of it: wait for the hearing.
        await eventually(lambda: "succeeded" in heard)
    assert heard[:3] == ["approved", "executing", "succeeded"]


async def test_deny_with_reason_spends_nothing(runtime, sandbox):
    async with AsyncAgent("bot", runtime.paths.socket) as agent:
        ticket = await agent.submit(**SEARCH, purpose="p")
        await pending(runtime, ticket["request_id"])
        await runtime.broker.deny(
            DenyParams(request_id=ticket["request_id"], reason="not in this quarter's budget")
        )
        done = await agent.wait(ticket["request_id"], timeout_s=5)
    assert done["state"] == "denied"
    assert done["reason"] == "not in this quarter's budget"
    assert done["decision"]["approved"] is False
    assert sandbox.state.executions_count() == 0


async def test_expiry_is_its_own_state_not_a_deny(make_runtime, sandbox):
    runtime = make_runtime(pending_ttl_s=0.3, expiry_tick_s=0.05)
    async with runtime, AsyncAgent("bot", runtime.paths.socket) as agent:
        ticket = await agent.submit(**SEARCH, purpose="p")
        done = await agent.wait_for_outcome(ticket["request_id"], timeout_s=10)
    assert done["state"] == "expired"
    assert done["decision"] is None
    assert "lifetime" in done["reason"]
    assert sandbox.state.executions_count() == 0


async def test_cancel_pending_then_cancel_again_is_refused(runtime):
    async with AsyncAgent("bot", runtime.paths.socket) as agent:
        ticket = await agent.submit(**SEARCH, purpose="p")
        await pending(runtime, ticket["request_id"])
        cancelled = await agent.cancel(ticket["request_id"])
        assert cancelled["state"] == "cancelled"
        with pytest.raises(AgentError) as refused:
            await agent.cancel(ticket["request_id"])
    assert refused.value.reason == "wrong_state"
    with pytest.raises(Exception, match="not pending"):
        await runtime.broker.approve(ApproveParams(request_id=ticket["request_id"]))


async def test_unfunded_wallet_waits_for_funds(runtime, sandbox):
    sandbox.state.set_balance(Decimal("0"))
    ticket = await submit(runtime)
    await pending(runtime, ticket["request_id"])
    request = runtime.broker.get(ticket["request_id"])
    assert any(flag.code == "low_balance" for flag in request.risk)
    await runtime.broker.approve(ApproveParams(request_id=ticket["request_id"]))
    request = await eventually(
        lambda: (r := runtime.broker.get(ticket["request_id"])).state == State.awaiting_funds and r
    )
    assert request.funding_url and request.funding_url.endswith("/fund/" + sandbox.state.username)
    assert "unfunded" in request.reason
    assert sandbox.state.executions_count() == 0


async def test_unknown_endpoint_and_endpoint_outside_registry_are_rejected(runtime, sandbox):
    unknown = await submit(runtime, endpoint_id="ep_does_not_exist")
    sandbox.state.remove_from_registry("ep_fx_rates")
    removed = await submit(runtime, endpoint_id="ep_fx_rates", inputs={"symbol": "EURUSD"})
    for ticket in (unknown, removed):
        request = await eventually(
            lambda t=ticket: (
                (r := runtime.broker.get(t["request_id"])).state == State.rejected and r
            )
        )
        assert request.reason
    assert "ep_does_not_exist" in runtime.broker.get(unknown["request_id"]).reason
    assert "registry" in runtime.broker.get(removed["request_id"]).reason


async def test_invalid_inputs_are_rejected_naming_the_field(runtime):
    ticket = await submit(runtime, inputs={"max_results": 3})
    request = await eventually(
        lambda: (r := runtime.broker.get(ticket["request_id"])).state == State.rejected and r
    )
    assert "query" in request.reason


async def test_same_idempotency_key_gives_one_request(runtime):
    first = await submit(runtime, idempotency_key="weekly-42")
    again = await submit(runtime, idempotency_key="weekly-42")
    other_agent = await submit(runtime, agent_name="other", idempotency_key="weekly-42")
    assert first["request_id"] == again["request_id"]
    assert other_agent["request_id"] != first["request_id"]
    count = runtime.ledger.db.execute("SELECT count(*) FROM requests").fetchone()[0]
    assert count == 2


async def test_repriced_challenge_pays_nothing_and_returns_to_the_operator(runtime, sandbox):
    ticket = await submit(runtime)
    await pending(runtime, ticket["request_id"])
    sandbox.state.reprice_factor = Decimal(3)
    await runtime.broker.approve(ApproveParams(request_id=ticket["request_id"]))
    request = await eventually(
        lambda: (
            (r := runtime.broker.get(ticket["request_id"])).state == State.pending
            and r.reason
            and r
        )
    )
    assert "0.03" in request.reason and "nothing was paid" in request.reason
    assert request.estimate.amount_usdc == Decimal("0.03")
    assert sandbox.state.executions_count() == 0
    await runtime.ledger.committed()  # the state is seen when written, its event on commit
    events = [row["type"] for row in runtime.ledger.events(ticket["request_id"])]
    assert events[-3:] == ["executing", "repriced", "pending"]


async def test_restart_turns_in_flight_execution_into_unknown(make_runtime, sandbox):
    runtime = make_runtime()
    async with runtime:
        ticket = await submit(runtime)
        await pending(runtime, ticket["request_id"])
        # Commit a decision and an in-flight execution, as if the process died mid-call.
        from svc_console.core.models import Decision

        decision = Decision(approved=True, by="operator", at=0, ceiling_usdc=Decimal("0.01"))
        decision_id = runtime.ledger.decide(ticket["request_id"], decision, State.approved)
        runtime.ledger.start_execution(ticket["request_id"], decision_id, 1, "k-1", at=1)
        pending_ticket = await submit(runtime, inputs={"query": "still waiting"})
        await pending(runtime, pending_ticket["request_id"])
    restarted = make_runtime()
    async with restarted:
        request = restarted.broker.get(ticket["request_id"])
        assert request.state == State.unknown
        assert "reconcile" in request.reason
        # The pending request survived and an agent can still wait on it by id.
        async with AsyncAgent("bot", restarted.paths.socket) as agent:
            waited = await agent.wait(pending_ticket["request_id"], timeout_s=0.1)
        assert waited["state"] == "pending"
    assert sandbox.state.executions_count() == 0


async def test_ledger_and_socket_are_owner_only(runtime):
    socket_mode = stat.S_IMODE(os.stat(runtime.paths.socket).st_mode)
    assert socket_mode == 0o600
    assert stat.S_IMODE(os.stat(runtime.paths.home).st_mode) == 0o700
    for path in runtime.paths.home.iterdir():
        if path.is_file():
            assert stat.S_IMODE(path.stat().st_mode) & 0o077 == 0, path


async def test_a_second_broker_on_the_same_home_is_refused(runtime, make_runtime):
    from svc_console.ledger import LedgerLocked

    with pytest.raises(LedgerLocked):
        await make_runtime().start()
    # The first one still answers.
    ticket = await submit(runtime)
    assert ticket["request_id"]


async def test_concurrent_waits_all_wake(runtime):
    broker = runtime.broker
    async with AsyncAgent("bot", runtime.paths.socket) as agent:
        ticket = await agent.submit(**SEARCH, purpose="p")
        request_id = ticket["request_id"]
        await pending(runtime, request_id)
        waits = [asyncio.create_task(agent.wait(request_id, timeout_s=60)) for _ in range(5)]
        # All five are waiting in the broker before the request changes.
        waiting = await eventually(
            lambda: len(found := set(broker._waiters.get(request_id, ()))) == 5 and found
        )
        await broker.deny(DenyParams(request_id=request_id, reason="no"))
        # Woken by the denial itself, not let go by their timeout.
        assert all(waiter.done() and not waiter.cancelled() for waiter in waiting)
        results = await asyncio.gather(*waits)
    assert {r["state"] for r in results} == {"denied"}


async def test_mpp_endpoint_settles_on_tempo(runtime, sandbox):
    ticket = await submit(runtime, endpoint_id="ep_fx_rates", inputs={"symbol": "EURUSD"})
    await pending(runtime, ticket["request_id"])
    await runtime.broker.approve(ApproveParams(request_id=ticket["request_id"]))
    async with AsyncAgent("bot", runtime.paths.socket) as agent:
        done = await agent.wait_for_outcome(ticket["request_id"], timeout_s=10)
    assert done["state"] == "succeeded"
    assert done["outcome"]["chain"] == "tempo"
    assert done["outcome"]["receipt"]["protocol"] == "mpp"
    assert done["outcome"]["charged_usdc"] == "0.05"


async def test_price_above_the_agents_own_max_is_rejected_before_the_operator(runtime):
    ticket = await submit(runtime, max_usdc="0.005")
    request = await eventually(
        lambda: (r := runtime.broker.get(ticket["request_id"])).state == State.rejected and r
    )
    assert "max_usdc" in request.reason and "0.01" in request.reason


async def test_dynamic_price_is_approved_up_to_the_agents_max(runtime, sandbox):
    ticket = await submit(
        runtime, endpoint_id="ep_scrape_page", inputs={"url": "https://a.example"}, max_usdc="0.08"
    )
    await pending(runtime, ticket["request_id"])
    await runtime.broker.approve(ApproveParams(request_id=ticket["request_id"]))
    request = await eventually(
        lambda: (
            (r := runtime.broker.get(ticket["request_id"])).state
            in (State.succeeded, State.pending)
            and r.decision
            and r
        )
    )
    assert request.decision.ceiling_usdc == Decimal("0.08")
    for charge in sandbox.state.charges:
        assert charge.price_usdc <= Decimal("0.08")


async def test_no_credential_reaches_the_ledger_or_the_log(make_runtime, sandbox, paths):
    import logging

    from svc_console.config import logs

    log_file = logs.configure(paths.logs)
    runtime = make_runtime()
    try:
        await _approve_one_and_run_dry(runtime, sandbox)
    finally:
        for handler in list(logging.getLogger().handlers):
            if getattr(handler, "baseFilename", None) == str(log_file):
                logging.getLogger().removeHandler(handler)
                handler.close()
    assert "broker started" in log_file.read_text()
    secrets = [sandbox.state.api_key, sandbox.state.api_token]
    for path in [*paths.home.rglob("*")]:
        if path.is_file() and path.name != "operator.token":
            data = path.read_bytes()
            for secret in secrets:
                assert secret.encode() not in data, path


async def _approve_one_and_run_dry(runtime, sandbox):
    async with runtime:
        ticket = await submit(runtime)
        await pending(runtime, ticket["request_id"])
        await runtime.broker.approve(ApproveParams(request_id=ticket["request_id"]))
        async with AsyncAgent("bot", runtime.paths.socket) as agent:
            await agent.wait_for_outcome(ticket["request_id"], timeout_s=10)
        sandbox.state.set_balance(Decimal(0))
        unfunded = await submit(runtime, inputs={"query": "again"})
        await pending(runtime, unfunded["request_id"])
        await runtime.broker.approve(ApproveParams(request_id=unfunded["request_id"]))
        await eventually(
            lambda: runtime.broker.get(unfunded["request_id"]).state == State.awaiting_funds
        )


async def approved_until(runtime, request_id, *states):
    await runtime.broker.approve(ApproveParams(request_id=request_id))
    return await eventually(
        lambda: (
            (r := runtime.broker.get(request_id)).state in states
            and r.decision
            and r.decision.approved
            and runtime.ledger.in_flight_execution(request_id) is None
            and r
        )
    )


async def test_a_request_repriced_twice_can_still_be_approved_and_paid_once(runtime, sandbox):
    ticket = await submit(runtime)
    request_id = ticket["request_id"]
    await pending(runtime, request_id)
    for factor in (3, 5):  # each approval covers the last price asked, then the price rises again
        sandbox.state.reprice_factor = Decimal(factor)
        repriced = await approved_until(runtime, request_id, State.pending)
        assert repriced.estimate.amount_usdc == Decimal("0.01") * factor
    sandbox.state.reprice_factor = Decimal(1)
    # The approval covers up to the re-priced 0.05; the provider now asks the usual 0.01.
    done = await approved_until(runtime, request_id, State.succeeded)
    assert done.outcome.charged_usdc == Decimal("0.01")
    assert sandbox.state.executions_count() == 1
    assert runtime.ledger.attempts(request_id) == 3


async def test_funding_retry_happens_once_within_the_same_approval(runtime, sandbox):
    sandbox.state.set_balance(Decimal(0))
    first = await submit(runtime)
    await pending(runtime, first["request_id"])
    await approved_until(runtime, first["request_id"], State.awaiting_funds)
    sandbox.state.set_balance(Decimal(5))
    await runtime.broker.retry_funded(first["request_id"])
    done = await eventually(
        lambda: (r := runtime.broker.get(first["request_id"])).state == State.succeeded and r
    )
    assert done.outcome.charged_usdc == Decimal("0.01")
    with pytest.raises(Exception, match="not awaiting funds"):
        await runtime.broker.retry_funded(first["request_id"])

    sandbox.state.set_balance(Decimal(0))
    second = await submit(runtime, inputs={"query": "again"})
    await pending(runtime, second["request_id"])
    await approved_until(runtime, second["request_id"], State.awaiting_funds)
    await runtime.broker.retry_funded(second["request_id"])
    failed = await eventually(
        lambda: (r := runtime.broker.get(second["request_id"])).state == State.failed and r
    )
    assert "still unfunded on the retry" in failed.reason
    assert sandbox.state.executions_count() == 1


async def test_a_reused_idempotency_key_with_other_parameters_is_a_conflict(runtime):
    async with AsyncAgent("bot", runtime.paths.socket) as agent:
        first = await agent.submit(**SEARCH, purpose="p", idempotency_key="K")
        again = await agent.submit(**SEARCH, purpose="p", idempotency_key="K")
        assert again["request_id"] == first["request_id"]
        with pytest.raises(AgentError) as conflict:
            await agent.submit(
                endpoint_id="ep_scrape_page",
                inputs={"url": "https://example.com"},
                purpose="p",
                max_usdc="5",
                idempotency_key="K",
            )
    assert conflict.value.reason == "idempotency_conflict"
    assert conflict.value.data["fields"] == ["endpoint_id", "inputs", "max_usdc"]
    assert conflict.value.data["request_id"] == first["request_id"]
    count = runtime.ledger.db.execute("SELECT count(*) FROM requests").fetchone()[0]
    assert count == 1


async def test_a_decision_after_the_lifetime_is_refused_even_before_the_sweep(make_runtime, clock):
    from svc_console.broker.errors import WrongState

    runtime = make_runtime(clock=clock, pending_ttl_s=60.0, expiry_tick_s=3600.0)
    await runtime.start()
    try:
        ticket = await submit(runtime)
        await eventually(lambda: runtime.broker.get(ticket["request_id"]).state == State.pending)
        clock.advance(60.0)  # exactly at expires_at: no longer decidable
        for decide in (
            runtime.broker.approve(ApproveParams(request_id=ticket["request_id"])),
            runtime.broker.deny(DenyParams(request_id=ticket["request_id"], reason="late")),
        ):
            with pytest.raises(WrongState, match="ran out of time"):
                await decide
        request = runtime.broker.get(ticket["request_id"])
        assert request.state == State.pending and request.decision is None
        assert (
            runtime.ledger.db.execute("SELECT count(*) FROM budget_reservations").fetchone()[0] == 0
        )
    finally:
        await runtime.stop()
