"""`svc-console ledger backup FILE` and `ledger restore FILE [--older]`: backups of the ledger
whose audit chain is verified, with the ledger's own key, before they are trusted.

`backup` copies the configured ledger (the sandbox's when no service is set) while the broker
runs, into a new owner-only file, and verifies the copy. `restore` verifies the backup first,
refuses a chain shorter than the one it replaces without `--older`, refuses while a broker runs on
that ledger, and keeps the replaced ledger beside it. A ledger on PostgreSQL is refused with the
guide's pointer (docs/operations.md: `pg_dump`). The work is `ledger.backup`'s.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from svc_console.cli.errors import EXIT_USAGE, CommandError

GUIDE = "docs/operations.md"


def add_commands(commands: Any) -> None:
    """Add `ledger backup` and `ledger restore`."""
    ledger = commands.add_parser(
        "ledger", help="the ledger: backups whose audit chain is verified before use"
    ).add_subparsers(title="ledger commands", metavar="COMMAND", required=True)
    backup = ledger.add_parser(
        "backup",
        help="copy the ledger into a new owner-only file, consistent while the broker runs",
        description="Copy the configured ledger (SQLite's online backup: one moment of it, while"
        " the broker goes on writing) into FILE, a new owner-only file, and verify the copy's"
        " audit chain with the ledger's key. The key is not in the backup: keep it apart.",
    )
    backup.add_argument("file", type=Path, metavar="FILE")
    backup.set_defaults(run=run_backup)
    restore = ledger.add_parser(
        "restore",
        help="put a verified backup in place of the ledger; the replaced one is kept beside it",
        description="Verify FILE's audit chain with this home's audit key (a backup tampered with"
        " or damaged is refused, nothing changed), then put it in place of the configured ledger,"
        " keeping the one it replaces beside it. Refused while a broker runs on that ledger.",
    )
    restore.add_argument("file", type=Path, metavar="FILE")
    restore.add_argument(
        "--older",
        action="store_true",
        help="restore even a backup whose chain is shorter than the ledger's (events are lost)",
    )
    restore.set_defaults(run=run_restore)


def _target() -> tuple[Any, Path]:
    """The paths and the ledger file the console uses; a ledger on PostgreSQL is refused."""
    from svc_console.config.errors import SettingsError
    from svc_console.config.paths import resolve_paths
    from svc_console.config.service import configured_ledger, configured_ledger_url
    from svc_console.core.sanitize import inert_line
    from svc_console.ledger.engine import url_shown

    paths = resolve_paths()
    try:
        url = configured_ledger_url(paths)
    except SettingsError as exc:
        raise CommandError(inert_line(str(exc), 300), EXIT_USAGE) from None
    if url is not None:
        raise CommandError(
            f"the ledger is on PostgreSQL ({inert_line(url_shown(url), 200)}): back it up and"
            f" restore it with pg_dump and pg_restore, as {GUIDE} says",
            EXIT_USAGE,
        )
    return paths, configured_ledger(paths)


def _key(ledger: Path) -> bytes | None:
    from svc_console.config.audit_key import NoAuditKey, audit_key

    try:
        return audit_key(ledger, create=False)
    except (NoAuditKey, OSError, ValueError):
        return None


def _said(head: tuple[int, str] | None) -> str:
    return f"{head[0]:,} audit events, head {head[0]}:{head[1]}" if head else "no audit event yet"


def run_backup(args: argparse.Namespace) -> int:
    from svc_console.core.sanitize import inert_line
    from svc_console.ledger.backup import BackupError, backup

    _, ledger = _target()
    if not ledger.is_file():
        raise CommandError(f"no ledger at {inert_line(ledger, 200)}: nothing to back up", 1)
    try:
        made = backup(ledger, args.file, _key(ledger))
    except BackupError as exc:
        raise CommandError(inert_line(str(exc), 400), 1) from None
    checked = (
        "verified with the ledger's audit key"
        if made.verified
        else "NOT verified: no audit key for this ledger here"
    )
    print(
        f"{inert_line(ledger, 200)} backed up to {inert_line(made.path, 200)} (owner-only):"
        f" {_said(made.head)}, {checked}. Keep the audit key apart from it ({GUIDE})."
    )
    return 0


def run_restore(args: argparse.Namespace) -> int:
    from svc_console.config.audit_key import key_file
    from svc_console.core.private_files import ensure_private_dir
    from svc_console.core.sanitize import inert_line
    from svc_console.ledger.backup import BackupError, restore

    paths, ledger = _target()
    _refuse_beside_a_broker(paths, ledger)
    key = _key(ledger)
    if key is None:
        raise CommandError(
            f"no audit key for the ledger at {inert_line(ledger, 200)}: put the key the backup"
            f" was made with at {inert_line(key_file(ledger), 200)} (or in the OS keyring) and"
            " restore again; a backup is used only once its chain verifies with it",
            1,
        )
    if ledger.parent == paths.home:
        ensure_private_dir(paths.home)
    try:
        done = restore(args.file, ledger, key, older=args.older)
    except BackupError as exc:
        raise CommandError(inert_line(f"nothing restored: {exc}", 500), 1) from None
    kept = (
        f"; the ledger it replaced ({done.replaced_events:,} events) is kept at"
        f" {inert_line(done.replaced, 200)}"
        if done.replaced is not None
        else ""
    )
    print(
        f"{inert_line(args.file, 200)} restored into {inert_line(ledger, 200)}: its chain"
        f" verified ({_said(done.head)}){kept}"
    )
    return 0


def _refuse_beside_a_broker(paths: Any, ledger: Path) -> None:
    """A broker answering for this home on this very ledger: it would go on writing the ledger
    being replaced (the broker's lock, taken by the restore, is the second guard)."""
    from svc_console.services.broker_probe import running_broker

    hello = running_broker(paths.operator_socket)
    if hello is None:
        return
    service = hello.get("service") or {}
    if paths.ledger(sandbox=bool(service.get("sandbox"))) == ledger:
        raise CommandError(
            "a broker is running on this ledger (the console, or svc-console serve): stop it"
            " and restore again; nothing restored",
            1,
        )
