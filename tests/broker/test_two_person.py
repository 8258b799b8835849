"""The two-person rule of SKILLS.md: above its amount, a first approval is recorded and the request
stays pending; a second by another operator approves it and it executes once. The same operator
twice, the operator who registered the asking agent, and an approval naming no operator are
refused; a deny by either ends it; below the amount one approval does; no auto-approve rule
stands in for the operators."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from helpers import SEARCH, eventually, operator

from svc_console.agent import AgentError, AsyncAgent
from svc_console.broker import errors
from svc_console.broker.params import ApproveParams
from svc_console.config.agent_registry import AgentRegistry
from svc_console.config.agents import AgentSettings
from svc_console.config.operator_accounts import OperatorAccounts
from svc_console.core.states import State
from svc_console.ledger import audit
from svc_console.runtime import Runtime

# A web search costs 0.01 USDC in the sandbox.
ABOVE = "```policy\ntwo_person:\n  above_usdc: 0.005\n```\n"
BELOW = "```policy\ntwo_person:\n  above_usdc: 1.00\n```\n"
STRICT = AgentSettings(enrolment="strict", allow_same_user=True)


@pytest.fixture
def console(paths, sandbox, keep_started) -> Callable[..., Any]:
    """A console with operators alice, bob and carol, agent research-bot registered by alice,
    and the policy given; returns the runtime and the operators' tokens."""

    async def run(policy: str) -> tuple[Runtime, dict[str, str]]:
        accounts = OperatorAccounts(paths.operator_accounts)
        tokens = {name: accounts.add(name) for name in ("alice", "bob", "carol")}
        tokens["research-bot"] = AgentRegistry(paths.agent_registry).add(
            "research-bot", registered_by="alice"
        )
        (paths.home / "SKILLS.md").write_text(policy)
        runtime = Runtime(paths=paths, sandbox=sandbox, agent_settings=STRICT)
        return await keep_started(runtime), tokens

    return run


async def asked(runtime: Runtime, tokens: dict[str, str], state: State = State.pending) -> str:
    async with AsyncAgent("research-bot", runtime.paths.socket, token=tokens["research-bot"]) as a:
        ticket = await a.submit(**SEARCH, purpose="above the line")
    request_id = ticket["request_id"]
    await eventually(lambda: runtime.broker.get(request_id).state == state)
    return request_id


async def approve(line: Any, request_id: str, name: str, tokens: dict[str, str]) -> Any:
    params = {"request_id": request_id, "operator": name, "token": tokens[name]}
    return await line.call("approvals.approve", params)


def events(runtime: Runtime, request_id: str, kind: str) -> list[dict[str, Any]]:
    rows = runtime.ledger.events(request_id)
    return [json.loads(e["data"]) for e in rows if e["type"] == kind]


def executions(runtime: Runtime, request_id: str) -> int:
    query = "SELECT count(*) FROM executions WHERE request_id = ?"
    return runtime.ledger.db.execute(query, [request_id]).fetchone()[0]


async def test_two_operators_approve_and_it_executes_once(console):
    runtime, tokens = await console(ABOVE)
    request_id = await asked(runtime, tokens)
    verdict = runtime.broker.get(request_id).verdict
    assert any(c.rule == "two_person" and c.effect == "ask" for c in verdict.citations)
    async with operator(runtime) as line:
        first = await approve(line, request_id, "bob", tokens)
        assert first["state"] == "pending" and first["decision"] is None
        assert runtime.broker.decisions.operator_approvals(runtime.broker.get(request_id)) == [
            "bob"
        ]
        second = await approve(line, request_id, "carol", tokens)
    assert second["decision"]["by"] == "bob, carol"
    assert second["decision"]["evidence"]["operator"] == "carol"
    await eventually(lambda: runtime.broker.get(request_id).state == State.succeeded)
    assert executions(runtime, request_id) == 1
    assert [e["operator"] for e in events(runtime, request_id, "operator_approval")] == ["bob"]
    assert events(runtime, request_id, "decision")[0]["by"] == "bob, carol"
    # Both approvals are in the keyed chain, which still verifies.
    await runtime.ledger.committed()
    assert audit.verify(runtime.ledger.path).intact


async def test_the_same_operator_twice_is_refused(console):
    runtime, tokens = await console(ABOVE)
    request_id = await asked(runtime, tokens)
    async with operator(runtime) as line:
        await approve(line, request_id, "bob", tokens)
        with pytest.raises(AgentError) as again:
            await approve(line, request_id, "bob", tokens)
    assert again.value.reason == "second_operator_required"
    assert "already approved" in again.value.message
    request = runtime.broker.get(request_id)
    assert request.state == State.pending and request.decision is None
    assert len(events(runtime, request_id, "operator_approval")) == 1
    refused = events(runtime, request_id, "decision_refused")
    assert refused[0]["reason"] == f"operator bob already approved {request_id}"


async def test_the_tuis_operator_named_in_another_case_is_the_same_operator(console, paths):
    """settings.toml names the TUI's operator `Bob`: that is the account bob, whose approval over
    the socket the TUI's then cannot double."""
    from svc_console.config.operator_settings import console_operator

    (paths.home / "settings.toml").write_text('[operator]\nname = "Bob"\n')
    runtime, tokens = await console(ABOVE)
    runtime.broker.decisions.console_operator = console_operator(paths.settings)
    request_id = await asked(runtime, tokens)
    async with operator(runtime) as line:
        await approve(line, request_id, "bob", tokens)
    with pytest.raises(errors.SecondOperatorRequired, match="operator bob already approved"):
        await runtime.broker.approve(ApproveParams(request_id=request_id))
    request = runtime.broker.get(request_id)
    assert request.state == State.pending and request.decision is None


async def test_the_operator_who_registered_the_agent_may_not_approve(console):
    runtime, tokens = await console(ABOVE)
    request_id = await asked(runtime, tokens)
    async with operator(runtime) as line:
        with pytest.raises(AgentError) as first:
            await approve(line, request_id, "alice", tokens)
        await approve(line, request_id, "bob", tokens)
        with pytest.raises(AgentError) as second:
            await approve(line, request_id, "alice", tokens)
    for refused in (first, second):
        assert refused.value.reason == "second_operator_required"
        assert "alice registered agent research-bot" in refused.value.message
    assert runtime.broker.get(request_id).state == State.pending
    assert [e["operator"] for e in events(runtime, request_id, "operator_approval")] == ["bob"]


async def test_a_first_approval_by_an_operator_removed_since_counts_no_more(console, paths):
    runtime, tokens = await console(ABOVE)
    request_id = await asked(runtime, tokens)
    async with operator(runtime) as line:
        await approve(line, request_id, "bob", tokens)
        OperatorAccounts(paths.operator_accounts).remove("bob")
        again_first = await approve(line, request_id, "carol", tokens)
    assert again_first["state"] == "pending"
    request = runtime.broker.get(request_id)
    assert runtime.broker.decisions.operator_approvals(request) == ["carol"]


async def test_a_deny_by_the_second_operator_ends_it(console):
    runtime, tokens = await console(ABOVE)
    request_id = await asked(runtime, tokens)
    async with operator(runtime) as line:
        await approve(line, request_id, "bob", tokens)
        denied = await line.call(
            "approvals.deny",
            {
                "request_id": request_id,
                "reason": "no",
                "operator": "carol",
                "token": tokens["carol"],
            },
        )
    assert denied["state"] == "denied" and denied["decision"]["by"] == "carol"
    assert executions(runtime, request_id) == 0


async def test_below_the_amount_one_approval_does(console):
    runtime, tokens = await console(BELOW)
    request_id = await asked(runtime, tokens)
    async with operator(runtime) as line:
        approved = await approve(line, request_id, "bob", tokens)
    assert approved["state"] == "approved" and approved["decision"]["by"] == "bob"
    await eventually(lambda: runtime.broker.get(request_id).state == State.succeeded)


async def test_an_auto_approve_rule_never_stands_in_for_the_two_operators(console):
    policy = ABOVE + (
        "```policy\nauto_approve:\n  - name: searches\n    when:\n"
        "      endpoints: [ep_websearch_basic]\n```\n"
    )
    runtime, tokens = await console(policy)
    request_id = await asked(runtime, tokens)  # pending, not auto-approved
    request = runtime.broker.get(request_id)
    assert request.decision is None and request.verdict.outcome == "ask"
    assert [c.rule for c in request.verdict.citations if c.effect == "ask"] == ["two_person"]
    # Without the rule, the same request is the auto-approve rule's.
    (runtime.paths.home / "SKILLS.md").write_text(policy.replace(ABOVE, ""))
    await eventually(lambda: runtime.broker.policy.two_person_above_usdc is None)
    later = await asked(runtime, tokens, State.succeeded)
    assert runtime.broker.get(later).decision.by.startswith("policy: ")


async def test_an_approval_naming_no_operator_is_refused_above_the_amount(console):
    runtime, tokens = await console(ABOVE)
    request_id = await asked(runtime, tokens)
    # The TUI without settings.toml [operator] name decides as no one in particular.
    with pytest.raises(errors.SecondOperatorRequired, match=r"\[operator\] name"):
        await runtime.broker.approve(ApproveParams(request_id=request_id))
    # With the setting, the TUI's approval counts as that operator's.
    runtime.broker.decisions.console_operator = "carol"
    await runtime.broker.approve(ApproveParams(request_id=request_id))
    async with operator(runtime) as line:
        approved = await approve(line, request_id, "bob", tokens)
    assert approved["decision"]["by"] == "carol, bob"
