"""Grants in the ledger: each made, and each ended (revoked, or the console stopped), as an
event of the audit chain that seals its row; what a grant approved (`used_usdc`) is kept with the
budget reservations (`ledger/budgets.py`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from svc_console.core.models import Evidence
from svc_console.ledger import rows, shared
from svc_console.ledger.store import Ledger


@dataclass(frozen=True)
class GrantRow:
    id: int
    agent: str
    kind: str
    target: str
    effect: str
    per_call_max_usdc: int
    total_usdc: int | None
    used_usdc: int
    expires_at: float | None
    created_at: float
    created_by: str
    request_id: str
    ended_at: float | None
    ended_by: str | None
    ended_reason: str | None


_COLUMNS = ", ".join(GrantRow.__dataclass_fields__)


class NoSuchGrant(Exception):
    pass


def make(
    ledger: Ledger,
    *,
    agent: str,
    kind: str,
    target: str,
    effect: str,
    per_call_max: int,
    total: int | None,
    expires_at: float | None,
    request_id: str,
    evidence: Evidence,
    at: float,
) -> GrantRow:
    row = {
        "agent": agent,
        "kind": kind,
        "target": target,
        "effect": effect,
        "per_call_max_usdc": per_call_max,
        "total_usdc": total,
        "used_usdc": 0,
        "expires_at": expires_at,
        "created_at": at,
        "created_by": evidence.channel,
        "evidence": json.dumps(evidence.model_dump(mode="json")),
        "request_id": request_id,
    }
    if ledger.member is not None:  # the broker whose stop ends a grant "until it stops"
        row["broker"] = ledger.member.key
    with ledger.transaction():
        grant_id = rows.insert(ledger.db, "grants", row)
        ledger.seal("grants", grant_id)
        shown = {k: v for k, v in row.items() if k != "evidence"}
        ledger.event(request_id, "grant_made", {"id": grant_id, **shown}, at)
    found = get(ledger, int(grant_id))
    assert found is not None
    return found


def end(ledger: Ledger, grant_id: int, *, by: str, reason: str, at: float) -> GrantRow:
    """End a grant in force (revoked, or its console stopped); raises NoSuchGrant."""
    with ledger.transaction():
        found = get(ledger, grant_id)
        if found is None or found.ended_at is not None:
            raise NoSuchGrant(grant_id)
        ended = {"ended_at": at, "ended_by": by, "ended_reason": reason}
        rows.update(ledger.db, "grants", grant_id, ended)
        ledger.seal("grants", grant_id)
        ledger.event(found.request_id, "grant_ended", {"id": grant_id, **ended}, at)
    ended_row = get(ledger, grant_id)
    assert ended_row is not None
    return ended_row


def get(ledger: Ledger, grant_id: int) -> GrantRow | None:
    row = ledger.db.execute(f"SELECT {_COLUMNS} FROM grants WHERE id = ?", [grant_id]).fetchone()
    return GrantRow(*row) if row else None


def in_force(ledger: Ledger, now: float) -> list[GrantRow]:
    """The grants not ended and not past their time, oldest first."""
    rows = ledger.db.execute(
        f"SELECT {_COLUMNS} FROM grants WHERE ended_at IS NULL"
        " AND (expires_at IS NULL OR expires_at > ?) ORDER BY id",
        [now],
    ).fetchall()
    return [GrantRow(*row) for row in rows]


def recent(ledger: Ledger, limit: int = 100) -> list[GrantRow]:
    """The latest grants, in force or not, newest first (for `grants list --all`)."""
    rows = ledger.db.execute(
        f"SELECT {_COLUMNS} FROM grants ORDER BY id DESC LIMIT ?", [limit]
    ).fetchall()
    return [GrantRow(*row) for row in rows]


def until_stop(ledger: Ledger) -> list[int]:
    """Grants made "until the console stops" that are still open, of this broker's or left by
    one that stopped, or crashed, before it could end them: on a shared ledger, not those of
    another broker still running."""
    rows = ledger.db.execute(
        "SELECT id, broker FROM grants WHERE ended_at IS NULL AND expires_at IS NULL"
    ).fetchall()
    if ledger.member is None:
        return [row[0] for row in rows]
    others = shared.alive(ledger.db.conn) - {ledger.member.key}
    return [grant_id for grant_id, broker in rows if broker not in others]


def still_in_force(ledger: Ledger, grant_id: int, now: float) -> bool:
    """Read from the ledger (in the caller's transaction, on a shared ledger under the writers'
    lock): whether the grant is neither ended nor past its time."""
    found = get(ledger, grant_id)
    return (
        found is not None
        and found.ended_at is None
        and (found.expires_at is None or found.expires_at > now)
    )
