"""`svc-console approvals list / show / approve / deny`: headless decisions, under the TUI's
rules; `show ID --mandate` prints the mandate an approval produced (read from the ledger)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import Any

from svc_console.cli.errors import EXIT_USAGE, CommandError
from svc_console.cli.operators import credentials, identity_options
from svc_console.cli.socket_client import call, connect


def add_commands(commands: Any) -> None:
    approvals = commands.add_parser(
        "approvals", help="headless decisions (same rules as the TUI)"
    ).add_subparsers(title="approvals commands", metavar="COMMAND", required=True)
    listing = approvals.add_parser("list", help="requests waiting for a decision")
    listing.add_argument("--history", action="store_true", help="decided requests instead")
    listing.add_argument("--limit", type=int, default=100)
    listing.add_argument(
        "--json",
        action="store_true",
        help="as JSON, each request with the digest of its facts as listed (for --seen)",
    )
    listing.set_defaults(run=run_list)
    show = approvals.add_parser(
        "show",
        help="one request as the ledger holds it; --mandate: what its approval lets be paid",
        description="Read one request from the ledger (read-only, beside a running console): "
        "the console's facts, where the money goes, and the decision. With --mandate, the JSON "
        "of the mandate its latest approval produced, for `svc-console mandate verify`.",
    )
    show.add_argument("request_id", metavar="ID")
    show.add_argument(
        "--mandate", action="store_true", help="print the approval's mandate (JSON) instead"
    )
    from svc_console.cli.mandate import ledger_option

    ledger_option(show)
    show.set_defaults(run=run_show)
    approve = approvals.add_parser(
        "approve", help="approve pending requests (several: each its own decision)"
    )
    approve.add_argument("request_ids", nargs="+", metavar="ID")
    approve.add_argument(
        "--confirm-amount",
        help="the amount, typed, when the request is above the threshold (several: their total)",
    )
    approve.add_argument("--note")
    seen_option(approve, "approved")
    approve.add_argument(
        "--for",
        dest="grant_for",
        metavar="DURATION",
        help="also approve this agent's calls to the same endpoint, each at most this amount,"
        " for 15m, 1h, 2d... or session (until the console stops); needs --total",
    )
    approve.add_argument("--total", metavar="USDC", help="what --for may approve in all")
    approve.add_argument(
        "--always",
        action="store_true",
        help="also add a rule to --policy FILE that approves this agent's calls to this endpoint,"
        " each at most this amount, within --daily USDC a day (default: 20 calls' worth)",
    )
    approve.add_argument("--policy", metavar="FILE", help="the SKILLS.md file --always writes to")
    approve.add_argument("--daily", metavar="USDC", help="the --always rule's daily budget")
    identity_options(approve, "with operator accounts: who approves")
    approve.set_defaults(run=run_approve)
    deny = approvals.add_parser("deny", help="deny pending requests")
    deny.add_argument("request_ids", nargs="+", metavar="ID")
    deny.add_argument("--reason", required=True)
    seen_option(deny, "denied")
    deny.add_argument(
        "--for",
        dest="grant_for",
        metavar="DURATION",
        help="also deny this agent's calls to the same endpoint for 15m, 1h, 2d... or session",
    )
    identity_options(deny, "with operator accounts: who denies")
    deny.set_defaults(run=run_deny)


def seen_option(parser: argparse.ArgumentParser, done: str) -> None:
    parser.add_argument(
        "--seen",
        action="append",
        metavar="DIGEST",
        help=f"the digest `approvals list --json` gave with the request (once per ID, in"
        f" order): nothing is {done} if the request changed since (repriced, re-quoted, its"
        " verdict changed). Optional: without it the request is decided by its id alone,"
        " as it is now",
    )


def seen_of(args: argparse.Namespace) -> dict[str, str]:
    """The digests given, by request id; a count that does not match the ids is a usage error."""
    from svc_console.core.shown_facts import DIGEST

    digests = args.seen or []
    for digest in digests:
        if not DIGEST.match(digest):
            raise CommandError(
                f"--seen takes a digest as `approvals list --json` gives it (64 hex digits),"
                f" not {digest[:70]!r}; nothing was decided",
                EXIT_USAGE,
            )
    if digests and len(digests) != len(args.request_ids):
        raise CommandError(
            f"--seen is given once per ID, in order: {len(args.request_ids)} IDs,"
            f" {len(digests)} --seen; nothing was decided",
            EXIT_USAGE,
        )
    return dict(zip(args.request_ids, digests, strict=False))


def run_list(args: argparse.Namespace) -> int:
    view = "history" if args.history else "pending"
    with connect(None, operator=True) as agent:
        problem = (agent.hello_info.get("policy") or {}).get("message")
        if problem:
            print(f"svc-console: {problem}", file=sys.stderr)
        requests = call(lambda: agent.call("approvals.list", {"view": view, "limit": args.limit}))
    if args.json:
        print(json.dumps(requests, indent=2))
        return 0
    if not requests:
        print(f"no {view} requests")
        return 0
    import time

    for line in table(requests, time.time()):
        print(line)
    return 0


def run_show(args: argparse.Namespace) -> int:
    from svc_console.cli.mandate import ledger_location
    from svc_console.core.sanitize import inert_line
    from svc_console.ledger import mandates
    from svc_console.ledger.readers import ReadError, open_reader
    from svc_console.ledger.request_reads import RequestView

    path, url = ledger_location(args.ledger)
    if url is None and not path.is_file():
        raise CommandError(f"no ledger at {inert_line(str(path), 200)}", EXIT_USAGE)
    request_id = inert_line(args.request_id, 40)
    try:
        conn = open_reader(path, url)
        try:
            request = RequestView(conn).get(args.request_id)
            mandate = mandates.latest(conn, args.request_id)
        finally:
            conn.close()
    except ReadError as exc:  # either engine's (the PostgreSQL reader raises them as these)
        said = inert_line(str(exc), 200)
        raise CommandError(f"cannot read the ledger: {said}", EXIT_USAGE) from None
    if request is None:
        raise CommandError(f"no request {request_id} in the ledger", EXIT_USAGE)
    if args.mandate:
        if mandate is None:
            raise CommandError(f"{request_id} has no approval with a mandate", EXIT_USAGE)
        print(mandate.printed())
        return 0
    for line in request_lines(request, mandate):
        print(line)
    return 0


def request_lines(request: Any, mandate: Any) -> list[str]:
    """A request in lines: the console's facts first, what the agent wrote last, cut."""
    from svc_console.core.mandate import pays_to
    from svc_console.core.money import format_usdc
    from svc_console.core.sanitize import inert_line

    endpoint, estimate, decision = request.endpoint, request.estimate, request.decision
    rows = [
        ("state", str(request.state)),
        ("endpoint", request.endpoint_id or request.dataset_id or str(request.kind)),
        ("provider", endpoint.provider_name if endpoint else "not inspected"),
        (
            "cost",
            f"{format_usdc(estimate.amount_usdc)} USDC on {estimate.chain}" if estimate else "-",
        ),
        ("pays to", pays_to(request.kind, estimate, endpoint)),
        ("agent", request.agent + ("" if request.agent_verified else " (unverified)")),
    ]
    if decision is not None:
        verb = "approved" if decision.approved else "denied"
        rows.append(("decision", f"{verb} by {decision.by}"))
    if mandate is not None:
        rows.append(("mandate", f"sha256 {mandate.digest}, valid until {mandate_until(mandate)}"))
    lines = [request.id]
    lines += [f"  {label:<9} {inert_line(value, 120)}" for label, value in rows]
    lines.append(f"  agent wrote | {inert_line(request.purpose, 100)}")
    return lines


def mandate_until(mandate: Any) -> str:
    from svc_console.core.mandate import utc_text

    return utc_text(mandate.valid_until)


def as_operator(
    agent: Any, args: argparse.Namespace, params: dict[str, Any], *, passphrase: bool = True
) -> dict[str, Any]:
    """Who acts: with operator accounts, `--operator NAME` and its token (the console checks
    them); else, with an operator passphrase set, the passphrase typed on the terminal, for a
    decision (`passphrase`) or, where agents of this user are accepted, for any act: such an
    agent can read every file, but not what the operator knows. With neither set there, the
    console refuses and says how to set one."""
    given = credentials(args)
    if given is not None:
        return {**params, "operator": given[0], "token": given[1]}
    said = agent.hello_info
    if said.get("operators_required"):
        raise CommandError(
            "this console's decisions need an operator account: --operator NAME, with its token"
            " in SVC_OPERATOR_TOKEN or --token-file FILE; nothing was decided",
            EXIT_USAGE,
        )
    if said.get("passphrase_required") and (passphrase or said.get("credential_required")):
        from svc_console.cli.tty import read_secret

        params = {**params, "passphrase": read_secret("operator passphrase: ")}
    return params


def run_approve(args: argparse.Namespace) -> int:
    if len(args.request_ids) > 1:
        return _approve_many(args)
    args.request_id = args.request_ids[0]
    if args.always or args.policy or args.daily:
        return _approve_always(args)
    params = {
        "request_id": args.request_id,
        "confirm_amount": args.confirm_amount,
        "seen": seen_of(args).get(args.request_id),
    }
    if args.note:
        params["note"] = args.note
    if args.total is not None and args.grant_for is None:
        raise CommandError("--total goes with --for: how long the grant lasts", EXIT_USAGE)
    if args.grant_for is not None:
        params["grant_for"], params["grant_total"] = args.grant_for, args.total
    with connect(None, operator=True) as agent:
        request = _approving(
            agent, "approvals.approve", as_operator(agent, args, params), _type_it(args.request_id)
        )
    print(f"{request['id']} {request['state']}")
    if request["state"] == "pending":  # the two-person rule: this was the first approval
        print(f"approved by {args.operator}; needs a second operator")
        return 0
    if args.grant_for is not None:
        print(
            f"and calls like it for {args.grant_for}, up to {args.total} USDC in all"
            " (svc-console grants list)"
        )
    return 0


def _approve_always(args: argparse.Namespace) -> int:
    """Approve, and write the rule that approves calls like it from now on: checked with the
    other policy files in force before anything is approved, saved after the approval."""
    import time
    from decimal import Decimal, InvalidOperation
    from pathlib import Path

    from svc_console.config.paths import resolve_paths
    from svc_console.config.policy_files import policy_files
    from svc_console.core.models import SpendRequest
    from svc_console.core.sanitize import inert_line
    from svc_console.services import always_rule

    if not args.always or not args.policy:
        raise CommandError(
            "--always needs --policy FILE (and --policy, --daily need --always)", EXIT_USAGE
        )
    if args.grant_for is not None:
        raise CommandError("--always and --for are two different decisions: choose one", EXIT_USAGE)
    try:
        daily = Decimal(args.daily) if args.daily is not None else None
    except InvalidOperation:
        raise CommandError(
            f"--daily must be an amount of USDC, got {args.daily!r}", EXIT_USAGE
        ) from None
    given = seen_of(args)
    paths = resolve_paths()
    with connect(None, operator=True) as agent:
        waiting = call(lambda: agent.call("approvals.list", {"view": "pending", "limit": 1000}))
        found = next((r for r in waiting if r["id"] == args.request_id), None)
        if found is None:
            raise CommandError(f"{args.request_id} is not waiting for a decision", EXIT_USAGE)
        try:
            proposal = always_rule.propose(
                SpendRequest.model_validate(found),
                Path(args.policy),
                policy_files(paths)[0],
                paths.home,
                daily=daily,
                at=time.time(),
            )
        except always_rule.NotInForce as exc:
            raise CommandError(f"{exc}: nothing was approved or written", EXIT_USAGE) from None
        if not proposal.check.valid:
            problems = "; ".join(str(e) for e in proposal.check.errors[:3])
            raise CommandError(
                f"the rule would leave the policy invalid ({problems}): nothing was approved"
                " or written",
                EXIT_USAGE,
            )
        for line in proposal.diff:
            print(inert_line(line, 300))
        # The rule was made from the request as listed: approved only as it was.
        seen = given.get(args.request_id, found.get("digest"))
        approval = {"request_id": args.request_id, "confirm_amount": args.confirm_amount}
        params = as_operator(agent, args, {**approval, "seen": seen})
        unwritten = "; nothing was approved or written"
        request = _approving(
            agent, "approvals.approve", params, _type_it(args.request_id, unwritten)
        )
    always_rule.save(proposal)
    print(f"{request['id']} {request['state']}")
    print(f"rule {proposal.rule.name!r} added to {proposal.name}: in force within a second")
    return 0


def _approve_many(args: argparse.Namespace) -> int:
    """Several requests, one confirmation of their total; each gets its own decision."""
    if args.grant_for is not None or args.total is not None:
        raise CommandError("--for and --total go with one request, not several", EXIT_USAGE)
    params = {
        "request_ids": args.request_ids,
        "confirm_total": args.confirm_amount,
        "seen": seen_of(args) or None,
    }
    if args.note:
        params["note"] = args.note
    with connect(None, operator=True) as agent:
        outcome = _approving(
            agent,
            "approvals.approve_many",
            as_operator(agent, args, params),
            lambda amount: (
                f"these {len(args.request_ids)} requests may cost {amount} USDC in"
                f" all: to approve them, type the total: --confirm-amount {amount}"
            ),
        )
    return _print_outcome(outcome)


def _type_it(request_id: str, after: str = "") -> Callable[[str], str]:
    """What to say when the amount must be typed: the option and the amount to give it."""
    return lambda amount: (
        f"{request_id} may cost {amount} USDC: to approve, type the amount:"
        f" --confirm-amount {amount}{after}"
    )


def _approving(agent: Any, method: str, params: dict[str, Any], typed: Any) -> Any:
    """Call an approving method; a missing or wrong typed amount becomes `typed(amount)`, the
    command line's own words for what to type, and any other refusal its message."""
    from svc_console.agent import AgentError

    try:
        return agent.call(method, {k: v for k, v in params.items() if v is not None})
    except AgentError as exc:
        if exc.reason == "confirmation_required":
            raise CommandError(typed(exc.data.get("amount")), EXIT_USAGE) from None
        raise CommandError(exc.message, EXIT_USAGE) from None


def _print_outcome(outcome: dict[str, str]) -> int:
    for request_id, state in outcome.items():
        print(f"{request_id} {state}")
    return 0 if all(not state.startswith("not ") for state in outcome.values()) else 1


def run_deny(args: argparse.Namespace) -> int:
    seen = seen_of(args)
    if len(args.request_ids) > 1:
        if args.grant_for is not None:
            raise CommandError("--for goes with one request, not several", EXIT_USAGE)
        with connect(None, operator=True) as agent:
            denial = {"request_ids": args.request_ids, "reason": args.reason}
            if seen:
                denial["seen"] = seen
            params = as_operator(agent, args, denial)
            outcome = call(lambda: agent.call("approvals.deny_many", params))
        return _print_outcome(outcome)
    args.request_id = args.request_ids[0]
    with connect(None, operator=True) as agent:
        denial = {"request_id": args.request_id, "reason": args.reason}
        if seen:
            denial["seen"] = seen[args.request_id]
        if args.grant_for is not None:
            denial["grant_for"] = args.grant_for
        params = as_operator(agent, args, denial)
        request = call(lambda: agent.call("approvals.deny", params))
    print(f"{request['id']} {request['state']}")
    if args.grant_for is not None:
        print(f"and calls like it denied for {args.grant_for}: see svc-console grants list")
    return 0


HEADER = ("ID", "STATE", "USDC", "AGE", "EXPIRES", "ENDPOINT", "PROVIDER", "VERDICT", "AGENT")


def table(requests: list[dict[str, Any]], now: float) -> list[str]:
    """The requests as aligned columns under a header: the console's facts first, then who asked
    and, last, what the agent wrote, cut, so that an agent's text can never sit among the
    console's figures (nor push them out of line)."""
    rows = [_cells(request, now) for request in requests]
    widths = [max(len(row[i]) for row in [HEADER, *rows]) for i in range(len(HEADER))]
    lines = ["  ".join(h.ljust(w) for h, w in zip(HEADER, widths, strict=True)) + "  AGENT WROTE"]
    for request, row in zip(requests, rows, strict=True):
        from svc_console.core.sanitize import inert_line

        cells = "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True))
        lines.append(f"{cells}  | {inert_line(request['purpose'], 50)}")
    return lines


def _cells(request: dict[str, Any], now: float) -> tuple[str, ...]:
    from svc_console.core.sanitize import inert_line

    endpoint = request.get("endpoint") or {}
    estimate = request.get("estimate") or {}
    price = str(estimate.get("amount_usdc", "?"))
    if estimate.get("max_usdc") and estimate.get("max_usdc") != estimate.get("min_usdc"):
        price = f"{estimate.get('min_usdc')}-{estimate.get('max_usdc')}"
    provider = endpoint.get("providerName") or endpoint.get("provider") or "-"
    verified = "" if endpoint.get("verified") else " (not verified)"
    verdict = (request.get("verdict") or {}).get("outcome", "-")
    agent = inert_line(request["agent"], 24)
    if not request.get("agent_verified"):
        agent += " (unverified)"
    state = request["state"]
    if request.get("approved_by"):  # the two-person rule: one approval of two so far
        state += f" 1/2 ({inert_line(request['approved_by'][0], 24)})"
    expires = request.get("expires_at")
    return (
        request["id"],
        state,
        price,
        _span(now - request["created_at"]),
        f"in {_span(expires - now)}" if expires and request["state"] == "pending" else "-",
        inert_line(endpoint.get("name") or request.get("endpoint_id") or "-", 30),
        inert_line(provider, 30) + verified,
        inert_line(verdict, 12),
        agent,
    )


def _span(seconds: float) -> str:
    """3s, 4m, 2h, 3d: how long, to the unit that matters."""
    seconds = max(0, int(seconds))
    for unit, size in (("d", 86_400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"
