"""`svc-console audit verify`: check that the ledger is what the broker wrote: its keyed event
chain, the head anchored beside it, and its tables of money against the events.

Exit 0 with the number of events verified and the chain's head `SEQ:HASH` (keep it elsewhere:
`--head SEQ:HASH` later proves nothing up to it was cut or rewritten since); exit 1 naming the
first broken link or the tables' disagreements, first event first; exit 2 when there is nothing
to check (no ledger, no key). Never a traceback. The ledger is opened read-only, so this runs
beside a console or broker that is using it.
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
        "missing; the head file must hold; every row of money must be as its last event sealed "
        "it. Exit 0 when all holds, 1 at the first break.",
    )
    verify.add_argument(
        "--head",
        type=_head,
        metavar="SEQ:HASH",
        help="a head printed by an earlier run and kept elsewhere: checked, not the head file",
    )
    verify.add_argument(
        "--ledger",
        type=Path,
        metavar="FILE",
        help="the ledger file (default: the configured one, the sandbox's when no service is set;"
        " SVC_LEDGER_URL or [ledger] url in settings.toml put the real one on PostgreSQL)",
    )
    verify.set_defaults(run=run_verify)


def run_verify(args: argparse.Namespace) -> int:
    from svc_console.config.errors import SettingsError
    from svc_console.config.paths import resolve_paths
    from svc_console.config.service import configured_ledger, configured_ledger_url
    from svc_console.core.sanitize import inert_line
    from svc_console.ledger.audit import AuditError, verify
    from svc_console.ledger.engine import url_shown

    url = None
    if args.ledger is not None:
        path = args.ledger
    else:
        paths = resolve_paths()
        path = configured_ledger(paths)
        try:
            url = configured_ledger_url(paths)
        except SettingsError as exc:
            raise CommandError(inert_line(str(exc), 300), EXIT_USAGE) from None
    try:
        report = verify(path, anchor=args.head, url=url)
    except AuditError as exc:
        raise CommandError(inert_line(str(exc), 300), EXIT_USAGE) from None
    where = inert_line(url_shown(url) if url else str(path), 200)
    if report.broken is not None:
        print(
            f"{where}: chain broken at event {report.broken.seq}: {report.broken.why}"
            f" ({report.verified:,} events before it verified)"
        )
        return EXIT_BROKEN
    if report.problems:
        print(
            f"{where}: chain intact ({report.verified:,} events), but the tables disagree with it:"
        )
        for problem in report.problems:
            at = f"event {problem.seq}: " if problem.seq else ""
            print(f"  {at}{inert_line(problem.why, 300)}")
        if report.more_problems:
            print(f"  and {report.more_problems:,} more")
        return EXIT_BROKEN
    if not report.verified:
        print(f"{where}: 0 events verified (the ledger has no events yet)")
        return 0
    print(
        f"{where}: {report.verified:,} events verified; chain intact, tables agree;"
        f" head {report.verified}:{report.head}"
    )
    return 0


def _head(text: str) -> tuple[int, str]:
    seq, _, digest = text.partition(":")
    if not seq.isdigit() or len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
        raise argparse.ArgumentTypeError("must be SEQ:HASH as audit verify printed it")
    return int(seq), digest
