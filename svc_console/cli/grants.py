"""`svc-console grants list / revoke`: the operators' standing decisions ("for a while"), asked of
the running console. A grant is made with a decision (`approvals approve ID --for 1h --total 2`,
`approvals deny ID --for 1h`, or the TUI's decision dialogs)."""

from __future__ import annotations

import argparse
import json
from datetime import UTC, datetime
from typing import Any

from svc_console.cli.errors import EXIT_USAGE, CommandError
from svc_console.cli.operators import identity_options


def add_commands(commands: Any) -> None:
    grants = commands.add_parser(
        "grants", help="decisions that stand for a while: list and revoke them"
    ).add_subparsers(title="grants commands", metavar="COMMAND", required=True)
    listing = grants.add_parser("list", help="the grants in force (--all: ended ones too)")
    listing.add_argument("--all", action="store_true")
    listing.add_argument("--json", action="store_true")
    listing.set_defaults(run=run_list)
    revoke = grants.add_parser("revoke", help="end a grant now")
    revoke.add_argument("grant_id", type=int, metavar="ID")
    identity_options(revoke, "with operator accounts: who revokes it")
    revoke.set_defaults(run=run_revoke)


def run_list(args: argparse.Namespace) -> int:
    from svc_console.cli.socket_client import call, connect

    with connect(None, operator=True) as console:
        rows = call(lambda: console.call("grants.list", {"all": args.all}))
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    if not rows:
        print("no grant in force" if not args.all else "no grants yet")
    for row in rows:
        print(line(row))
    return 0


def line(row: dict[str, Any]) -> str:
    """One grant on one line: what, for whom, how much, until when, and whether it ended."""
    from svc_console.core.money import format_usdc, from_atomic
    from svc_console.core.sanitize import inert_line

    def usdc(atomic: int | None) -> str:
        return format_usdc(from_atomic(atomic)) if atomic is not None else "-"

    until = _when(row["expires_at"]) if row["expires_at"] is not None else "until the console stops"
    if row["effect"] == "approve":
        what = (
            f"approve up to {usdc(row['per_call_max_usdc'])} USDC a call,"
            f" {usdc(row['used_usdc'])} of {usdc(row['total_usdc'])} used"
        )
    else:
        what = "deny"
    ended = f"  ended {_when(row['ended_at'])}: {row['ended_reason']}" if row["ended_at"] else ""
    return (
        f"{row['id']:>4}  {what}  {inert_line(row['agent'], 40)} → {inert_line(row['target'], 60)}"
        f"  {until}  (from {row['request_id']}, by {row['created_by']}){ended}"
    )


def _when(at: float) -> str:
    return "until " + datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%d %H:%M UTC")


def run_revoke(args: argparse.Namespace) -> int:
    from svc_console.cli.approvals import as_operator
    from svc_console.cli.socket_client import call, connect

    if args.grant_id < 1:
        raise CommandError("a grant id is a number from 1", EXIT_USAGE)
    with connect(None, operator=True) as console:
        params = as_operator(console, args, {"grant_id": args.grant_id}, passphrase=False)
        call(lambda: console.call("grants.revoke", params))
    print(f"grant {args.grant_id} revoked: calls it approved now wait for the operator")
    return 0
