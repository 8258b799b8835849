"""Funding over the operator socket (`wallet.fund_start`, `wallet.fund_wait`, `wallet.fund_retry`):
a request left `awaiting_funds` by an empty sandbox wallet, a real checkout, the sandbox's funding
page posted like a browser, and the one retry, all without the TUI."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from decimal import Decimal

import pytest
from helpers import awaiting_funds, eventually, fund_like_a_browser
from operator_support import operator_knowing as operator
from operator_support import set_passphrase

from svc_console.agent import AgentError, AsyncAgent
from svc_console.core.states import State
from svc_console.runtime import Runtime


@pytest.fixture
async def runtime(make_runtime: Callable[..., Runtime], paths) -> AsyncIterator[Runtime]:
    """A started console whose funding waits read the balance often, whose operator set a
    passphrase (agents of this user are accepted: funding needs it)."""
    set_passphrase(paths.home)
    rt = make_runtime(funding_poll_s=0.02)
    await rt.start()
    yield rt
    await rt.stop()


async def refusal(line: AsyncAgent, method: str, params: dict) -> AgentError:
    with pytest.raises(AgentError) as refused:
        await line.call(method, params)
    return refused.value


async def test_checkout_wait_and_one_retry_over_the_operator_socket(runtime, sandbox):
    request_id = await awaiting_funds(runtime, sandbox, balance="0.004")
    async with operator(runtime) as line:
        assert {"wallet.fund_start", "wallet.fund_wait", "wallet.fund_retry"} <= set(
            line.hello_info["methods"]
        )
        started = await line.call("wallet.fund_start", {"request_id": request_id})
        assert started["required_usdc"] == "0.01" and started["balance_usdc"] == "0.004"
        assert started["shortfall_usdc"] == "0.006"
        checkout = started["checkout"]
        assert checkout["amount_usdc"] == "0.006"
        assert started["link"] == checkout["checkout_url"]
        assert checkout["checkout_url"].startswith(sandbox.base_url)
        # Nothing is retried before the wallet covers the request.
        early = await refusal(line, "wallet.fund_retry", {"request_id": request_id})
        assert early.reason == "wrong_state" and "fund it first" in early.message
        assert runtime.ledger.attempts(request_id) == 1

        assert await fund_like_a_browser(checkout["checkout_url"]) == Decimal("0.006")
        waited = await line.call(
            "wallet.fund_wait", {"request_id": request_id, "timeout_s": 30, "balance_usdc": "0.004"}
        )
        assert waited["covered"] is True and waited["balance_usdc"] == "0.01"
        assert waited["state"] == "awaiting_funds"
        done = await line.call("wallet.fund_retry", {"request_id": request_id, "timeout_s": 30})

    assert done["state"] == "succeeded" and done["outcome"]["charged_usdc"] == "0.01"
    assert runtime.ledger.attempts(request_id) == 2
    assert sandbox.state.balance == Decimal(0)


async def test_a_covered_balance_needs_no_checkout(runtime, sandbox):
    request_id = await awaiting_funds(runtime, sandbox)
    sandbox.state.set_balance("1")
    async with operator(runtime) as line:
        started = await line.call("wallet.fund_start", {"request_id": request_id})
        assert started["checkout"] is None and started["link"] is None
        assert started["shortfall_usdc"] == "0.00" and started["balance_usdc"] == "1.00"
        done = await line.call("wallet.fund_retry", {"request_id": request_id})
    assert done["state"] == "succeeded"


async def test_bad_requests_are_refused_and_change_nothing(runtime, sandbox):
    request_id = await awaiting_funds(runtime, sandbox)
    events = len(runtime.ledger.events(request_id))
    async with operator(runtime) as line:
        for method in ("wallet.fund_start", "wallet.fund_wait", "wallet.fund_retry"):
            unknown = await refusal(line, method, {"request_id": "req_nope"})
            assert unknown.reason == "unknown_request"
            empty = await refusal(line, method, {})
            assert empty.reason == "invalid_params"
        # Another request, still waiting for the operator's decision.
        await runtime.broker.cancel(request_id)
        for method in ("wallet.fund_start", "wallet.fund_wait", "wallet.fund_retry"):
            wrong = await refusal(line, method, {"request_id": request_id})
            assert wrong.reason == "wrong_state"
            assert wrong.message == f"request {request_id} is cancelled, not awaiting funds"
    assert runtime.ledger.attempts(request_id) == 1
    assert len(runtime.ledger.events(request_id)) == events + 1  # the cancel alone


async def test_the_agents_socket_cannot_fund_or_retry(runtime, sandbox):
    request_id = await awaiting_funds(runtime, sandbox, agent="bot")
    async with AsyncAgent("bot", runtime.paths.socket) as agent:
        for method in ("wallet.fund_start", "wallet.fund_wait", "wallet.fund_retry"):
            refused = await refusal(agent, method, {"request_id": request_id})
            assert refused.reason == "not_authorised"
    assert runtime.broker.get(request_id).state == State.awaiting_funds


async def test_the_wait_ends_when_the_balance_moves_or_the_request_stops_waiting(runtime, sandbox):
    request_id = await awaiting_funds(runtime, sandbox)
    async with operator(runtime) as line:
        nothing = await line.call("wallet.fund_wait", {"request_id": request_id, "timeout_s": 0})
        assert nothing["covered"] is False and nothing["state"] == "awaiting_funds"
        sandbox.state.set_balance("0.003")  # funded in part: the wait says so
        moved = await line.call(
            "wallet.fund_wait", {"request_id": request_id, "timeout_s": 30, "balance_usdc": "0"}
        )
        assert moved["balance_usdc"] == "0.003" and moved["covered"] is False
        waiting = asyncio.ensure_future(
            line.call(
                "wallet.fund_wait",
                {"request_id": request_id, "timeout_s": 30, "balance_usdc": "0.003"},
            )
        )
        # Once the console counts the wait as under way, it has found the request waiting.
        connections = runtime.operator_socket._connections
        await eventually(lambda: any(connection.waits for connection in connections))
        await runtime.broker.cancel(request_id)
        ended = await waiting
    assert ended["state"] == "cancelled" and ended["covered"] is False
    assert runtime.ledger.attempts(request_id) == 1


async def test_a_failed_balance_read_is_noted(runtime, sandbox):
    request_id = await awaiting_funds(runtime, sandbox)
    sandbox.state.faults.add("error", routes=["/api/agent/wallets"], status=503)
    async with operator(runtime) as line:
        unread = await refusal(line, "wallet.fund_start", {"request_id": request_id})
        assert unread.reason == "market_error"
        assert unread.message.startswith("the balance could not be read")
        waited = await line.call("wallet.fund_wait", {"request_id": request_id, "timeout_s": 30})
        assert "could not be read" in waited["note"] and waited["covered"] is False
        sandbox.state.faults.clear()
        sandbox.state.faults.add("error", routes=["funding"], status=503, count=1)
        failed = await refusal(line, "wallet.fund_start", {"request_id": request_id})
        assert failed.reason == "market_error" and failed.message.startswith("the checkout failed")
    assert runtime.broker.get(request_id).state == State.awaiting_funds


async def test_the_retry_is_started_once_when_asked_twice(runtime, sandbox):
    request_id = await awaiting_funds(runtime, sandbox)
    sandbox.state.set_balance("1")
    broker = runtime.broker
    await broker.retry_funded(request_id)
    with pytest.raises(Exception, match="is being retried"):
        await broker.retry_funded(request_id)
    done = await broker.retried(request_id, 30)
    assert done.state == State.succeeded
    await eventually(lambda: runtime.ledger.attempts(request_id) == 2)
    assert sandbox.state.executions_count() == 1
