"""`svc-console audit verify`: check that the ledger's event log is the chain the broker wrote.

Exit 0 with the number of events verified and the chain's head (note it down: a later run that
shows the same head at the same count proves nothing was rewritten since); exit 1 naming the first
broken link; exit 2 when there is no ledger to check. Always one line, never a traceback. The
ledger is opened read-only, so this runs beside a console or broker that is using it.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from svc_console.cli.errors import EXIT_USAGE, CommandError

EXIT_BROKEN = 1


def add_commands(commands: Any) -> None:
    """Add `audit verify`."""
    audit = commands.add_parser(
        "audit", help="tamper evidence: check the ledger's hash-chained events"
    ).add_subparsers(title="audit commands", metavar="COMMAND", required=True)
    verify = audit.add_parser(
        "verify",
        help="verify the event chain from its first event; name the first broken link",
        description="Walk the ledger's events from the first: each must follow the one before it "
        "(its prev_hash is that event's hash), its hash must match its content, and no seq may be "
        "missing. Exit 0 when the chain holds, 1 at the first break.",
    )
    verify.add_argument(
        "--ledger",
        type=Path,
        metavar="FILE",
        help="the ledger file (default: the configured one, the sandbox's when no service is set)",
    )
    verify.set_defaults(run=run_verify)


def run_verify(args: argparse.Namespace) -> int:
    from svc_console.config.paths import resolve_paths
    from svc_console.config.service import configured_ledger
    from svc_console.core.sanitize import inert_line
    from svc_console.ledger.audit import AuditError, verify

    path = args.ledger if args.ledger is not None else configured_ledger(resolve_paths())
    try:
        report = verify(path)
    except AuditError as exc:
        raise CommandError(inert_line(str(exc), 300), EXIT_USAGE) from None
    where = inert_line(str(path), 200)
    if report.broken is not None:
        print(
            f"{where}: chain broken at event {report.broken.seq}: {report.broken.why}"
            f" ({report.verified:,} events before it verified)"
        )
        return EXIT_BROKEN
    head = f", head {report.head[:16]}" if report.verified else " (the ledger has no events yet)"
    print(f"{where}: {report.verified:,} events verified; chain intact{head}")
    return 0
