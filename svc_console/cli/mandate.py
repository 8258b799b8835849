"""`svc-console mandate verify FILE`: check a mandate (as `approvals show ID --mandate` printed
it) against the ledger's audit chain.

It passes when the chain verifies and one of the request's approvals sealed exactly this
mandate's digest; it fails in one line, exit 1, when the copy was edited or the chain does not
verify, and exit 2 when the file is no mandate or there is no ledger. The ledger is opened
read-only, so this runs beside a console or broker that is using it.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from svc_console.cli.errors import EXIT_USAGE, CommandError

EXIT_NOT_APPROVED = 1
MAX_FILE_BYTES = 1_000_000


def add_commands(commands: Any) -> None:
    """Add `mandate verify`."""
    mandate = commands.add_parser(
        "mandate", help="what an approval lets be paid: check a mandate against the ledger"
    ).add_subparsers(title="mandate commands", metavar="COMMAND", required=True)
    verify = mandate.add_parser(
        "verify",
        help="check a mandate file against the ledger's audit chain",
        description="Verify the ledger's audit chain, then check that one of the request's "
        "approvals sealed exactly this mandate (its sha256 is in the decision's event). The file "
        "is the JSON `svc-console approvals show ID --mandate` prints. Exit 0 when it is the one "
        "approved; 1 when it was edited or the chain does not verify.",
    )
    verify.add_argument("file", type=Path, metavar="FILE", help="the mandate, as printed")
    ledger_option(verify)
    verify.set_defaults(run=run_verify)


def ledger_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--ledger",
        type=Path,
        metavar="FILE",
        help="the ledger file (default: the configured one, the sandbox's when no service is set)",
    )


def ledger_location(ledger: Path | None) -> tuple[Path, str | None]:
    """The ledger file (and PostgreSQL URL) a command reads: `--ledger`, else the configured."""
    from svc_console.config.errors import SettingsError
    from svc_console.config.paths import resolve_paths
    from svc_console.config.service import configured_ledger, configured_ledger_url
    from svc_console.core.sanitize import inert_line

    if ledger is not None:
        return ledger, None
    paths = resolve_paths()
    try:
        return configured_ledger(paths), configured_ledger_url(paths)
    except SettingsError as exc:
        raise CommandError(inert_line(str(exc), 300), EXIT_USAGE) from None


def read_mandate(path: Path) -> Any:
    """The mandate in `path`, or a usage error saying why it is not one."""
    from pydantic import ValidationError

    from svc_console.core.mandate import Mandate
    from svc_console.core.sanitize import inert_line

    shown = inert_line(str(path), 200)
    try:
        with path.open("rb") as file:
            text = file.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise CommandError(f"cannot read {shown}: {exc.strerror or exc}", EXIT_USAGE) from None
    if len(text) > MAX_FILE_BYTES:
        raise CommandError(f"{shown} is too large to be a mandate", EXIT_USAGE)
    try:
        return Mandate.parse(text)
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(part) for part in error["loc"]) or "the file"
        raise CommandError(
            f"{shown} is not a mandate: {inert_line(where, 60)}: {inert_line(error['msg'], 120)}",
            EXIT_USAGE,
        ) from None


def run_verify(args: argparse.Namespace) -> int:
    from svc_console.core.sanitize import inert_line
    from svc_console.ledger.audit import AuditError
    from svc_console.ledger.mandates import check

    mandate = read_mandate(args.file)
    path, url = ledger_location(args.ledger)
    try:
        checked = check(mandate, path, url)
    except AuditError as exc:
        raise CommandError(inert_line(str(exc), 300), EXIT_USAGE) from None
    request = inert_line(mandate.request_id, 40)
    if checked.problem is not None:
        raise CommandError(inert_line(checked.problem, 400), EXIT_NOT_APPROVED)
    print(
        f"mandate of {request} verified: sha256 {checked.digest} is the one decision event"
        f" {checked.seq} sealed ({checked.events:,} events verified, chain intact)"
    )
    return 0
