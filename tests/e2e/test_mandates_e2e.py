"""Every approval produces a mandate, whoever makes it: the operator pressing `a` in the TUI, a
grant, a policy rule, the two-person rule's second operator. Each is printed by
`svc-console approvals show ID --mandate` as the ledger keeps it, passes `svc-console mandate
verify` as printed, and fails it, in one line, once edited."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from helpers import SEARCH, FakeClock, eventually, operator, runtime_ledger
from tui_support import build_console, rows, started, until

from svc_console.agent import AsyncAgent
from svc_console.broker import BrokerConfig
from svc_console.broker.params import ApproveParams
from svc_console.cli.entry import main
from svc_console.config.operator_accounts import OperatorAccounts
from svc_console.core.mandate import inputs_digest
from svc_console.core.models import Decision, Estimate, SpendRequest
from svc_console.core.states import FINAL, State
from svc_console.runtime import Runtime
from svc_console.sandbox.catalog import WEBSEARCH_ID, catalog
from svc_console.sandbox.x402 import SANDBOX_PAY_TO

EVIL = "0xdEaD000000000000000000000000000000bEEf01"
RULE = """# SKILLS.md

```policy
auto_approve:
  - name: small searches
    when:
      domain_types: [A7]
      max_usdc: 0.05
```
"""
TWO_PERSON = "```policy\ntwo_person:\n  above_usdc: 0.005\n```\n"


def shown_mandate(request_id: str, capsys: pytest.CaptureFixture[str]) -> tuple[str, dict]:
    """What `approvals show ID --mandate` prints, and it read as JSON."""
    capsys.readouterr()
    assert main(["approvals", "show", request_id, "--mandate"]) == 0
    printed = capsys.readouterr().out
    return printed, json.loads(printed)


def verify(path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(["mandate", "verify", str(path)])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def verified_and_edited(
    request_id: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> dict:
    """The printed mandate passes `mandate verify` as printed and fails once its recipient is
    edited; returns it."""
    printed, mandate = shown_mandate(request_id, capsys)
    copy = tmp_path / f"{request_id}.json"
    copy.write_text(printed)
    code, out, err = verify(copy, capsys)
    assert code == 0, err
    digest = hashlib.sha256(
        json.dumps(mandate, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    ).hexdigest()
    assert out.startswith(f"mandate of {request_id} verified: sha256 {digest} is the one")
    edited = tmp_path / f"{request_id}-edited.json"
    edited.write_text(json.dumps({**mandate, "recipient": EVIL}, indent=2))
    code, out, err = verify(edited, capsys)
    assert code == 1 and out == ""
    assert err.startswith(f"svc-console: this is not the mandate approved for {request_id}")
    assert err.endswith("the copy was edited\n") and err.count("\n") == 1
    return mandate


async def pending_search(runtime: Runtime, **overrides: Any) -> str:
    """A web search submitted by agent `bot`, once it waits for the operator."""
    async with AsyncAgent("bot", runtime.paths.socket) as agent:
        ticket = await agent.submit(**{**SEARCH, "purpose": "research", **overrides})
    await eventually(lambda: runtime.broker.get(ticket["request_id"]).state == State.pending)
    return ticket["request_id"]


async def finished(runtime: Runtime, request_id: str) -> Any:
    request = await eventually(lambda: (r := runtime.broker.get(request_id)).state in FINAL and r)
    await runtime.ledger.committed()
    return request


@pytest.mark.engines("sqlite")  # the CLI reads the sandbox's ledger from its file
async def test_the_operators_approval_in_the_tui(
    make_runtime: Callable[..., Runtime],
    clock: FakeClock,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
):
    app = build_console(make_runtime, clock)
    async with app.run_test(size=(120, 40)) as pilot:
        await started(pilot)
        async with AsyncAgent("analyst", app.runtime.paths.socket) as agent:
            ticket = await agent.submit(
                kind="dataset", dataset_id="ds_news_headlines_2024", inputs={}, purpose="news"
            )
        request_id = ticket["request_id"]
        await rows(pilot, 1)
        await until(pilot, lambda: app.runtime.broker.get(request_id).state == State.pending)
        await pilot.press("a")
        await until(pilot, lambda: app.runtime.broker.get(request_id).state == State.succeeded)
        await app.runtime.ledger.committed()
    # Read once the console has stopped (the app holds the terminal while it runs).
    mandate = verified_and_edited(request_id, tmp_path, capsys)
    assert mandate["request_id"] == request_id and mandate["kind"] == "dataset"
    assert (mandate["agent"], mandate["agent_verified"]) == ("analyst", False)
    assert (mandate["recipient"], mandate["network"], mandate["scheme"]) == (
        SANDBOX_PAY_TO,
        "eip155:8453",
        "exact",
    )
    assert (mandate["max_usdc"], mandate["exact"], mandate["signed_by"]) == (
        "0.25",
        False,
        "console",
    )
    [decider] = mandate["deciders"]
    assert decider["evidence"]["channel"] == "tui" and mandate["policy_sha256"] is None
    assert mandate["inputs_sha256"] == inputs_digest({})


@pytest.mark.engines("sqlite")  # the CLI reads the sandbox's ledger from its file
async def test_a_grants_approval(
    make_runtime: Callable[..., Runtime],
    keep_started: Any,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
):
    runtime = await keep_started(make_runtime())
    first = await pending_search(runtime)
    await runtime.broker.approve(
        ApproveParams(request_id=first, grant_for="1h", grant_total=Decimal("0.05"))
    )
    async with AsyncAgent("bot", runtime.paths.socket) as agent:
        second = (
            await agent.submit(**{**SEARCH, "inputs": {"query": "wind"}}, purpose="research")
        )["request_id"]
    assert (await finished(runtime, second)).state == State.succeeded
    mandate = verified_and_edited(second, tmp_path, capsys)
    [decider] = mandate["deciders"]
    assert decider["evidence"]["channel"] == "grant" and decider["by"].startswith("grant ")
    assert (mandate["signed_by"], mandate["recipient"], mandate["scheme"]) == (
        "wallet_proxy",
        None,
        "x402/fetch",
    )
    assert mandate["provider"] == "prov_searchly" and mandate["max_usdc"] == "0.01"


@pytest.mark.engines("sqlite")  # the CLI reads the sandbox's ledger from its file
async def test_a_policy_rules_approval_names_the_policy(
    paths: Any,
    sandbox: Any,
    keep_started: Any,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
):
    paths.home.mkdir(parents=True, exist_ok=True)
    (paths.home / "SKILLS.md").write_text(RULE)
    runtime = await keep_started(Runtime(paths=paths, sandbox=sandbox, config=BrokerConfig()))
    async with AsyncAgent("bot", runtime.paths.socket) as agent:
        request_id = (await agent.submit(**SEARCH, purpose="research"))["request_id"]
    request = await finished(runtime, request_id)
    assert request.state == State.succeeded
    mandate = verified_and_edited(request_id, tmp_path, capsys)
    [decider] = mandate["deciders"]
    assert decider["by"] == "policy: auto_approve 'small searches' (SKILLS.md:5)"
    assert decider["evidence"]["channel"] == "policy"
    assert mandate["policy_sha256"] == request.verdict.policy_sha256
    assert len(mandate["policy_sha256"]) == 64
    assert mandate["valid_until"] > mandate["approved_at"]


@pytest.mark.engines("sqlite")  # the CLI reads the sandbox's ledger from its file
async def test_the_two_person_rules_second_approval_names_both(
    paths: Any,
    sandbox: Any,
    keep_started: Any,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
):
    accounts = OperatorAccounts(paths.operator_accounts)
    tokens = {name: accounts.add(name) for name in ("bob", "carol")}
    paths.home.mkdir(parents=True, exist_ok=True)
    (paths.home / "SKILLS.md").write_text(TWO_PERSON)
    runtime = await keep_started(Runtime(paths=paths, sandbox=sandbox, config=BrokerConfig()))
    request_id = await pending_search(runtime, purpose="above the line")
    async with operator(runtime) as line:
        for name in ("bob", "carol"):
            params = {"request_id": request_id, "operator": name, "token": tokens[name]}
            await line.call("approvals.approve", params)
    assert (await finished(runtime, request_id)).state == State.succeeded
    mandate = verified_and_edited(request_id, tmp_path, capsys)
    assert [d["by"] for d in mandate["deciders"]] == ["bob", "carol"]
    assert [d["evidence"]["operator"] for d in mandate["deciders"]] == ["bob", "carol"]
    assert all(d["evidence"]["channel"] == "cli" for d in mandate["deciders"])


@pytest.mark.engines("sqlite")  # the CLI reads the sandbox's ledger from its file
async def test_show_and_verify_say_what_is_wrong_in_one_line(
    make_runtime: Callable[..., Runtime],
    keep_started: Any,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
):
    runtime = await keep_started(make_runtime())
    request_id = await pending_search(runtime)
    await runtime.ledger.committed()
    capsys.readouterr()
    assert main(["approvals", "show", request_id, "--mandate"]) == 2
    assert capsys.readouterr().err == f"svc-console: {request_id} has no approval with a mandate\n"
    assert main(["approvals", "show", "req_nope"]) == 2
    assert capsys.readouterr().err == "svc-console: no request req_nope in the ledger\n"
    assert main(["approvals", "show", request_id]) == 0
    out = capsys.readouterr().out
    assert "pays to   none in the quote: the wallet proxy pays Searchly itself" in out
    not_json = tmp_path / "not.json"
    not_json.write_text("{")
    code, _, err = verify(not_json, capsys)
    assert code == 2 and err.startswith(f"svc-console: {not_json} is not a mandate: ")
    code, _, err = verify(tmp_path / "missing.json", capsys)
    assert code == 2 and "cannot read" in err


@pytest.mark.engines("sqlite")  # the CLI reads the sandbox's ledger from its file
async def test_a_chain_that_does_not_verify_fails_every_mandate(
    make_runtime: Callable[..., Runtime],
    keep_started: Any,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
):
    runtime = await keep_started(make_runtime())
    request_id = await pending_search(runtime)
    await runtime.broker.approve(ApproveParams(request_id=request_id))
    await finished(runtime, request_id)
    printed, _ = shown_mandate(request_id, capsys)
    copy = tmp_path / "mandate.json"
    copy.write_text(printed)
    path = runtime.ledger.path
    await runtime.stop()
    with sqlite3.connect(path) as conn:  # an edit of the first event, as anyone with the file
        conn.execute("UPDATE events SET data = replace(data, 'bot', 'b0t') WHERE seq = 1")
    code, out, err = verify(copy, capsys)
    assert code == 1 and out == ""
    assert err.startswith("svc-console: the ledger's audit chain does not verify (event 1: ")
    assert err.endswith("no mandate can be checked against it\n")


async def test_an_approval_made_before_mandates_goes_back_to_the_operator_unpaid(
    paths: Any, sandbox: Any, make_runtime: Callable[..., Runtime], keep_started: Any
):
    """A ledger from an earlier version holds an approval with no mandate, not yet executed:
    the console started on it signs nothing and asks the operator again."""
    record = catalog().get(WEBSEARCH_ID)
    paths.home.mkdir(parents=True, exist_ok=True)
    ledger = runtime_ledger(paths)
    try:
        ledger.insert_request(
            SpendRequest(
                id="req_old",
                agent="bot",
                kind="market_call",
                endpoint_id=WEBSEARCH_ID,
                inputs={"query": "solar"},
                purpose="research",
                state=State.received,
                created_at=1.0,
                updated_at=1.0,
            )
        )
        ledger.transition("req_old", State.inspecting, at=1.0)
        estimate = Estimate(amount_usdc="0.01", chain="base", protocol="x402")
        ledger.transition(
            "req_old", State.pending, at=1.0, expires_at=10**10, endpoint=record, estimate=estimate
        )
        decision = Decision(approved=True, by="operator", at=2.0, ceiling_usdc=Decimal("0.01"))
        ledger.decide("req_old", decision, State.approved)  # no mandate: as before them
    finally:
        ledger.close()
    runtime = await keep_started(make_runtime())
    request = await eventually(
        lambda: (r := runtime.broker.get("req_old")).state == State.pending and r
    )
    assert request.reason.startswith("this approval was made before mandates")
    assert "nothing was signed" in request.reason
    assert sandbox.state.charges == []
