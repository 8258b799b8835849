"""Budget reservations and running totals in the ledger, so budgets survive a restart without a
scan of past requests.

An approval (by the operator or by a policy rule) reserves its ceiling in the request's buckets
(`core.buckets`) in the same transaction as the decision; success settles it at the amount
actually charged; failure, denial, expiry, cancellation or a re-price release it.
`budget_totals` holds the totals per bucket (reserved and settled) by minute, hour and day, all
three written with every change; the policy engine loads them at start. Each function runs
inside the caller's transaction and returns the change it made to the totals, for the in-memory
copy to follow once the transaction commits.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager
from typing import Any, Protocol

from svc_console.core.buckets import Bucket, Change, buckets_for, slot_of
from svc_console.core.names import counted_as
from svc_console.ledger import rows
from svc_console.ledger.engine import Database


class Chained(Protocol):
    """The ledger, as far as pruning needs it (its own transactions and events)."""

    db: Database

    def transaction(self) -> AbstractContextManager[None]: ...

    def event(self, request_id: str | None, kind: str, data: dict[str, Any], at: float) -> None: ...


MINUTE, HOUR, DAY = 60, 3600, 86_400
GRAINS = (MINUTE, HOUR, DAY)


def reserve(
    db: Database,
    request_id: str,
    decision_id: int,
    amount: int,
    at: float,
    rule: str | None = None,
) -> Change:
    """Reserve `amount` (atomic USDC) for an approved request in its buckets (and, approved by an
    auto-approve `rule`, in that rule's)."""
    agent, verified, provider, domain_type = db.execute(
        "SELECT agent, agent_verified, provider, json_extract(endpoint, '$.domain_type')"
        " FROM requests WHERE id = ?",
        [request_id],
    ).fetchone()
    # Every unverified agent spends from one budget, as the policy reads it (policy/facts.py).
    buckets = buckets_for(counted_as(agent, bool(verified)), provider, domain_type, rule)
    slot = slot_of(at)
    rows.insert(
        db,
        "budget_reservations",
        {
            "request_id": request_id,
            "decision_id": decision_id,
            "slot": slot,
            "buckets": json.dumps(buckets),
            "reserved_usdc": amount,
            "settled_usdc": 0,
            "state": "reserved",
            "at": at,
        },
    )
    add(db, buckets, slot, reserved=amount)
    _grant_used(db, buckets, amount)
    return buckets, slot, amount


def settle(db: Database, request_id: str, charged: int, at: float) -> Change | None:
    """The request succeeded and was charged `charged`: the reservation becomes settled spend."""
    open_row = _open(db, request_id)
    if open_row is None:
        return None
    row_id, buckets, slot, reserved = open_row
    rows.update(
        db,
        "budget_reservations",
        row_id,
        {"state": "settled", "settled_usdc": charged, "closed_at": at},
    )
    add(db, buckets, slot, reserved=-reserved, settled=charged)
    _grant_used(db, buckets, charged - reserved)
    return buckets, slot, charged - reserved


def release(db: Database, request_id: str, at: float) -> Change | None:
    """Nothing was or will be paid on this approval: give its reservation back."""
    open_row = _open(db, request_id)
    if open_row is None:
        return None
    row_id, buckets, slot, reserved = open_row
    rows.update(db, "budget_reservations", row_id, {"state": "released", "closed_at": at})
    add(db, buckets, slot, reserved=-reserved)
    _grant_used(db, buckets, -reserved)
    return buckets, slot, -reserved


def totals_rows(db: Database, now: float) -> Iterator[tuple[int, str, str, int, int]]:
    """(grain, scope, key, end of the minute/hour/day, reserved + settled) that the rolling
    windows ending at `now` can reach, each grain in time order: the minutes of the last day
    (the hour and day windows), the hours of the last week (the week), the days of the last
    month (the month). Three ranges of the clustered table: a busy month is read quickly."""
    for grain, seconds in ((DAY, 30 * DAY), (HOUR, 7 * DAY), (MINUTE, DAY)):
        yield from db.execute(
            "SELECT grain, scope, key, at, reserved_usdc + settled_usdc FROM budget_totals"
            " WHERE grain = ? AND at > ? ORDER BY at",
            [grain, now - seconds],
        )


def prune(ledger: Chained, before: float) -> int:
    """Forget totals no budget window can reach (older than `before`); returns rows removed.
    The requests, decisions and charges they summed stay in the ledger, and the audit chain says
    where the totals now start (`audit verify` expects none missing after it)."""
    with ledger.transaction():
        removed = 0
        for grain in GRAINS:
            cursor = ledger.db.execute(
                "DELETE FROM budget_totals WHERE grain = ? AND at < ?", [grain, before]
            )
            removed += cursor.rowcount
        if removed:
            ledger.event(None, "budget_pruned", {"before": before}, time.time())
    return removed


def open_reserved(db: Database) -> dict[Bucket, int]:
    """What the open reservations (approvals not yet charged or released) hold, by bucket: a
    few rows at any time, read through the index of open reservations."""
    held: dict[Bucket, int] = {}
    for buckets, amount in db.execute(
        "SELECT buckets, reserved_usdc FROM budget_reservations WHERE state = 'reserved'"
    ):
        for scope, key in json.loads(buckets):
            held[(scope, key)] = held.get((scope, key), 0) + amount
    return held


def reservation(db: Database, request_id: str) -> dict | None:
    """The latest reservation of a request (for screens and tests)."""
    found = rows.dicts(
        db.execute(
            "SELECT * FROM budget_reservations WHERE request_id = ? ORDER BY id DESC LIMIT 1",
            [request_id],
        )
    )
    return found[0] if found else None


def backfill(db: Database) -> None:
    """Count the approvals a ledger recorded before it had budget tables (schema step 2): open
    ones as reserved, succeeded ones as settled at what was charged. Runs once, in the migration."""
    rows = db.execute(
        """SELECT r.id, r.state, d.id, d.at, d.ceiling_usdc,
                  (SELECT e.charged_usdc FROM executions e WHERE e.request_id = r.id
                     AND e.charged_usdc IS NOT NULL ORDER BY e.id DESC LIMIT 1)
           FROM requests r JOIN decisions d ON d.id = (
               SELECT max(id) FROM decisions WHERE request_id = r.id)
           WHERE d.approved = 1 AND d.ceiling_usdc IS NOT NULL
             AND r.state IN ('approved', 'auto_approved', 'executing', 'awaiting_funds',
                             'unknown', 'succeeded')
             AND NOT EXISTS (SELECT 1 FROM budget_reservations b WHERE b.request_id = r.id)"""
    ).fetchall()
    for request_id, state, decision_id, at, ceiling, charged in rows:
        reserve(db, request_id, decision_id, ceiling, at)
        if state == "succeeded":
            settle(db, request_id, charged or 0, at)


def _open(db: Database, request_id: str) -> tuple[int, tuple, int, int] | None:
    row = db.execute(
        "SELECT id, buckets, slot, reserved_usdc FROM budget_reservations"
        " WHERE request_id = ? AND state = 'reserved' ORDER BY id DESC LIMIT 1",
        [request_id],
    ).fetchone()
    if row is None:
        return None
    buckets = tuple((scope, key) for scope, key in json.loads(row[1]))
    return row[0], buckets, row[2], row[3]


def grants_in(buckets: tuple[Bucket, ...]) -> list[int]:
    """The grants whose approvals these buckets count (a grant's own buckets say which)."""
    return [
        int(scope[len(_GRANT_SCOPE) : -len("/overall")])
        for scope, _key in buckets
        if scope.startswith(_GRANT_SCOPE) and scope.endswith("/overall")
    ]


def _grant_used(db: Database, buckets: tuple[Bucket, ...], delta: int) -> None:
    """What a grant approved follows its approvals' reservations (the caller seals the row)."""
    for grant in grants_in(buckets):
        db.execute("UPDATE grants SET used_usdc = used_usdc + ? WHERE id = ?", [delta, grant])


_GRANT_SCOPE = "auto:grant:"  # core.buckets.rule_scope of a grant's rule, `grant:7`


def add(
    db: Database,
    buckets: tuple[Bucket, ...],
    slot: int,
    *,
    reserved: int = 0,
    settled: int = 0,
) -> None:
    """Add to each bucket's minute, and to the hour and the day the minute ends in (inside the
    caller's transaction; reserve, settle and release use it, as may a rebuild of totals)."""
    stamps = [(grain, -(-slot // grain) * grain) for grain in GRAINS]
    db.conn.executemany(
        "INSERT INTO budget_totals (grain, at, scope, key, reserved_usdc, settled_usdc)"
        " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (grain, at, scope, key) DO UPDATE SET"
        # Qualified with the table: PostgreSQL, unlike SQLite, will not guess which one is meant.
        " reserved_usdc = budget_totals.reserved_usdc + excluded.reserved_usdc,"
        " settled_usdc = budget_totals.settled_usdc + excluded.settled_usdc",
        [
            (grain, at, scope, key, reserved, settled)
            for scope, key in buckets
            for grain, at in stamps
        ],
    )
