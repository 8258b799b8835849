"""Operators are identities: once operator accounts exist, a decision over the operator socket
needs an account's name and token, names that operator in the decision, its audit event and the
history, and anything else (no name, an unknown name, a wrong token, the old passphrase) is
refused, recorded, and decides nothing. The same holds for the operator's other acts on money
and permissions: revoking a grant, and funding a request that waits for funds."""

from __future__ import annotations

import json
import os
from collections.abc import Awaitable, Callable
from decimal import Decimal
from typing import Any

import pytest
from helpers import SEARCH, awaiting_funds, eventually, fund_like_a_browser, operator
from operator_support import PASSPHRASE, past_the_wait, refused_reasons, set_passphrase

from svc_console.agent import AgentError, AsyncAgent
from svc_console.broker import BrokerConfig
from svc_console.broker.deciders import Peer
from svc_console.broker.operator_proof import OperatorProof
from svc_console.broker.params import ApproveParams, Credentials
from svc_console.config.agents import AgentSettings
from svc_console.config.operator_accounts import OperatorAccounts
from svc_console.config.operator_passphrase import OperatorPassphrase
from svc_console.core.states import State
from svc_console.ledger import audit
from svc_console.runtime import Runtime

OPEN = AgentSettings(enrolment="open")


@pytest.fixture
def start(paths, sandbox, keep_started, clock) -> Callable[[], Awaitable[Runtime]]:
    return lambda: keep_started(
        Runtime(
            paths=paths,
            sandbox=sandbox,
            config=BrokerConfig(),
            agent_settings=OPEN,
            broker_options={"clock": clock},
        )
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
    assert token not in everything_stored(runtime)


def everything_stored(runtime: Runtime) -> str:
    """Every row of every table of the ledger, as text, on either engine."""
    db = runtime.ledger.db
    return "\n".join(
        repr(row)
        for table in db.table_names()
        for row in db.execute(f'SELECT * FROM "{table}"').fetchall()
    )


async def test_no_operator_an_unknown_one_or_a_wrong_token_decides_nothing(start, paths, clock):
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
            past_the_wait(runtime, clock)  # a wrong token earns one (test_guessing.py)
        with pytest.raises(AgentError) as denial:
            await line.call(
                "approvals.deny",
                {"request_id": request_id, "reason": "x", "operator": "alice", "token": "bad"},
            )
        assert denial.value.reason == "operator_required"
    request = runtime.broker.get(request_id)
    assert request.state == State.pending and request.decision is None
    assert refusals(runtime, request_id)[0]["reason"] == "no operator account named"
    assert refused_reasons(runtime) == {
        "no operator account named": 2,
        "unknown operator or wrong token": 3,
    }


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


async def test_an_account_added_later_counts_from_the_next_start_a_removal_at_once(
    start, paths, clock
):
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
        past_the_wait(runtime, clock)  # a wrong token earns one (test_guessing.py)
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


# -- the operator's other acts on money and permissions -------------------------------------------

# Each funding method with what it takes besides the request.
FUNDING = {"wallet.fund_start": {}, "wallet.fund_wait": {"timeout_s": 1}, "wallet.fund_retry": {}}


async def granted(runtime: Runtime) -> int:
    """A grant in force, made by an approval in the TUI's process (`decisions` are tested above)."""
    request_id = await pending_request(runtime)
    await runtime.broker.approve(
        ApproveParams(request_id=request_id, grant_for="1h", grant_total=1)
    )
    (grant,) = runtime.broker.grants.in_force()
    return grant.id


def kinds(runtime: Runtime, request_id: str) -> list[str]:
    return [event["type"] for event in runtime.ledger.events(request_id)]


def event_data(runtime: Runtime, request_id: str, kind: str) -> list[dict[str, Any]]:
    return [json.loads(e["data"]) for e in runtime.ledger.events(request_id) if e["type"] == kind]


async def test_revoking_a_grant_needs_an_operators_token_and_names_them(start, paths, clock):
    alice = OperatorAccounts(paths.operator_accounts).add("alice")
    runtime = await start()
    grant_id = await granted(runtime)
    tries = [{}, {"operator": "alice", "token": "svcop_not-it"}, {"operator": "mallory"}]
    async with operator(runtime) as line:
        for given in tries:
            with pytest.raises(AgentError) as refused:
                await line.call("grants.revoke", {"grant_id": grant_id, **given})
            assert refused.value.reason == "operator_required"
            assert "operator account" in refused.value.message
            past_the_wait(runtime, clock)  # a wrong token earns one (test_guessing.py)
        # Nothing changed: the grant is in force, as it was.
        assert [g.id for g in runtime.broker.grants.in_force()] == [grant_id]
        revoked = await line.call(
            "grants.revoke", {"grant_id": grant_id, "operator": "alice", "token": alice}
        )
    assert revoked["ended_by"] == "alice"
    assert runtime.broker.grants.in_force() == []
    ended = event_data(runtime, revoked["request_id"], "grant_ended")
    assert ended[0]["ended_by"] == "alice"


async def test_a_bad_revoke_with_a_good_token_is_refused_and_changes_nothing(start, paths):
    alice = OperatorAccounts(paths.operator_accounts).add("alice")
    runtime = await start()
    grant_id = await granted(runtime)
    me = {"operator": "alice", "token": alice}
    async with operator(runtime) as line:
        for params, reason in [
            ({"grant_id": grant_id + 1, **me}, "wrong_state"),  # no such grant
            ({"grant_id": grant_id, **me, "also": 1}, "invalid_params"),  # an unknown field
            ({"grant_id": grant_id, "operator": "alice", "token": 7}, "invalid_params"),
        ]:
            with pytest.raises(AgentError) as refused:
                await line.call("grants.revoke", params)
            assert refused.value.reason == reason
    assert [g.id for g in runtime.broker.grants.in_force()] == [grant_id]


async def test_funding_needs_an_operators_token_and_changes_nothing_without(
    make_runtime, keep_started, sandbox, paths, clock
):
    OperatorAccounts(paths.operator_accounts).add("alice")
    runtime = await keep_started(make_runtime(funding_poll_s=0.02, clock=clock))
    request_id = await awaiting_funds(runtime, sandbox, balance="0.004")
    before = kinds(runtime, request_id)
    async with operator(runtime) as line:
        for method, more in FUNDING.items():
            for given in ({}, {"operator": "alice", "token": "svcop_not-it"}):
                with pytest.raises(AgentError) as refused:
                    await line.call(method, {"request_id": request_id, **more, **given})
                assert refused.value.reason == "operator_required", method
                assert "nothing was decided" in refused.value.message
                past_the_wait(runtime, clock)  # a wrong token earns one (test_guessing.py)
    # Still waiting for funds, its one retry kept, no checkout opened: only the refusals kept.
    assert runtime.broker.get(request_id).state == State.awaiting_funds
    assert runtime.ledger.attempts(request_id) == 1
    assert sandbox.state.balance == Decimal("0.004")
    # The first refusal whole, with its request; the other five counted, naming it.
    assert kinds(runtime, request_id)[len(before) :] == ["decision_refused"]
    assert refused_reasons(runtime) == {
        "no operator account named": 3,
        "unknown operator or wrong token": 3,
    }


async def test_funding_with_a_token_names_the_operator_in_the_checkout_and_the_retry(
    make_runtime, keep_started, sandbox, paths
):
    alice = OperatorAccounts(paths.operator_accounts).add("alice")
    runtime = await keep_started(make_runtime(funding_poll_s=0.02))
    request_id = await awaiting_funds(runtime, sandbox, balance="0.004")
    me = {"request_id": request_id, "operator": "alice", "token": alice}
    async with operator(runtime) as line:
        started = await line.call("wallet.fund_start", me)
        # Refused before the wallet covers it: no retry, nothing recorded of one.
        with pytest.raises(AgentError) as early:
            await line.call("wallet.fund_retry", me)
        assert early.value.reason == "wrong_state"
        assert "funding_retry" not in kinds(runtime, request_id)
        assert await fund_like_a_browser(started["checkout"]["checkout_url"]) == Decimal("0.006")
        waited = await line.call(
            "wallet.fund_wait", {**me, "timeout_s": 30, "balance_usdc": "0.004"}
        )
        assert waited["covered"] is True
        done = await line.call("wallet.fund_retry", {**me, "timeout_s": 30})
    assert done["state"] == "succeeded"
    for kind in ("funding_checkout", "funding_retry"):
        (said,) = event_data(runtime, request_id, kind)
        assert said["by"] == "alice" and said["evidence"]["operator"] == "alice"
        assert said["evidence"]["channel"] == "cli"
    assert alice not in everything_stored(runtime)
    report = audit.verify(runtime.ledger.path, url=runtime.ledger.url)
    assert report.intact, (report.broken, report.problems)


async def test_without_accounts_every_act_needs_the_passphrase_where_same_user_agents_are(
    start, paths
):
    set_passphrase(paths.home)
    runtime = await start()  # open enrolment: agents of this user accepted
    grant_id = await granted(runtime)
    async with operator(runtime) as line:
        assert line.hello_info["credential_required"] is True
        with pytest.raises(AgentError) as named:
            await line.call("grants.revoke", {"grant_id": grant_id, "operator": "alice"})
        assert named.value.reason == "operator_required"
        assert "no operator accounts" in named.value.message
        with pytest.raises(AgentError) as bare:
            await line.call("grants.revoke", {"grant_id": grant_id})
        assert bare.value.reason == "passphrase_required"
        assert [g.id for g in runtime.broker.grants.in_force()] == [grant_id]
        revoked = await line.call("grants.revoke", {"grant_id": grant_id, "passphrase": PASSPHRASE})
    assert revoked["ended_by"] == "cli"


async def test_where_only_other_users_agents_are_accepted_only_decisions_need_it(start, paths):
    """Strict enrolment without `allow_same_user`: no agent runs as the owner, so the socket's
    owner-only mode tells the operator apart; the passphrase, once set, guards the decisions."""
    set_passphrase(paths.home)
    runtime = await start()
    apart = OperatorProof(runtime.broker, runtime.passphrase, runtime.operators, lambda: False)
    assert apart.describe()["credential_required"] is False
    me = Peer(pid=os.getpid(), uid=os.getuid(), gid=os.getgid())
    revoking = await apart.decider(me, None, Credentials(), decision=False)
    assert revoking.operator is None and revoking.channel == "cli"
    with pytest.raises(Exception) as deciding:
        await apart.decider(me, None, Credentials())
    assert getattr(deciding.value, "reason", None) == "passphrase_required"
    runtime.passphrase = None  # none set: the decisions too need nothing
    unguarded = OperatorProof(runtime.broker, None, runtime.operators, lambda: False)
    assert (await unguarded.decider(me, None, Credentials())).channel == "cli"
