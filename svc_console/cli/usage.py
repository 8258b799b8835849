"""`svc-console usage export`: the usage history for finance, as CSV or JSON, from the ledger.

It reads the ledger file read-only, so it runs beside a console or a broker that is using it. The
work is `usage_export`'s; this module only turns options into a filter and reports in one line.
Imports are lazy so `svc-console --help` stays instant.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from svc_console.cli.errors import EXIT_USAGE, CommandError
from svc_console.core.wording import plural

STATES = ("flagged", "ok", "uncovered", "over", "conflict")


def add_commands(commands: Any) -> None:
    """Add `usage export` to the command line."""
    usage = commands.add_parser("usage", help="finance: the synced usage history").add_subparsers(
        title="usage commands", metavar="COMMAND", required=True
    )
    export = usage.add_parser(
        "export",
        help="the usage history as CSV or JSON, oldest first",
        description="Write the usage history (every charge the service made, with the approval "
        "that covers it and reconciliation flags) as CSV or JSON. Times are UTC.",
    )
    export.add_argument(
        "--since", help="30d, 12h, 2026-05-01 or an ISO-8601 time (default: from the first charge)"
    )
    export.add_argument("--until", help="the same forms; a date includes that whole day")
    export.add_argument(
        "--format", choices=("csv", "json"), help="default: the --output file's suffix, else csv"
    )
    export.add_argument(
        "--output", "-o", type=Path, help="a file to write, owner-only (default: standard output)"
    )
    export.add_argument("--agent", help="only this agent's charges")
    export.add_argument("--provider", help="only this provider's charges")
    export.add_argument("--chain", help="only charges settled on this chain")
    export.add_argument("--domain-type", help="only this domain type (A1-A22)")
    export.add_argument(
        "--state",
        choices=STATES,
        help="flagged (no approval covers it, above the approval, or a second version of a"
        " charge held), ok, uncovered, over, conflict",
    )
    export.set_defaults(run=run_export)


def run_export(args: argparse.Namespace) -> int:
    import sqlite3
    import time

    from svc_console.config.errors import SettingsError
    from svc_console.config.paths import resolve_paths
    from svc_console.config.service import configured_ledger, configured_ledger_url
    from svc_console.core.usage import UsageFilter
    from svc_console.ledger.readers import open_reader
    from svc_console.services.usage_export import (
        ExportError,
        export,
        export_file,
        format_for,
        parse_since,
        parse_until,
    )

    paths = resolve_paths()
    ledger = configured_ledger(paths)
    try:
        url = configured_ledger_url(paths)
    except SettingsError as exc:
        raise CommandError(str(exc), EXIT_USAGE) from None
    if url is None and not ledger.exists():
        raise CommandError(f"no ledger at {ledger}: nothing has been recorded yet", EXIT_USAGE)
    now = time.time()
    try:
        f = UsageFilter(
            since=parse_since(args.since, now) if args.since else None,
            until=parse_until(args.until, now) if args.until else None,
            agent=args.agent,
            provider=args.provider,
            chain=args.chain,
            domain_type=args.domain_type,
            state=args.state,
        )
    except (ExportError, ValueError) as exc:
        raise CommandError(str(exc), EXIT_USAGE) from None
    fmt = format_for(args.output, args.format)
    try:
        conn = open_reader(ledger, url)
    except sqlite3.Error as exc:
        raise CommandError(f"cannot read {ledger}: {exc}", EXIT_USAGE) from None
    try:
        if args.output is None:
            export(conn, f, fmt, sys.stdout)
            sys.stdout.flush()
            return 0
        written = export_file(conn, f, fmt, args.output)
    except ExportError as exc:
        raise CommandError(str(exc), EXIT_USAGE) from None
    except sqlite3.Error as exc:
        raise CommandError(f"cannot read {ledger}: {exc}", EXIT_USAGE) from None
    except BrokenPipeError:
        # The reader (head, a pager) stopped listening: not an error. Standard output is pointed
        # at /dev/null so the interpreter's last flush does not complain either.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    finally:
        conn.close()
    print(f"{plural(written, 'charge')} written to {args.output}", file=sys.stderr)
    return 0
