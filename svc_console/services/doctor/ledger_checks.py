"""The doctor's checks of the ledger: reachable (a PostgreSQL one too) and of a schema this
console knows, its audit key present, and its chain against an anchor kept outside the home."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from svc_console.config.errors import SettingsError
from svc_console.config.paths import Paths
from svc_console.config.service import configured_ledger, configured_ledger_url
from svc_console.ledger.audit import AuditError, open_read_only
from svc_console.services.doctor.findings import Finding, note, ok, serious, warning

ANCHOR_AGE_S = 7 * 86_400  # an anchor older than this leaves a week of events to the head file
ANCHOR_FIX = (
    "keep one where the console's user cannot write: svc-console audit anchor --to FILE (a share"
    " of another account, a ticket), after each backup; check it here with --anchor FILE"
)


def examine(paths: Paths, anchor: Path | None) -> list[Finding]:
    ledger = configured_ledger(paths)
    try:
        url = configured_ledger_url(paths)
    except SettingsError as exc:
        return [serious("ledger", str(exc), f"correct [ledger] in {paths.settings}")]
    shown = _shown(ledger, url)
    if url is None and not ledger.exists():
        return [note("ledger", f"no ledger at {ledger} yet: made at the first start")]
    try:
        conn = open_read_only(ledger, url)
    except AuditError as exc:
        fix = "check the URL, the server and ~/.pgpass" if url else "restore it from a backup"
        return [serious("ledger", f"the ledger cannot be opened: {exc}", fix)]
    try:
        found = [_schema(conn, shown, url), *_key(ledger, shown, _events(conn))]
    finally:
        conn.close()
    if found[-1].level != "serious":
        found.append(_anchor(ledger, url, anchor))
    return found


def _shown(ledger: Path, url: str | None) -> str:
    from svc_console.ledger.engine import url_shown

    return url_shown(url) if url else str(ledger)


def _events(conn: Any) -> int:
    row = conn.execute("SELECT max(seq) FROM events").fetchone()
    return int(row[0] or 0)


def _schema(conn: Any, shown: str, url: str | None) -> Finding:
    from svc_console.ledger.schema import MIGRATIONS

    if url:
        table = conn.execute("SELECT to_regclass('ledger_schema')").fetchone()[0]
        row = conn.execute("SELECT max(version) FROM ledger_schema").fetchone() if table else None
        version = int(row[0]) if row and row[0] is not None else 0
    else:
        version = int(conn.execute("PRAGMA user_version").fetchone()[0])
    known = len(MIGRATIONS)
    if version > known:
        return serious(
            "ledger",
            f"the ledger {shown} has schema {version}, written by a newer svc-console (this one"
            f" knows {known})",
            "upgrade svc-console on this host before starting it",
        )
    if version < known:
        return warning(
            "ledger",
            f"the ledger {shown} has schema {version}; this svc-console migrates it to {known}"
            " at its next start",
            "back it up first: svc-console ledger backup FILE (PostgreSQL: pg_dump)",
        )
    return ok("ledger", f"the ledger {shown} answers, schema {version}")


def _key(ledger: Path, shown: str, events: int) -> list[Finding]:
    from svc_console.config.audit_key import NoAuditKey, audit_key, lost_key
    from svc_console.core.private_files import NotPrivate

    try:
        audit_key(ledger, create=False)
    except NoAuditKey:
        if events == 0:
            return [note("audit-key", "no audit key yet: made with the ledger's first event")]
        return [serious("audit-key", f"{shown}: no audit key", lost_key(ledger, events, shown))]
    except (OSError, ValueError, NotPrivate) as exc:
        return [serious("audit-key", f"the audit key cannot be used: {exc}", "restore it")]
    return [ok("audit-key", f"the audit key of {shown} is present ({events:,} events)")]


def _anchor(ledger: Path, url: str | None, path: Path | None) -> Finding:
    from svc_console.ledger import audit_anchor
    from svc_console.ledger.audit import verify

    if path is None:
        return warning("anchor", "no anchor kept outside the home was checked", ANCHOR_FIX)
    try:
        kept = audit_anchor.read(path)
        report = verify(ledger, url=url, outside=kept)
    except (audit_anchor.AnchorError, AuditError) as exc:
        return serious("anchor", str(exc), "give the anchor audit anchor wrote for this ledger")
    if report.broken is not None:
        return serious(
            "anchor",
            f"the chain does not verify against {path}: event {report.broken.seq}:"
            f" {report.broken.why}",
            "stop the console and find what changed the ledger (docs/audit.md); restore a"
            " backup that verifies: svc-console ledger restore FILE",
        )
    if report.problems:
        return serious(
            "anchor",
            f"the ledger's tables disagree with its chain: {report.problems[0].why}",
            "run svc-console audit verify for every problem; restore a backup that verifies",
        )
    age = time.time() - kept.at
    if age > ANCHOR_AGE_S:
        return warning(
            "anchor",
            f"the chain verifies against {path}, anchored {age / 86_400:.0f} days ago: events"
            " since are checked only against the head file beside the ledger",
            ANCHOR_FIX,
        )
    return ok("anchor", f"the chain verifies against the anchor {path} (event {kept.seq})")
