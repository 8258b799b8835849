"""Policies in the broker, end to end: a real SKILLS.md, the Unix socket, the SQLite ledger and the
sandbox over HTTP. Auto-approval recorded as the rule's decision before anything is paid; denials;
the operator deciding by default; budget reservations that concurrent requests cannot pass
together, released on every way a request can end unpaid and settled at what was charged; totals
that survive a restart; the policy's confirmation threshold and pending lifetime."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from decimal import Decimal
from pathlib import Path

import pytest
from helpers import eventually

from svc_console.agent import AgentError, AsyncAgent
from svc_console.broker import BrokerConfig
from svc_console.broker.errors import BlockedByPolicy, ConfirmationRequired
from svc_console.broker.params import ApproveParams
from svc_console.core.states import State
from svc_console.ledger import budgets as ledger_budgets
from svc_console.ledger import policy_versions
from svc_console.runtime import Runtime

SEARCH = {"endpoint_id": "ep_websearch_basic", "purpose": "research"}  # 0.01 USDC, A7, verified
SEARCHES_CAPPED = """# SKILLS.md

Small searches go through on their own, five cents a day in all.

```policy
auto_approve:
  - name: small searches
    when:
      domain_types: [A7]
      max_usdc: 0.05
budgets:
  - name: daily
    window: day
    max_usdc: 0.05
```
"""


@pytest.fixture
def start(paths, sandbox, keep_started) -> Callable[..., Awaitable[Runtime]]:
    """Start a runtime with `text` as its SKILLS.md (None: leave the file as it is); whatever a
    test leaves running is stopped after it."""

    async def run(text: str | None, **config) -> Runtime:
        if text is not None:
            paths.home.mkdir(parents=True, exist_ok=True)
            (paths.home / "SKILLS.md").write_text(text)
        return await keep_started(
            Runtime(paths=paths, sandbox=sandbox, config=BrokerConfig(**config))
        )

    return run


async def submit(runtime: Runtime, agent: str = "research-bot", **overrides) -> dict:
    async with AsyncAgent(agent, runtime.paths.socket) as client:
        return await client.submit(**{**SEARCH, "inputs": {"query": "solar"}, **overrides})


async def outcome(runtime: Runtime, request_id: str) -> dict:
    # A request is its agent's alone to wait on.
    agent = runtime.broker.get(request_id).agent
    async with AsyncAgent(agent, runtime.paths.socket) as client:
        return await client.wait_for_outcome(request_id, timeout_s=20)


def totals(runtime: Runtime, scope: str = "overall") -> tuple[int, int]:
    """(reserved, settled) in atomic USDC, from the ledger's running totals."""
    row = runtime.ledger.db.execute(
        "SELECT coalesce(sum(reserved_usdc), 0), coalesce(sum(settled_usdc), 0)"
        " FROM budget_totals WHERE grain = 60 AND scope = ?",
        [scope],
    ).fetchone()
    return row[0], row[1]


def line_of(text: str, words: str) -> int:
    return next(n for n, line in enumerate(text.splitlines(), 1) if words in line)


RULE_LINE = line_of(SEARCHES_CAPPED, "- name: small searches")
BUDGET_LINE = line_of(SEARCHES_CAPPED, "- name: daily")


async def state_of(runtime: Runtime, request_id: str, state: State):
    return await eventually(lambda: (r := runtime.broker.get(request_id)).state == state and r)


async def test_without_a_policy_file_the_operator_decides(start):
    runtime = await start(None)
    assert runtime.policy.status.state == "none"
    ticket = await submit(runtime)
    request = await state_of(runtime, ticket["request_id"], State.pending)
    assert request.verdict.outcome == "ask" and request.decision is None


async def test_auto_approval_is_the_rules_decision_committed_before_payment(start, sandbox):
    runtime = await start(SEARCHES_CAPPED)
    ticket = await submit(runtime)
    done = await outcome(runtime, ticket["request_id"])
    assert done["state"] == "succeeded"
    decision = done["decision"]
    assert decision["approved"] is True
    assert decision["by"] == f"policy: auto_approve 'small searches' (SKILLS.md:{RULE_LINE})"
    events = [e["type"] for e in runtime.ledger.events(ticket["request_id"])]
    assert events.index("auto_approved") < events.index("executing")
    # spend.get shows the verdict whole: the deciding rule and the budget before and after.
    verdict = done["verdict"]
    assert verdict["rules"] == [f"auto_approve 'small searches' (SKILLS.md:{RULE_LINE})"]
    cited = {"effect": "auto_approve", "rule": "small searches", "file": "SKILLS.md"}
    assert cited.items() <= verdict["citations"][0].items()
    assert verdict["citations"][0]["line"] == RULE_LINE
    (budget,) = verdict["budgets"]
    assert (budget["budget"], budget["before_usdc"], budget["after_usdc"]) == (
        "daily",
        "0.00",
        "0.01",
    )
    assert (budget["max_usdc"], budget["line"]) == ("0.05", BUDGET_LINE)
    # Settled at what was charged, nothing left reserved.
    assert totals(runtime) == (0, 10_000)
    reservation = ledger_budgets.reservation(runtime.ledger.db, ticket["request_id"])
    assert reservation["state"] == "settled" and reservation["settled_usdc"] == 10_000
    assert sandbox.state.executions_count() == 1


async def test_a_policy_deny_ends_the_request_and_names_the_rule(start, sandbox):
    runtime = await start("```policy\ndeny:\n  providers: [prov_search*]\n```\n")
    ticket = await submit(runtime)
    done = await outcome(runtime, ticket["request_id"])
    assert done["state"] == "denied"
    assert done["reason"].startswith("denied by deny.providers (SKILLS.md:3)")
    assert done["decision"] is None and sandbox.state.executions_count() == 0


async def test_concurrent_requests_cannot_pass_a_cap_together(start, sandbox):
    runtime = await start(SEARCHES_CAPPED)
    tickets = await asyncio.gather(
        *(submit(runtime, f"bot-{n % 4}", inputs={"query": f"q{n}"}) for n in range(20))
    )
    finals = await asyncio.gather(*(outcome(runtime, t["request_id"]) for t in tickets))
    approved = [f for f in finals if f["decision"] and f["decision"]["approved"]]
    denied = [f for f in finals if f["state"] == "denied"]
    assert len(approved) == 5 and len(denied) == 15
    assert all(f["state"] == "succeeded" for f in approved)
    assert all(
        f["reason"].startswith(f"denied by budgets[0] (SKILLS.md:{BUDGET_LINE})") for f in denied
    )
    assert sum(Decimal(f["outcome"]["charged_usdc"]) for f in approved) <= Decimal("0.05")
    assert sandbox.state.executions_count() == 5
    assert totals(runtime) == (0, 50_000)


async def test_a_failed_call_releases_its_reservation(start, sandbox):
    runtime = await start("```policy\nper_call_max_usdc: 1\n```\n")
    ticket = await submit(runtime)
    await state_of(runtime, ticket["request_id"], State.pending)
    sandbox.state.faults.add("error", routes="proxy", count=1)
    await runtime.broker.approve(ApproveParams(request_id=ticket["request_id"]))
    await state_of(runtime, ticket["request_id"], State.failed)
    assert totals(runtime) == (0, 0)
    assert (
        ledger_budgets.reservation(runtime.ledger.db, ticket["request_id"])["state"] == "released"
    )


async def test_a_cancel_while_awaiting_funds_releases_the_reservation(start, sandbox):
    runtime = await start("```policy\nper_call_max_usdc: 1\n```\n")
    sandbox.state.set_balance(Decimal(0))
    ticket = await submit(runtime)
    await state_of(runtime, ticket["request_id"], State.pending)
    await runtime.broker.approve(ApproveParams(request_id=ticket["request_id"]))
    await state_of(runtime, ticket["request_id"], State.awaiting_funds)
    assert totals(runtime) == (10_000, 0)  # approved, not yet paid: reserved
    await runtime.broker.cancel(ticket["request_id"])
    assert totals(runtime) == (0, 0)


async def test_a_repriced_call_releases_and_the_new_approval_reserves_again(start, sandbox):
    runtime = await start("```policy\nper_call_max_usdc: 1\n```\n")
    ticket = await submit(runtime)
    await state_of(runtime, ticket["request_id"], State.pending)
    sandbox.state.faults.add("reprice", routes="proxy", count=1, factor=3)
    await runtime.broker.approve(ApproveParams(request_id=ticket["request_id"]))
    await eventually(lambda: runtime.broker.get(ticket["request_id"]).reason)
    repriced = await state_of(runtime, ticket["request_id"], State.pending)
    assert "nothing was paid" in repriced.reason
    assert totals(runtime) == (0, 0)
    await runtime.broker.approve(
        ApproveParams(request_id=ticket["request_id"], confirm_amount=Decimal("0.03"))
    )
    assert totals(runtime) == (30_000, 0)  # the new approval reserves its new ceiling
    done = await state_of(runtime, ticket["request_id"], State.succeeded)
    assert totals(runtime) == (0, int(done.outcome.charged_usdc * 1_000_000))


async def test_the_operator_cannot_approve_past_a_budget_spent_meanwhile(start):
    runtime = await start(
        "```policy\nbudgets:\n  - {per: agent, window: day, max_usdc: 0.01}\n```\n"
    )
    first = await submit(runtime, inputs={"query": "one"})
    second = await submit(runtime, inputs={"query": "two"})
    await state_of(runtime, first["request_id"], State.pending)
    await state_of(runtime, second["request_id"], State.pending)
    await runtime.broker.approve(ApproveParams(request_id=first["request_id"]))
    with pytest.raises(BlockedByPolicy, match=r"budgets\[0\] \(SKILLS.md:3\)"):
        await runtime.broker.approve(ApproveParams(request_id=second["request_id"]))
    assert runtime.broker.get(second["request_id"]).state == State.pending
    # Over the socket, the operator hears why, with a reason word.
    from helpers import operator
    from operator_support import PASSPHRASE

    runtime.passphrase.set(PASSPHRASE)  # agents of this user are accepted: it is needed
    async with operator(runtime) as line:
        with pytest.raises(AgentError) as refused:
            said = {"request_id": second["request_id"], "passphrase": PASSPHRASE}
            await line.call("approvals.approve", said)
    assert refused.value.reason == "blocked_by_policy"


async def test_the_policy_sets_the_confirmation_threshold_and_the_pending_lifetime(start):
    runtime = await start("```policy\nconfirm_above_usdc: 0.005\npending_lifetime: 2h\n```\n")
    ticket = await submit(runtime)
    request = await state_of(runtime, ticket["request_id"], State.pending)
    assert request.expires_at - request.updated_at == pytest.approx(7200)
    assert runtime.broker.confirmation_needed(request) == Decimal("0.01")
    with pytest.raises(ConfirmationRequired) as missing:
        await runtime.broker.approve(ApproveParams(request_id=ticket["request_id"]))
    assert str(missing.value) == "type the amount to approve: 0.01 USDC"
    wrong = ApproveParams(request_id=ticket["request_id"], confirm_amount=Decimal("0.1"))
    with pytest.raises(ConfirmationRequired) as mistyped:
        await runtime.broker.approve(wrong)
    assert str(mistyped.value) == "0.10 USDC is not the amount to approve; type: 0.01 USDC"
    assert runtime.broker.get(ticket["request_id"]).state == State.pending
    await runtime.broker.approve(
        ApproveParams(request_id=ticket["request_id"], confirm_amount=Decimal("0.01"))
    )


async def test_budget_totals_and_the_policy_version_survive_a_restart(start, sandbox):
    runtime = await start(SEARCHES_CAPPED)
    for n in range(3):
        ticket = await submit(runtime, inputs={"query": f"before {n}"})
        assert (await outcome(runtime, ticket["request_id"]))["state"] == "succeeded"
    await runtime.stop()

    again = await start(None)  # the same SKILLS.md, the same ledger file
    versions = policy_versions.history(again.ledger)
    assert len(versions) == 1 and versions[0].valid and versions[0].text == SEARCHES_CAPPED
    finals = []
    for n in range(3):
        ticket = await submit(again, inputs={"query": f"after {n}"})
        finals.append(await outcome(again, ticket["request_id"]))
    assert [f["state"] for f in finals] == ["succeeded", "succeeded", "denied"]
    assert finals[1]["verdict"]["budgets"][0]["before_usdc"] == "0.04"
    assert sandbox.state.executions_count() == 5


def test_the_sample_policy_path_is_documented(paths: object) -> None:
    from svc_console.config.policy_files import policy_files

    files, optional = policy_files(paths, env={})  # type: ignore[arg-type]
    assert optional and files == [Path(paths.home) / "SKILLS.md"]  # type: ignore[attr-defined]
    files, optional = policy_files(paths, ["a.md"], env={})  # type: ignore[arg-type]
    assert not optional and files[0].name == "a.md"
    settings = Path(paths.home) / "settings.toml"  # type: ignore[attr-defined]
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text('[policy]\nfiles = ["team.md"]\n')
    files, optional = policy_files(paths, env={})  # type: ignore[arg-type]
    assert files == [Path(paths.home) / "team.md"] and not optional  # type: ignore[attr-defined]
    files, _ = policy_files(paths, env={"SVC_CONSOLE_POLICY": "/x/one.md:/x/two.md"})  # type: ignore[arg-type]
    assert [f.name for f in files] == ["one.md", "two.md"]
