"""One person, one approval (invariant 13): under the two-person rule, two approvals count as two
people only if neither account was created by the other approver, nor both by the same account;
and adding an operator, while a policy holds the rule, takes a second operator's approval, each
step an event in the audit chain. Accounts record who created them."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from helpers import SEARCH, eventually, operator

from svc_console.agent import AgentError, AsyncAgent
from svc_console.broker import BrokerConfig
from svc_console.broker.operator_additions import PROPOSAL_LIFETIME_S
from svc_console.config.agents import AgentSettings
from svc_console.config.operator_accounts import OperatorAccounts
from svc_console.core.states import State
from svc_console.ledger import audit
from svc_console.runtime import Runtime

ABOVE = "```policy\ntwo_person:\n  above_usdc: 0.005\n```\n"  # a web search costs 0.01
NO_RULE = "```policy\nper_call_max_usdc: 1\n```\n"
OPEN = AgentSettings(enrolment="open")


@pytest.fixture
def console(paths, sandbox, clock, keep_started) -> Callable[..., Any]:
    """A console with the accounts given (name: who added it), the policy given, the test's
    clock; returns the runtime and each account's token."""

    async def run(policy: str, accounts: dict[str, str | None]) -> tuple[Runtime, dict[str, str]]:
        store = OperatorAccounts(paths.operator_accounts)
        tokens = {name: store.add(name, added_by=by) for name, by in accounts.items()}
        (paths.home / "SKILLS.md").write_text(policy)
        options = {"clock": clock}
        runtime = Runtime(paths=paths, sandbox=sandbox, agent_settings=OPEN, broker_options=options)
        return await keep_started(runtime), tokens

    return run


async def asked(runtime: Runtime) -> str:
    async with AsyncAgent("research-bot", runtime.paths.socket) as agent:
        ticket = await agent.submit(**SEARCH, purpose="above the line")
    await eventually(lambda: runtime.broker.get(ticket["request_id"]).state == State.pending)
    return ticket["request_id"]


async def approve(line: Any, request_id: str, name: str, tokens: dict[str, str]) -> Any:
    params = {"request_id": request_id, "operator": name, "token": tokens[name]}
    return await line.call("approvals.approve", params)


def events(runtime: Runtime, kind: str) -> list[dict[str, Any]]:
    rows = runtime.ledger.db.execute(
        "SELECT data FROM events WHERE type = ? ORDER BY seq", [kind]
    ).fetchall()
    return [json.loads(data) for (data,) in rows]


@pytest.mark.parametrize(
    ("accounts", "first", "second", "why"),
    [
        # `operators add alice2 --operator alice`, then approve as alice and as alice2.
        ({"alice": None, "alice2": "alice"}, "alice", "alice2", "alice created alice2's account"),
        ({"alice": None, "alice2": "alice"}, "alice2", "alice", "alice created alice2's account"),
        # Added by another spelling of alice's name (`--operator Alice`): still alice.
        ({"alice": None, "alice2": "Alice"}, "alice", "alice2", "alice created alice2's account"),
        # Two accounts made by one: one person's, for all the console can tell.
        (
            {"alice": None, "bob": "alice", "carol": "alice"},
            "bob",
            "carol",
            "alice created both accounts",
        ),
    ],
)
async def test_accounts_one_of_them_made_never_count_as_two_people(
    console, accounts, first, second, why
):
    runtime, tokens = await console(ABOVE, accounts)
    request_id = await asked(runtime)
    async with operator(runtime) as line:
        assert (await approve(line, request_id, first, tokens))["state"] == "pending"
        with pytest.raises(AgentError) as refused:
            await approve(line, request_id, second, tokens)
    assert refused.value.reason == "second_operator_required"
    assert why in refused.value.message and "do not count as two people" in refused.value.message
    request = runtime.broker.get(request_id)
    assert request.state == State.pending and request.decision is None


async def test_accounts_made_by_different_operators_count_as_two(console):
    # alice made bob; bob made carol: alice and carol are as far apart as the console can tell.
    runtime, tokens = await console(ABOVE, {"alice": None, "bob": "alice", "carol": "bob"})
    request_id = await asked(runtime)
    async with operator(runtime) as line:
        await approve(line, request_id, "alice", tokens)
        approved = await approve(line, request_id, "carol", tokens)
    assert approved["decision"]["by"] == "alice, carol"


async def test_without_the_rule_an_operator_adds_one_at_once_and_it_is_recorded(console, paths):
    runtime, tokens = await console(NO_RULE, {"alice": None})
    async with operator(runtime) as line:
        said = await line.call(
            "operators.add", {"name": "dave", "operator": "alice", "token": tokens["alice"]}
        )
    assert said["state"] == "added" and said["by"] == ["alice"]
    account = {a.name: a for a in OperatorAccounts(paths.operator_accounts).accounts()}["dave"]
    assert account.creators == {"alice"}
    assert OperatorAccounts(paths.operator_accounts).authenticate("dave", said["token"])
    (added,) = events(runtime, "operator_added")
    assert added["name"] == "dave" and added["by"] == ["alice"]
    assert added["evidence"]["operator"] == "alice"
    assert said["token"] not in json.dumps(added)


async def test_under_the_rule_adding_an_operator_takes_a_second(console, paths):
    runtime, tokens = await console(ABOVE, {"alice": None, "bob": None})
    store = OperatorAccounts(paths.operator_accounts)
    ask = {"name": "dave", "operator": "alice", "token": tokens["alice"]}
    async with operator(runtime) as line:
        proposed = await line.call("operators.add", ask)
        assert proposed == {"name": "dave", "state": "proposed", "by": ["alice"], "token": None}
        assert "dave" not in [a.name for a in store.accounts()]
        with pytest.raises(AgentError) as again:
            await line.call("operators.add", ask)  # alice once more is no second operator
        assert again.value.reason == "second_operator_required"
        seconded = await line.call(
            "operators.add", {"name": "dave", "operator": "bob", "token": tokens["bob"]}
        )
    assert seconded["state"] == "added" and seconded["by"] == ["alice", "bob"]
    dave = {a.name: a for a in store.accounts()}["dave"]
    assert (dave.added_by, dave.seconded_by) == ("alice", "bob")
    assert store.authenticate("dave", seconded["token"]) is not None
    assert [e["by"] for e in events(runtime, "operator_proposed")] == ["alice"]
    assert [e["by"] for e in events(runtime, "operator_added")] == [["alice", "bob"]]
    await runtime.ledger.committed()
    assert audit.verify(runtime.ledger.path).intact
    # From the console's next start, dave is an operator, and counts as one person with
    # neither of the two who made him.
    await runtime.stop()
    tokens["dave"] = seconded["token"]
    runtime = await restart(paths, runtime)
    try:
        request_id = await asked(runtime)
        async with operator(runtime) as line:
            await approve(line, request_id, "dave", tokens)
            with pytest.raises(AgentError) as made:
                await approve(line, request_id, "bob", tokens)
        assert "bob created dave's account" in made.value.message
    finally:
        await runtime.stop()


async def restart(paths: Any, stopped: Runtime) -> Runtime:
    runtime = Runtime(
        paths=paths,
        sandbox=stopped.sandbox,
        config=BrokerConfig(),
        agent_settings=OPEN,
        broker_options=stopped.broker_options,
    )
    await runtime.start()
    return runtime


async def test_a_proposal_is_seconded_under_any_spelling_of_the_name(console, paths):
    runtime, tokens = await console(ABOVE, {"alice": None, "bob": None})
    async with operator(runtime) as line:
        for name, asked_for in (("alice", "Dave"), ("bob", "DAVE")):
            said = await line.call(
                "operators.add", {"name": asked_for, "operator": name, "token": tokens[name]}
            )
    assert said["state"] == "added" and said["by"] == ["alice", "bob"]
    assert [e["name"] for e in events(runtime, "operator_proposed")] == ["dave"]
    dave = {a.name: a for a in OperatorAccounts(paths.operator_accounts).accounts()}["dave"]
    assert dave.creators == {"alice", "bob"}


async def test_a_proposal_lapses_after_a_day(console, clock):
    runtime, tokens = await console(ABOVE, {"alice": None, "bob": None})
    async with operator(runtime) as line:
        for name in ("alice", "bob"):
            said = await line.call(
                "operators.add", {"name": "erin", "operator": name, "token": tokens[name]}
            )
            assert said["state"] == ("proposed" if name == "alice" else "added")
        await line.call(
            "operators.add", {"name": "fred", "operator": "alice", "token": tokens["alice"]}
        )
        clock.advance(PROPOSAL_LIFETIME_S)
        late = await line.call(
            "operators.add", {"name": "fred", "operator": "bob", "token": tokens["bob"]}
        )
    assert late["state"] == "proposed" and late["by"] == ["bob"]  # a new proposal, bob's


async def test_a_lone_operator_under_the_rule_is_told_no_second_one_exists(console):
    runtime, tokens = await console(ABOVE, {"alice": None})
    async with operator(runtime) as line:
        with pytest.raises(AgentError) as alone:
            await line.call(
                "operators.add", {"name": "alice2", "operator": "alice", "token": tokens["alice"]}
            )
    assert alone.value.reason == "second_operator_required"
    assert "only operator" in alone.value.message
    assert events(runtime, "operator_proposed") == []


async def test_adding_needs_a_proven_operator(console):
    runtime, _ = await console(ABOVE, {"alice": None})
    async with operator(runtime) as line:
        for given in ({}, {"operator": "alice", "token": "svcop_not-it"}):
            with pytest.raises(AgentError) as refused:
                await line.call("operators.add", {"name": "mallory", **given})
            assert refused.value.reason == "operator_required"
    assert events(runtime, "operator_proposed") == []
