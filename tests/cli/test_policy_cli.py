"""`svc-console policy check / explain / simulate / schema` as authors run them, and `serve
--policy FILE`. Simulate replays a ledger seeded through the ledger's own API."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from decimal import Decimal
from pathlib import Path

import jsonschema
import pytest

from svc_console.cli import main
from svc_console.config.credentials import Credentials, WalletConnection
from svc_console.config.paths import Paths, resolve_paths
from svc_console.core.models import (
    Decision,
    EndpointRecord,
    Estimate,
    Outcome,
    Receipt,
    SpendRequest,
    Verdict,
)
from svc_console.core.money import to_atomic
from svc_console.core.states import State
from svc_console.core.usage import UsageCharge, UsageFilter
from svc_console.ledger import Ledger, catalogue_store
from svc_console.ledger.usage_query import totals as usage_totals
from svc_console.ledger.usage_write import sync_usage
from svc_console.sandbox.catalog import catalog

CLI = [sys.executable, "-m", "svc_console"]
EXAMPLES = Path(__file__).resolve().parents[2] / "policies"


def write(folder: Path, text: str, name: str = "draft.md") -> str:
    path = folder / name
    path.write_text(text)
    return str(path)


def test_check_prints_a_summary_and_exits_0(home, capsys):
    assert main(["policy", "check", str(EXAMPLES / "research-team.md")]) == 0
    out = capsys.readouterr().out
    assert "research-team.md: valid · 4 blocks · sha256 " in out
    assert "auto-approve 'small verified searches'" in out
    assert "budget 'daily allowance', day per agent: warn 4.00, stop 5.00 USDC" in out


def test_check_prints_every_error_with_file_line_column_and_exits_1(home, capsys):
    draft = write(
        home,
        "# Draft\n\n```policy\nper_call_max_usdc: two\nbudgets:\n  - window: daily\n"
        "    max_usdc: 1\ndeny:\n  chainz: [base]\n```\n",
    )
    assert main(["policy", "check", draft]) == 1
    captured = capsys.readouterr()
    assert captured.out.splitlines() == [
        f'{draft}:4:1: per_call_max_usdc must be a number of USDC, got "two"',
        f'{draft}:6:5: budgets[0].window must be one of hour, day, week or month, got "daily"',
        f'{draft}:9:3: unknown key "chainz" (did you mean "chains"?)',
    ]
    assert "3 errors; nothing was loaded" in captured.err


def test_check_in_a_subprocess_exits_as_documented(home):
    good = subprocess.run(
        [*CLI, "policy", "check", str(EXAMPLES / "finance-locked.md")],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert good.returncode == 0 and "valid" in good.stdout
    bad = subprocess.run(
        [*CLI, "policy", "check", write(home, "no rules at all\n")],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert bad.returncode == 1 and ":1:1: no policy block found" in bad.stdout
    assert "Traceback" not in bad.stderr


def test_explain_shows_the_verdict_the_rules_and_the_budgets(home, capsys):
    request = json.dumps(
        {"agent": "research-bot", "endpoint_id": "ep_websearch_basic", "inputs": {"query": "x"}}
    )
    policy = str(EXAMPLES / "research-team.md")
    assert main(["policy", "explain", policy, "--request", request]) == 0
    out = capsys.readouterr().out
    assert out.startswith("verdict: auto_approve\n")
    assert "auto_approve small verified searches (research-team.md:" in out
    assert "daily allowance: research-bot: 0.00 → 0.01 USDC (stop 5.00, warn 4.00)" in out

    scrape = json.dumps(
        {"agent": "research-bot", "endpoint_id": "ep_scrape_page", "inputs": {"url": "mail a@b.co"}}
    )
    assert main(["policy", "explain", policy, "--request", scrape, "--json"]) == 0
    verdict = json.loads(capsys.readouterr().out)
    assert verdict["outcome"] == "deny"
    assert [c["rule"] for c in verdict["citations"] if c["effect"] == "deny"] == ["never_send"]


def test_explain_judges_an_agent_that_proved_no_name_as_the_policy_would(home, capsys):
    request = {"agent": "research-bot", "endpoint_id": "ep_websearch_basic", "inputs": {"q": 1}}
    policy = str(EXAMPLES / "research-team.md")
    unverified = json.dumps({**request, "agent_verified": False})
    assert main(["policy", "explain", policy, "--request", unverified]) == 0
    out = capsys.readouterr().out
    assert out.startswith("verdict: ask\n")  # research-* names registered agents only
    assert "daily allowance: (unverified): 0.00 → 0.01 USDC" in out


def test_explain_takes_a_spend_get_answer_and_refuses_unknown_keys(home, capsys, tmp_path):
    record = catalog().get("ep_fx_rates").model_dump(mode="json")
    answer = {
        "id": "req_1",
        "state": "pending",
        "agent": "treasury-bot",
        "kind": "market_call",
        "endpoint_id": "ep_fx_rates",
        "inputs": {"symbol": "EURUSD"},
        "purpose": "rates",
        "endpoint": record,
        "estimate": {"amount_usdc": "0.05", "chain": "tempo", "protocol": "mpp"},
        "verdict": None,
    }
    saved = tmp_path / "request.json"
    saved.write_text(json.dumps(answer))
    policy = str(EXAMPLES / "finance-locked.md")
    at = "2026-11-18T10:00:00+00:00"  # a Wednesday, within London business hours
    assert main(["policy", "explain", policy, "--request", f"@{saved}", "--at", at]) == 0
    assert "verdict: auto_approve" in capsys.readouterr().out
    assert (
        main(["policy", "explain", policy, "--request", f"@{saved}", "--at", "2026-11-21T10:00"])
        == 0
    )
    assert "denied by hours" in capsys.readouterr().out  # a Saturday

    assert main(["policy", "explain", policy, "--request", '{"agnet": "x"}']) == 2
    assert "unknown keys: agnet" in capsys.readouterr().err
    assert main(["policy", "explain", policy, "--request", "{not json"]) == 2
    assert "not valid JSON" in capsys.readouterr().err


SERVICE = "https://svc.example"
SYNCED_AT = 1_794_996_000.0  # 2026-11-18 10:00 UTC


def _configure_service(paths: Paths, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A real service configured (base URL, API key, wallet connection), its ledger holding a
    catalogue cache of one endpoint: the sandbox's web search, at 0.04 USDC rather than 0.01."""
    wallet = paths.home / "wallet.json"
    Credentials(paths, backend=None, connection_file=wallet).save_connection(
        WalletConnection(username="ops", api_base="https://wallet.example", api_token="tok_test")
    )
    monkeypatch.setenv("SVC_BASE_URL", SERVICE)
    monkeypatch.setenv("SVC_API_KEY", "sk_test_key")
    monkeypatch.setenv("SVC_WALLET_CONFIG", str(wallet))
    search = catalog().get("ep_websearch_basic").model_dump(mode="json")
    search["pricing"]["amountUsdc"] = "0.04"
    ledger = paths.ledger(sandbox=False)
    Ledger(ledger).close()
    writer = catalogue_store.open_writer(ledger)
    try:
        catalogue_store.store(
            writer, [EndpointRecord.model_validate(search)], [], synced_at=SYNCED_AT
        )
    finally:
        writer.close()
    return ledger


def test_explain_against_a_service_reads_the_endpoint_from_the_catalogue_cache(
    paths, monkeypatch, capsys
):
    _configure_service(paths, monkeypatch)
    request = json.dumps(
        {"agent": "research-bot", "endpoint_id": "ep_websearch_basic", "inputs": {"query": "x"}}
    )
    policy = str(EXAMPLES / "research-team.md")
    assert main(["policy", "explain", policy, "--request", request]) == 0
    out = capsys.readouterr().out
    assert out.startswith("verdict: auto_approve\n")
    # The cached record's price, not the sandbox catalogue's 0.01.
    assert "daily allowance: research-bot: 0.00 → 0.04 USDC (stop 5.00, warn 4.00)" in out
    assert "(endpoint facts from the catalogue cache, synced 2026-11-18 10:00 UTC)" in out


def test_explain_against_a_service_refuses_an_endpoint_the_cache_lacks(paths, monkeypatch, capsys):
    ledger = _configure_service(paths, monkeypatch)
    before = _stored(ledger)
    # In the sandbox's catalogue, but not in the service's: the sandbox is not asked.
    request = json.dumps({"agent": "research-bot", "endpoint_id": "ep_scrape_page"})
    policy = str(EXAMPLES / "research-team.md")
    assert main(["policy", "explain", policy, "--request", request]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert (
        f"no endpoint ep_scrape_page in the catalogue cache of {SERVICE}: sync the catalogue"
        in captured.err
    )
    assert 'give its record as "endpoint"' in captured.err
    assert _stored(ledger) == before


def _stored(ledger: Path) -> tuple[bytes, bytes]:
    """What the ledger file and its write-ahead log hold (a read-only reader leaves an empty log
    behind, which holds nothing)."""
    wal = ledger.with_name(ledger.name + "-wal")
    return ledger.read_bytes(), wal.read_bytes() if wal.exists() else b""


def test_schema_is_a_json_schema_of_a_policy_block(home, capsys):
    assert main(["policy", "schema"]) == 0
    schema = json.loads(capsys.readouterr().out)
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["additionalProperties"] is False
    assert {"per_call_max_usdc", "budgets", "auto_approve", "never_send"} <= set(
        schema["properties"]
    )


# -- simulate ----------------------------------------------------------------------------------

HOUR = 3600.0


def _seed(ledger: Ledger, now: float) -> None:
    """Six requests of the last hours: what really happened to each is in its comment."""
    market = catalog()

    def request(rid: str, at: float, agent: str, endpoint_id: str, estimate: Estimate, verdict):
        endpoint = market.get(endpoint_id)
        ledger.insert_request(
            SpendRequest(
                id=rid,
                agent=agent,
                kind="market_call",
                endpoint_id=endpoint_id,
                inputs={"q": rid},
                purpose="seeded",
                state=State.received,
                created_at=at,
                updated_at=at,
            )
        )
        ledger.transition(rid, State.inspecting, at=at)
        learned = {"endpoint": endpoint, "estimate": estimate, "verdict": verdict}
        return learned

    def paid(rid: str, decision: Decision, target: State, learned: dict, charged: str, at: float):
        decision_id = ledger.decide(rid, decision, target, **learned)
        execution = ledger.start_execution(rid, decision_id, 1, f"{rid}-1", at)
        outcome = Outcome(
            status=200,
            content_type="application/json",
            body="{}",
            charged_usdc=charged,
            chain="base",
            receipt=Receipt(
                protocol="x402", network="base", transaction="0x1", idempotency_key=f"{rid}-1"
            ),
        )
        ledger.finish_execution(execution, State.succeeded, at=at, outcome=outcome)

    search = Estimate(amount_usdc="0.01", chain="base", protocol="x402")
    scrape = Estimate(
        amount_usdc="0.02", min_usdc="0.02", max_usdc="0.10", chain="base", protocol="x402"
    )
    fx = Estimate(amount_usdc="0.05", chain="tempo", protocol="mpp")
    ask = Verdict(outcome="ask", summary="the operator decides")

    at = now - 6 * HOUR  # r1: searched, approved by the old policy's rule, charged 0.01
    learned = request(
        "r1",
        at,
        "research-bot",
        "ep_websearch_basic",
        search,
        Verdict(outcome="auto_approve", summary="old rule", rules=["old"]),
    )
    paid(
        "r1",
        Decision(approved=True, by="policy: auto_approve 'old'", at=at, ceiling_usdc="0.01"),
        State.auto_approved,
        learned,
        "0.01",
        at,
    )
    at = now - 5 * HOUR  # r2: scraped, approved by the operator, charged 0.05
    learned = request("r2", at, "research-bot", "ep_scrape_page", scrape, ask)
    ledger.transition("r2", State.pending, at=at, expires_at=at + 900, **learned)
    paid(
        "r2",
        Decision(approved=True, by="operator", at=at, ceiling_usdc="0.10"),
        State.approved,
        {},
        "0.05",
        at,
    )
    at = now - 4 * HOUR  # r3: scrape, denied by the operator
    learned = request("r3", at, "research-bot", "ep_scrape_page", scrape, ask)
    ledger.transition("r3", State.pending, at=at, expires_at=at + 900, **learned)
    ledger.decide("r3", Decision(approved=False, by="operator", at=at, note="no"), State.denied)
    at = now - 3 * HOUR  # r4: FX rate, nobody answered
    learned = request("r4", at, "treasury-bot", "ep_fx_rates", fx, ask)
    ledger.transition("r4", State.pending, at=at, expires_at=at + 900, **learned)
    ledger.transition("r4", State.expired, at=at + 900)
    at = now - 2 * HOUR  # r5: search by an intern, approved by the operator, charged 0.01
    learned = request("r5", at, "intern-bot", "ep_websearch_basic", search, ask)
    ledger.transition("r5", State.pending, at=at, expires_at=at + 900, **learned)
    paid(
        "r5",
        Decision(approved=True, by="operator", at=at, ceiling_usdc="0.01"),
        State.approved,
        {},
        "0.01",
        at,
    )
    at = now - 1 * HOUR  # r6: search, denied by the old policy
    learned = request(
        "r6",
        at,
        "research-bot",
        "ep_websearch_basic",
        search,
        Verdict(outcome="deny", summary="denied by old"),
    )
    ledger.transition("r6", State.denied, at=at, reason="denied by old", **learned)


SERVICE = "sandbox-0000000000000001"  # the identity the charges were listed under

DRAFT = """# Draft

```policy
deny:
  domain_types: [A8]
budgets:
  - {name: team day, window: day, max_usdc: 0.06}
auto_approve:
  - name: fx polling
    when: {endpoints: [ep_fx_rates], max_usdc: 0.05}
```
"""


@pytest.fixture
def seeded(home) -> Path:
    paths = resolve_paths()
    ledger = Ledger(paths.ledger(sandbox=True))
    try:
        _seed(ledger, time.time())
        ledger.db.execute(  # one request outside the period: replayed only to warm the budgets
            "UPDATE requests SET created_at = created_at - 40 * 86400 WHERE id = 'r6'"
        )
    finally:
        ledger.close()
    return home


def test_simulate_replays_the_ledger_and_says_what_would_change(seeded, capsys):
    draft = write(seeded, DRAFT)
    assert main(["policy", "simulate", draft, "--since", "30d", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["replayed"] == 5
    assert [(c["request_id"], c["was"]) for c in report["newly_denied"]] == [
        ("r2", "approved"),
        ("r3", "operator_denied"),
        ("r5", "approved"),  # the draft's day budget is spent by then
    ]
    assert [c["request_id"] for c in report["newly_auto_approved"]] == ["r4"]
    assert [c["request_id"] for c in report["now_asks_operator"]] == ["r1"]
    assert report["usdc_moved_actual"] == "0.07"
    assert report["usdc_moved_draft"] == "0.06"  # r1 0.01 and r4 at its 0.05 estimate
    assert report["usdc_difference"] == "-0.01"
    (hit,) = report["budgets_hit"]
    # r2 and r3 (their 0.10 ceilings) and r5 would each pass it: every denying rule is counted.
    assert (
        hit["budget"] == "team day" and hit["denied"] == 3 and hit["rule"].startswith("budgets[0]")
    )

    assert main(["policy", "simulate", draft]) == 0
    text = capsys.readouterr().out
    assert text.startswith("replayed 5 requests of the last 30d against the draft")
    assert "would now be denied:" in text and "r2 research-bot ep_scrape_page" in text
    assert "USDC moved: 0.07 actually, 0.06 under the draft (difference -0.01)" in text


def test_the_simulation_counts_what_the_usage_history_counts(seeded, capsys):
    """USDC moved is read from the usage rows of the replayed requests, as the usage screen sums
    them, a second version of a charge kept beside the first included; a request whose charge is
    not synced yet counts its execution's own figure until it is."""
    paths = resolve_paths()
    ledger = Ledger(paths.ledger(sandbox=True))
    try:

        def charged(charge_id: str, rid: str, amount: str) -> UsageCharge:
            return UsageCharge.model_validate(
                {
                    "id": charge_id,
                    "createdAt": time.time(),
                    "resourceId": "ep_websearch_basic",
                    "chain": "base",
                    "protocol": "x402",
                    "amountUsdc": amount,
                    "idempotencyKey": f"{rid}-1",
                }
            )

        sync_usage(ledger, [charged("ch_1", "r1", "0.01")], service=SERVICE)
        draft = write(seeded, DRAFT)
        assert main(["policy", "simulate", draft, "--since", "30d", "--json"]) == 0
        # r1 from its usage row, r2 and r5 from their executions until they are synced.
        assert json.loads(capsys.readouterr().out)["usdc_moved_actual"] == "0.07"

        synced = [charged("ch_2", "r2", "0.05"), charged("ch_5", "r5", "0.01")]
        sync_usage(ledger, synced, service=SERVICE)
        kept = sync_usage(ledger, [charged("ch_2", "r2", "0.06")], service=SERVICE)
        assert kept.conflicts == 1  # the same charge id with another amount, kept beside
        usage = usage_totals(ledger.db.conn, UsageFilter())
    finally:
        ledger.close()
    assert main(["policy", "simulate", draft, "--since", "30d", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert usage.amount == to_atomic(Decimal(report["usdc_moved_actual"])) == 130_000  # 0.13


def test_simulate_refuses_a_bad_period_and_a_missing_ledger(home, capsys):
    draft = write(home, DRAFT)
    assert main(["policy", "simulate", draft, "--since", "soon"]) == 2
    assert "--since must be a period" in capsys.readouterr().err
    assert main(["policy", "simulate", draft]) == 1
    assert "no ledger at" in capsys.readouterr().err


def test_serve_with_a_policy_option_puts_it_in_force(home):
    policy = write(home, "```policy\ndeny:\n  domain_types: [A7]\n```\n", "team.md")
    server = subprocess.Popen(
        [*CLI, "serve", "--policy", policy],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert "broker on" in server.stdout.readline()
        submitted = subprocess.run(
            [
                *CLI,
                "agent",
                "submit",
                "--endpoint",
                "ep_websearch_basic",
                "--inputs",
                '{"query": "x"}',
                "--purpose",
                "p",
                "--wait",
            ],
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert submitted.returncode == 3, submitted.stderr  # denied
        assert "deny.domain_types (team.md:3)" in submitted.stdout
    finally:
        server.terminate()
        server.wait(timeout=15)
