"""Each version of a policy file the console saw, in the ledger: its text, SHA-256, when, who
saved it (when known), and whether it was valid (an invalid one is recorded too, with its errors,
and never put in force).

A version is also an event of the hash chain, so a policy swapped behind the auditor's back shows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from svc_console.ledger import rows
from svc_console.ledger.store import Ledger


@dataclass(frozen=True)
class PolicyVersion:
    id: int
    path: str
    sha256: str
    at: float
    saved_by: str | None
    valid: bool
    error: str | None
    text: str


def record(
    ledger: Ledger,
    *,
    path: str,
    text: str,
    sha256: str,
    at: float,
    saved_by: str | None,
    valid: bool,
    error: str | None = None,
) -> PolicyVersion | None:
    """Record a version unless it is the one last recorded for this path; returns the new
    version, or None when nothing changed (a restart, a save without edits)."""
    last = latest(ledger, path)
    if last is not None and last.sha256 == sha256 and last.valid == valid:
        return None
    row = {
        "path": path,
        "sha256": sha256,
        "at": at,
        "saved_by": saved_by,
        "valid": int(valid),
        "error": error,
        "text": text,
    }
    with ledger.transaction():
        version_id = rows.insert(ledger.db, "policy_versions", row)
        ledger.seal("policy_versions", version_id)
        ledger.event(
            None,
            "policy_version",
            {
                "id": version_id,
                "path": path,
                "sha256": sha256,
                "valid": valid,
                "saved_by": saved_by,
            },
            at,
        )
    return _version({**row, "id": version_id})


def latest(
    ledger: Ledger, path: str | None = None, *, valid_only: bool = False
) -> PolicyVersion | None:
    versions = history(ledger, path, limit=1, valid_only=valid_only)
    return versions[0] if versions else None


def history(
    ledger: Ledger, path: str | None = None, *, limit: int = 50, valid_only: bool = False
) -> list[PolicyVersion]:
    """Newest first."""
    where, args = [], []
    if path is not None:
        where.append("path = ?")
        args.append(path)
    if valid_only:
        where.append("valid = 1")
    condition = " AND ".join(where) or "1 = 1"
    cursor = ledger.db.execute(
        f"SELECT * FROM policy_versions WHERE {condition} ORDER BY id DESC LIMIT ?", [*args, limit]
    )
    return [_version(row) for row in rows.dicts(cursor)]


def _version(row: dict[str, Any]) -> PolicyVersion:
    return PolicyVersion(
        id=int(row["id"]),
        path=row["path"],
        sha256=row["sha256"],
        at=row["at"],
        saved_by=row["saved_by"],
        valid=bool(row["valid"]),
        error=row["error"],
        text=row["text"],
    )
