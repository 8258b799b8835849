"""`svc-console policy ...`: the policy author's commands.

- `check FILE...`: exit 0 and a summary of what the policy does, or every error as
  `file:line:col: message` and exit 1.
- `explain FILE --request JSON`: the verdict on one request and the rules that decided it, with
  the budgets as the ledger's running totals stand now.
- `simulate FILE [--since 30d]`: the ledger's past requests replayed against the draft.
- `schema`: the JSON Schema of policy blocks, for editors.

Heavy imports happen inside each command, so `svc-console --help` stays instant. Text that came
from a policy file or the ledger is printed through `inert_line`.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

# Keys of a `spend.get` answer that explain does not need; any other unknown key is an error.
_REQUEST_EXTRAS = frozenset(
    {
        "id",
        "state",
        "reason",
        "created_at",
        "updated_at",
        "expires_at",
        "risk",
        "verdict",
        "decision",
        "outcome",
        "skill",
        "funding_url",
        "idempotency_key",
        "purpose",
    }
)
_REQUEST_KEYS = frozenset(
    {"agent", "kind", "endpoint_id", "dataset_id", "inputs", "max_usdc"}
    | {"endpoint", "estimate", "dataset"}
)


def add_commands(commands: Any) -> None:
    policy = commands.add_parser(
        "policy", help="SKILLS.md policies: check, explain, simulate, schema"
    ).add_subparsers(title="policy commands", metavar="COMMAND", required=True)

    check = policy.add_parser("check", help="validate policy files; every error at its line")
    check.add_argument("files", nargs="+", metavar="FILE")
    check.set_defaults(run=run_check)

    explain = policy.add_parser("explain", help="the verdict on one request, and why")
    explain.add_argument("file", metavar="FILE")
    explain.add_argument(
        "--request",
        required=True,
        help='the request as JSON ({"agent", "endpoint_id", "inputs", "max_usdc", "endpoint",'
        ' "estimate", "dataset"}, or a spend.get answer); @PATH reads a file, - stdin',
    )
    explain.add_argument("--at", help="the time to judge at: ISO 8601 or epoch seconds")
    explain.add_argument(
        "--no-ledger", action="store_true", help="budgets start empty, not at the ledger's totals"
    )
    explain.add_argument("--json", action="store_true", help="print the verdict as JSON")
    explain.set_defaults(run=run_explain)

    simulate = policy.add_parser("simulate", help="replay past requests against a draft")
    simulate.add_argument("file", metavar="FILE")
    simulate.add_argument("--since", default="30d", help="how far back: 30d (default), 12h, 2w")
    simulate.add_argument("--json", action="store_true", help="print the report as JSON")
    simulate.set_defaults(run=run_simulate)

    schema = policy.add_parser("schema", help="the JSON Schema of policy blocks, for editors")
    schema.set_defaults(run=run_schema)


def _error(message: str, code: int = 1) -> Exception:
    from svc_console.cli import CommandError

    return CommandError(message, code)


def _load(files: list[str]) -> Any:
    """The policy, or its errors printed (one per line) and exit 1."""
    from svc_console.core.sanitize import inert_line
    from svc_console.policy.errors import PolicyInvalid
    from svc_console.policy.loader import load, read

    try:
        return load([read(Path(name), name) for name in files])
    except PolicyInvalid as exc:
        for error in exc.errors:
            print(inert_line(str(error), 400))
        count = len(exc.errors)
        raise _error(f"{count} error{'s' if count > 1 else ''}; nothing was loaded") from None


# -- check ----------------------------------------------------------------------------------


def run_check(args: argparse.Namespace) -> int:
    from svc_console.core.sanitize import inert_line

    loaded = _load(args.files)
    for line in summary(loaded):
        print(inert_line(line, 300))
    return 0


def summary(loaded: Any) -> list[str]:
    """What a valid policy does, in a few lines."""
    from svc_console.core.money import format_usdc
    from svc_console.policy.rules import LIST_KEYS

    rules = loaded.rules
    names = ", ".join(f.name for f in loaded.files)
    blocks = len(loaded.blocks)
    lines = [
        f"{names}: valid · {blocks} block{'s' if blocks > 1 else ''} · sha256 {loaded.sha256[:12]}"
    ]
    if rules.per_call_max_usdc is not None:
        lines.append(f"  per call: at most {format_usdc(rules.per_call_max_usdc)} USDC")
    for budget in rules.budgets:
        per = "overall" if budget.per == "overall" else f"per {budget.per}"
        only = f" for {', '.join(budget.for_)}" if budget.for_ else ""
        limits = []
        if budget.warn_usdc is not None:
            limits.append(f"warn {format_usdc(budget.warn_usdc)}")
        if budget.max_usdc is not None:
            limits.append(f"stop {format_usdc(budget.max_usdc)}")
        name = f"{budget.name!r}, " if budget.name else ""
        lines.append(f"  budget {name}{budget.window} {per}{only}: {', '.join(limits)} USDC")
    for side in ("deny", "allow"):
        lists = getattr(rules, side)
        for key in LIST_KEYS if lists is not None else ():
            entries = getattr(lists, key)
            if entries is not None:
                lines.append(f"  {side} {key}: {', '.join(entries) or '(none)'}")
    if rules.require is not None:
        required = rules.require.model_dump(mode="json", exclude_none=True)
        lines.append(f"  require: {_conditions(required)}")
    if rules.never_send or rules.never_send_patterns:
        kinds = [*(rules.never_send or []), *(rules.never_send_patterns or {})]
        lines.append(f"  never send: {', '.join(kinds)}")
    if rules.hours:
        lines.append(f"  hours: {'; '.join(rules.hours)} ({rules.timezone or 'UTC'})")
    if rules.compute_tools is not None:
        lines.append(f"  compute tools allowed: {', '.join(rules.compute_tools) or 'none'}")
    if rules.dynamic_pricing is False:
        lines.append("  dynamic pricing: denied")
    for rule in rules.auto_approve:
        conditions = _conditions(rule.when.model_dump(mode="json", exclude_none=True))
        own = f" (its own budgets: {len(rule.budgets)})" if rule.budgets else ""
        lines.append(f"  auto-approve {rule.name!r}: {conditions}{own}")
    if not rules.auto_approve:
        lines.append("  auto-approve: nothing (the operator decides what is not denied)")
    if rules.confirm_above_usdc is not None:
        lines.append(f"  typed confirmation above {format_usdc(rules.confirm_above_usdc)} USDC")
    if rules.pending_lifetime is not None:
        lines.append(f"  pending requests live {_duration(rules.pending_lifetime)}")
    return lines


def _conditions(values: dict[str, Any]) -> str:
    def shown(value: Any) -> str:
        if isinstance(value, list):
            return ", ".join(str(item) for item in value)
        return json.dumps(value) if isinstance(value, bool) else str(value)

    return "; ".join(f"{key} {shown(value)}" for key, value in values.items())


def _duration(seconds: int) -> str:
    for unit, size in (("d", 86_400), ("h", 3600), ("m", 60)):
        if seconds % size == 0:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


# -- explain --------------------------------------------------------------------------------


def run_explain(args: argparse.Namespace) -> int:
    from svc_console.policy.budgets import RollingTotals
    from svc_console.policy.engine import CompiledPolicy
    from svc_console.policy.verdicts import to_verdict

    loaded = _load([args.file])
    facts, note = request_facts(_read_json(args.request))
    now = _when(args.at)
    totals = RollingTotals() if args.no_ledger else _ledger_totals(now)
    policy = CompiledPolicy(loaded)
    verdict = to_verdict(policy.evaluate(facts, totals, now), policy.sha256)
    if args.json:
        print(json.dumps(verdict.model_dump(mode="json"), indent=2))
        return 0
    for line in explain_lines(verdict, policy, facts, note):
        print(line)
    return 0


def explain_lines(verdict: Any, policy: Any, facts: Any, note: str | None) -> list[str]:
    from svc_console.core.money import format_usdc, from_atomic
    from svc_console.core.sanitize import inert_line
    from svc_console.policy.facts import Facts

    assert isinstance(facts, Facts)
    lines = [f"verdict: {verdict.outcome}", f"  {inert_line(verdict.summary, 300)}"]
    if note:
        lines.append(f"  ({note})")
    if verdict.citations:
        lines.append("rules:")
        for cite in verdict.citations:
            where = f" ({cite.file}:{cite.line})" if cite.line else ""
            lines.append(inert_line(f"  {cite.effect:<12} {cite.rule}{where} · {cite.reason}", 300))
    if verdict.budgets:
        lines.append("budgets (reserved and settled, before → after this request):")
        for budget in verdict.budgets:
            limits = []
            if budget.max_usdc is not None:
                limits.append(f"stop {format_usdc(budget.max_usdc)}")
            if budget.warn_usdc is not None:
                limits.append(f"warn {format_usdc(budget.warn_usdc)}")
            text = (
                f"  {budget.budget}: {format_usdc(budget.before_usdc)} → "
                f"{format_usdc(budget.after_usdc)} USDC ({', '.join(limits)}) "
                f"{budget.file}:{budget.line}"
            )
            lines.append(inert_line(text, 300))
    if policy.confirm_above_usdc is not None and verdict.outcome == "ask":
        amount = from_atomic(facts.amount)
        if amount > policy.confirm_above_usdc:
            lines.append(
                f"approving asks the operator to type the amount ({format_usdc(amount)} USDC)"
            )
    return lines


def request_facts(data: Any) -> tuple[Any, str | None]:
    """Facts from explain's request JSON; the note says where facts came from."""
    from pydantic import ValidationError

    from svc_console.core.models import EndpointRecord, Estimate, Kind, SpendRequest

    if not isinstance(data, dict):
        raise _error("--request must be a JSON object", 2)
    unknown = set(data) - _REQUEST_KEYS - _REQUEST_EXTRAS
    if unknown:
        raise _error(f"--request has unknown keys: {', '.join(sorted(unknown))}", 2)
    note = None
    try:
        endpoint_data = data.get("endpoint")
        if endpoint_data is None and data.get("endpoint_id"):
            endpoint_data, note = _sandbox_endpoint(str(data["endpoint_id"]))
        endpoint = EndpointRecord.model_validate(endpoint_data) if endpoint_data else None
        estimate_data = data.get("estimate") or (_estimate_of(endpoint) if endpoint else None)
        estimate = Estimate.model_validate(estimate_data) if estimate_data else None
        request = SpendRequest(
            id="req_explain",
            agent=str(data.get("agent", "cli")),
            kind=Kind(data.get("kind", "market_call")),
            endpoint_id=data.get("endpoint_id") or (endpoint.id if endpoint else None),
            dataset_id=data.get("dataset_id"),
            inputs=data.get("inputs") or {},
            purpose="explain",
            max_usdc=data.get("max_usdc"),
            state="received",
            created_at=0.0,
            updated_at=0.0,
        )
    except (ValidationError, ValueError) as exc:
        raise _error(f"--request is not a request: {str(exc).splitlines()[0]}", 2) from None
    from svc_console.policy.facts import facts_of

    return facts_of(request, endpoint, estimate, data.get("dataset")), note


def _sandbox_endpoint(endpoint_id: str) -> tuple[dict, str]:
    from svc_console.sandbox.catalog import catalog

    record = catalog().get(endpoint_id)
    if record is None:
        raise _error(
            f'no endpoint {endpoint_id} in the sandbox catalogue: give its record as "endpoint"', 2
        )
    return record.model_dump(mode="json"), "endpoint facts from the sandbox catalogue"


def _estimate_of(endpoint: Any) -> dict[str, Any]:
    pricing = endpoint.pricing
    low = pricing.amount_usdc if pricing.model == "fixed" else pricing.min_usdc
    estimate = {"amount_usdc": low, "chain": endpoint.chains[0], "protocol": endpoint.protocols[0]}
    if pricing.model == "dynamic":
        estimate |= {"min_usdc": pricing.min_usdc, "max_usdc": pricing.max_usdc}
    return estimate


def _read_json(text: str) -> Any:
    try:
        if text == "-":
            text = sys.stdin.read()
        elif text.startswith("@"):
            text = Path(text[1:]).read_text(encoding="utf-8")
        return json.loads(text)
    except OSError as exc:
        raise _error(f"cannot read {text[1:]}: {exc.strerror}", 2) from None
    except ValueError as exc:
        raise _error(f"--request is not valid JSON: {exc}", 2) from None


def _when(text: str | None) -> float:
    if text is None:
        return time.time()
    try:
        return float(text)
    except ValueError:
        pass
    import datetime as dt

    try:
        moment = dt.datetime.fromisoformat(text)
    except ValueError:
        raise _error(f"--at must be ISO 8601 or epoch seconds, got {text!r}", 2) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.UTC)
    return moment.timestamp()


def _ledger(paths: Any) -> Any:
    """The ledger the console uses (its file, if there is one), opened beside a running broker."""
    from svc_console.ledger import Ledger
    from svc_console.settings import SettingsError, service_config

    try:
        sandbox = service_config(paths) is None
    except SettingsError as exc:
        raise _error(str(exc)) from None
    path = paths.ledger(sandbox=sandbox)
    if not path.exists():
        return None, path
    return Ledger(path, exclusive=False), path


def _ledger_totals(now: float) -> Any:
    from svc_console.policy.budgets import RollingTotals
    from svc_console.settings import resolve_paths

    totals = RollingTotals()
    ledger, _ = _ledger(resolve_paths())
    if ledger is None:
        return totals
    try:
        from svc_console.ledger.budgets import totals_rows

        totals.load(totals_rows(ledger.db, now), now)
    finally:
        ledger.close()
    return totals


# -- simulate -------------------------------------------------------------------------------


def run_simulate(args: argparse.Namespace) -> int:
    from svc_console.ledger.replay import past_requests
    from svc_console.policy.simulate import parse_since, simulate, warmup_start
    from svc_console.settings import resolve_paths

    try:
        period = parse_since(args.since)
    except ValueError as exc:
        raise _error(str(exc), 2) from None
    draft = _load([args.file])
    ledger, path = _ledger(resolve_paths())
    if ledger is None:
        raise _error(f"no ledger at {path}: there are no past requests to replay")
    now = time.time()
    since = now - period
    try:
        report = simulate(
            draft, past_requests(ledger.db, warmup_start(since), now), since=since, until=now
        )
    finally:
        ledger.close()
    if args.json:
        print(json.dumps(report.as_json(), indent=2))
        return 0
    for line in simulation_lines(report, args.since):
        print(line)
    return 0


def simulation_lines(report: Any, since_text: str) -> list[str]:
    from svc_console.core.sanitize import inert_line

    data = report.as_json()
    counts = data["counts"]
    lines = [
        f"replayed {report.replayed} requests of the last {since_text} against the draft",
        f"  newly denied:          {counts['newly_denied']}",
        f"  newly auto-approved:   {counts['newly_auto_approved']}",
        f"  now asking operator:   {counts['now_asks_operator']}",
        f"  USDC moved: {data['usdc_moved_actual']} actually, {data['usdc_moved_draft']} under the"
        f" draft (difference {data['usdc_difference']})",
    ]
    for title, key in (
        ("would now be denied", "newly_denied"),
        ("would now be approved automatically", "newly_auto_approved"),
        ("would now wait for the operator", "now_asks_operator"),
    ):
        if data[key]:
            lines.append(f"{title}:")
            for change in data[key]:
                lines.append(
                    inert_line(
                        f"  {change['request_id']} {change['agent']} {change['endpoint']}"
                        f" {change['amount_usdc']} USDC (was {change['was']}): {change['now']}",
                        300,
                    )
                )
            more = counts[key] - len(data[key])
            if more > 0:
                lines.append(f"  ... and {more} more")
    if data["budgets_hit"]:
        lines.append("budgets that would have been hit:")
        for hit in data["budgets_hit"]:
            lines.append(
                inert_line(
                    f"  {hit['rule']} {hit['budget']}: denied {hit['denied']},"
                    f" warned {hit['warned']}",
                    300,
                )
            )
    return lines


# -- schema ---------------------------------------------------------------------------------


def run_schema(args: argparse.Namespace) -> int:
    from svc_console.policy.schema import policy_schema

    print(json.dumps(policy_schema(), indent=2))
    return 0
