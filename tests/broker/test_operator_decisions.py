"""Operators are identities: once operator accounts exist, a decision over the operator socket
needs an account's name and token, names that operator in the decision, its audit event and the
history, and anything else (no name, an unknown name, a wrong token, the old passphrase) is
refused, recorded, and decides nothing."""

from __future__ import annotations

import json
import os
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from helpers import SEARCH, eventually, operator

from svc_console.agent import AgentError, AsyncAgent
from svc_console.broker import BrokerConfig
from svc_console.config.agents import AgentSettings
from svc_console.config.operator_accounts import OperatorAccounts
from svc_console.config.operator_passphrase import OperatorPassphrase
from svc_console.core.states import State
from svc_console.runtime import Runtime

OPEN = AgentSettings(enrolment="open")


@pytest.fixture
def start(paths, sandbox, keep_started) -> Callable[[], Awaitable[Runtime]]:
    return lambda: keep_started(
        Runtime(paths=paths, sandbox=sandbox, config=BrokerConfig(), agent_settings=OPEN)
    )


async def pending_request(runtime: Runtime) -> str:
    async with AsyncAgent("bot", runtime.paths.socket) as agent:
        ticket = await agent.submit(**SEARCH, purpose="needs an operator")
    request_id = ticket["request_id"]
    await eventually(lambda: runtime.broker.get(request_id).state == State.pending)
    return request_id


def refusals(runtime: Runtime, request_id: str) -> list[dict[str, Any]]:
    return [
        json.loads(event["data"])
        for event in runtime.ledger.events(request_id)
        if event["type"] == "decision_refused"
    ]


async def test_a_decision_names_the_operator_whose_token_proved_it(start, paths):
    token = OperatorAccounts(paths.operator_accounts).add("alice")
    runtime = await start()
    request_id = await pending_request(runtime)
    async with operator(runtime) as line:
        assert line.hello_info["operators_required"] is True
        approved = await line.call(
            "approvals.approve", {"request_id": request_id, "operator": "alice", "token": token}
        )
        history = await line.call("approvals.list", {"view": "history"})
    assert approved["decision"]["by"] == "alice"
    evidence = approved["decision"]["evidence"]
    assert evidence["operator"] == "alice" and evidence["channel"] == "cli"
    assert evidence["pid"] == os.getpid()
    assert history[0]["decision"]["by"] == "alice"
    decided = [
        json.loads(e["data"]) for e in runtime.ledger.events(request_id) if e["type"] == "decision"
    ]
    assert decided[0]["by"] == "alice" and decided[0]["evidence"]["operator"] == "alice"
    # The token is in no row and no event of the ledger.
    dump = "\n".join(runtime.ledger.db.conn.iterdump())
    assert token not in dump


async def test_no_operator_an_unknown_one_or_a_wrong_token_decides_nothing(start, paths):
    accounts = OperatorAccounts(paths.operator_accounts)
    alice = accounts.add("alice")
    OperatorPassphrase(paths.operator_passphrase).set("the old passphrase")
    runtime = await start()
    request_id = await pending_request(runtime)
    tries = [
        {},
        {"passphrase": "the old passphrase"},  # with accounts, the passphrase no longer counts
        {"operator": "alice", "token": "svcop_not-it"},
        {"operator": "mallory", "token": alice},
    ]
    async with operator(runtime) as line:
        assert line.hello_info["passphrase_required"] is False
        for given in tries:
            with pytest.raises(AgentError) as refused:
                await line.call("approvals.approve", {"request_id": request_id, **given})
            assert refused.value.reason == "operator_required"
            assert "nothing was decided" in refused.value.message
        with pytest.raises(AgentError) as denial:
            await line.call(
                "approvals.deny",
                {"request_id": request_id, "reason": "x", "operator": "alice", "token": "bad"},
            )
        assert denial.value.reason == "operator_required"
    request = runtime.broker.get(request_id)
    assert request.state == State.pending and request.decision is None
    reasons = [r["reason"] for r in refusals(runtime, request_id)]
    assert reasons == ["no operator account named"] * 2 + ["unknown operator or wrong token"] * 3


async def test_an_operator_named_where_there_are_no_accounts_is_refused(start):
    runtime = await start()
    request_id = await pending_request(runtime)
    async with operator(runtime) as line:
        assert line.hello_info["operators_required"] is False
        with pytest.raises(AgentError) as refused:
            await line.call(
                "approvals.approve", {"request_id": request_id, "operator": "alice", "token": "t"}
            )
    assert refused.value.reason == "operator_required"
    assert "no operator accounts" in refused.value.message
    assert runtime.broker.get(request_id).state == State.pending


async def test_an_account_added_later_counts_from_the_next_start_a_removal_at_once(start, paths):
    accounts = OperatorAccounts(paths.operator_accounts)
    alice = accounts.add("alice")
    runtime = await start()
    bob = accounts.add("bob")  # written while the console runs: not yet trusted
    first = await pending_request(runtime)
    second = await pending_request(runtime)
    async with operator(runtime) as line:
        with pytest.raises(AgentError) as late:
            await line.call(
                "approvals.approve", {"request_id": first, "operator": "bob", "token": bob}
            )
        assert late.value.reason == "operator_required"
        accounts.remove("alice")
        with pytest.raises(AgentError) as removed:
            await line.call(
                "approvals.approve", {"request_id": first, "operator": "alice", "token": alice}
            )
        assert removed.value.reason == "operator_required"
    assert runtime.broker.get(first).state == State.pending
    await runtime.stop()
    runtime = await start()
    async with operator(runtime) as line:
        approved = await line.call(
            "approvals.approve", {"request_id": second, "operator": "bob", "token": bob}
        )
    assert approved["decision"]["by"] == "bob"
