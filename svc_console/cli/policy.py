"""`svc-console policy ...`: the policy author's commands.

- `check FILE...`: exit 0 and a summary of what the policy does, or every error as
  `file:line:col: message` and exit 1.
- `explain FILE --request JSON`: the verdict on one request and the rules that decided it, with
  the budgets as the ledger's running totals stand now. An endpoint named only by id is read from
  the ledger's catalogue cache (the sandbox's catalogue when no service is configured).
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
    {"agent", "agent_verified", "kind", "endpoint_id", "dataset_id", "inputs", "max_usdc"}
    | {"endpoint", "estimate", "dataset"}
)


def add_commands(commands: Any) -> None:
    policy = commands.add_parser(
        "policy", help="SKILLS.md policies: check, explain, simulate, test, schema"
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

    from svc_console.cli import policy_test

    policy_test.add_command(policy)

    schema = policy.add_parser("schema", help="the JSON Schema of policy blocks, for editors")
    schema.set_defaults(run=run_schema)


def _error(message: str, code: int = 1) -> Exception:
    from svc_console.cli.errors import CommandError

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
    from svc_console.policy.report import summary

    for line in summary(loaded):
        print(inert_line(line, 300))
    return 0


# -- explain --------------------------------------------------------------------------------


def run_explain(args: argparse.Namespace) -> int:
    from svc_console.policy.budgets import RollingTotals
    from svc_console.policy.engine import CompiledPolicy
    from svc_console.policy.verdicts import to_verdict

    loaded = _load([args.file])
    facts, note = request_facts(_read_json(args.request))
    now = _when(args.at)
    policy = CompiledPolicy(loaded)
    totals, paused = RollingTotals(), {}
    if not args.no_ledger:
        totals, paused = _from_ledger(policy, now)
    result = policy.evaluate(facts, totals, now, brakes=True, paused=paused.get(facts.agent))
    verdict = to_verdict(result, policy.sha256)
    if args.json:
        print(json.dumps(verdict.model_dump(mode="json"), indent=2))
        return 0
    from svc_console.policy.report import explain_lines

    for line in explain_lines(verdict, policy, facts, note):
        print(line)
    return 0


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
            endpoint_data, note = _known_endpoint(str(data["endpoint_id"]))
        endpoint = EndpointRecord.model_validate(endpoint_data) if endpoint_data else None
        estimate_data = data.get("estimate") or (_estimate_of(endpoint) if endpoint else None)
        estimate = Estimate.model_validate(estimate_data) if estimate_data else None
        request = SpendRequest(
            id="req_explain",
            agent=str(data.get("agent", "cli")),
            # The agent named, as having proved its name; false: as any unverified agent.
            agent_verified=data.get("agent_verified", True),
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


def _known_endpoint(endpoint_id: str) -> tuple[dict, str]:
    """The record of an endpoint the request names only by id, from the catalogue the console
    has cached in its ledger; when no service is configured and the cache does not hold it, from
    the sandbox's catalogue."""
    from svc_console.config.paths import resolve_paths

    path, service = _console_ledger(resolve_paths())
    cached = _cached_endpoint(path, endpoint_id)
    if cached is not None:
        record, synced = cached
        return record.model_dump(mode="json"), f"endpoint facts from the catalogue cache, {synced}"
    if service is not None:
        raise _error(
            f"no endpoint {endpoint_id} in the catalogue cache of {service.base_url}: sync the"
            ' catalogue (the console\'s catalogue screen) or give its record as "endpoint"',
            2,
        )
    from svc_console.sandbox.catalog import catalog

    record = catalog().get(endpoint_id)
    if record is None:
        raise _error(
            f'no endpoint {endpoint_id} in the sandbox catalogue: give its record as "endpoint"', 2
        )
    return record.model_dump(mode="json"), "endpoint facts from the sandbox catalogue"


def _cached_endpoint(path: Path, endpoint_id: str) -> tuple[Any, str] | None:
    """The endpoint's record in the ledger's catalogue cache and when the cache was synced
    ("synced 2026-11-18 10:00 UTC"), or None. The ledger file is only read."""
    import datetime as dt
    import sqlite3

    from svc_console.ledger import catalogue_schema, catalogue_search, catalogue_store
    from svc_console.ledger.readers import open_reader

    if not path.exists():
        return None
    conn = open_reader(path)
    try:
        if not catalogue_schema.is_ready(conn):
            return None
        record = catalogue_search.endpoint_record(conn, endpoint_id)
        synced_at = catalogue_store.sync_state(conn).synced_at
    except sqlite3.DatabaseError as exc:
        raise _error(f"cannot read the catalogue cache in {path}: {exc}") from None
    finally:
        conn.close()
    if record is None:
        return None
    when = dt.datetime.fromtimestamp(synced_at or 0, dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    return record, f"synced {when}"


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


def _console_ledger(paths: Any) -> tuple[Path, Any]:
    """The ledger file the console uses and the service it speaks to (None: the sandbox), decided
    as the console decides."""
    from svc_console.config.errors import SettingsError
    from svc_console.config.service import service_config

    try:
        service = service_config(paths)
    except SettingsError as exc:
        raise _error(str(exc)) from None
    return paths.ledger(sandbox=service is None), service


def _ledger(paths: Any) -> Any:
    """The ledger the console uses (its file, if there is one, or its PostgreSQL database),
    opened beside a running broker."""
    from svc_console.ledger import Ledger

    path, _ = _console_ledger(paths)
    url = _ledger_url(paths, path)
    if url is None and not path.exists():
        return None, path
    return Ledger(path, exclusive=False, url=url), path


def _ledger_url(paths: Any, path: Path) -> str | None:
    """The PostgreSQL URL of the real ledger (never the sandbox's), None for its file."""
    from svc_console.config.errors import SettingsError
    from svc_console.config.ledger_url import ledger_url

    if path == paths.ledger(sandbox=True):
        return None
    try:
        return ledger_url(paths)
    except SettingsError as exc:
        raise _error(str(exc)) from None


def _from_ledger(policy: Any, now: float) -> tuple[Any, dict[str, str]]:
    """The budget totals as the ledger's running totals stand at `now`, the policy's brakes
    counting the ledger's recent requests, and the agents paused now."""
    from svc_console.config.paths import resolve_paths
    from svc_console.policy.budgets import RollingTotals

    totals = RollingTotals()
    ledger, _ = _ledger(resolve_paths())
    if ledger is None:
        return totals, {}
    try:
        from svc_console.broker.policy_link import history_of
        from svc_console.ledger import pauses
        from svc_console.ledger.budgets import totals_rows

        totals.load(totals_rows(ledger.db, now), now)
        if policy.brakes.counting:
            policy.brakes.load(*history_of(ledger)(now - policy.brakes.horizon))
        paused = {pause.agent: pause.reason for pause in pauses.paused(ledger)}
    finally:
        ledger.close()
    return totals, paused


# -- simulate -------------------------------------------------------------------------------


def run_simulate(args: argparse.Namespace) -> int:
    from svc_console.config.paths import resolve_paths
    from svc_console.ledger.readers import ReadError
    from svc_console.policy.simulate import parse_since
    from svc_console.services.policy_simulation import simulate_period

    try:
        parse_since(args.since)
    except ValueError as exc:
        raise _error(str(exc), 2) from None
    draft = _load([args.file])
    paths = resolve_paths()
    path, _ = _console_ledger(paths)
    url = _ledger_url(paths, path)
    if url is None and not path.exists():
        raise _error(f"no ledger at {path}: there are no past requests to replay")
    try:
        report = simulate_period(draft, path, time.time(), args.since, url)
    except ReadError as exc:
        raise _error(f"cannot read the ledger {path}: {exc}") from None
    if args.json:
        print(json.dumps(report.as_json(), indent=2))
        return 0
    from svc_console.policy.report import simulation_lines

    for line in simulation_lines(report, args.since):
        print(line)
    return 0


# -- schema ---------------------------------------------------------------------------------


def run_schema(args: argparse.Namespace) -> int:
    from svc_console.policy.schema import policy_schema

    print(json.dumps(policy_schema(), indent=2))
    return 0
