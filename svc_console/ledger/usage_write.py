"""Writing the synced usage history into the ledger: what the service charged, each charge
reconciled with the decision that allowed it (`ledger/usage_query.py` reads the history).

Reconciliation is done when a charge is written, not when it is read: the result (the matched
request, its decision and ceiling, the state and why) is stored on the row, so filtering by state
and counting flagged charges are index lookups too. `recheck_flagged` re-matches flagged rows
after the ledger has caught up (a charge synced before its execution row was written).
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from svc_console.core.models import Evidence
from svc_console.core.money import to_atomic
from svc_console.core.usage import LedgerMatch, Reconciled, UsageCharge, reconcile

if TYPE_CHECKING:
    from svc_console.ledger.store import Ledger

# The service's own fields: a re-synced charge whose fields differ is updated and reconciled
# again.
_SERVICE_FIELDS = (
    "at",
    "agent",
    "kind",
    "resource",
    "provider",
    "domain_type",
    "chain",
    "protocol",
    "amount",
    "idempotency_key",
    "receipt",
)
_CHUNK = 500  # host parameters per IN (...) list


@dataclass(frozen=True)
class SyncResult:
    received: int
    inserted: int
    updated: int
    unchanged: int
    flagged: int  # of the charges inserted or updated, how many are flagged now


def _service_row(charge: UsageCharge) -> dict[str, object]:
    return {
        "at": charge.at,
        "agent": charge.agent,
        "kind": charge.kind,
        "resource": charge.resource,
        "provider": charge.provider,
        "domain_type": charge.domain_type,
        "chain": charge.chain,
        "protocol": charge.protocol,
        "amount": to_atomic(charge.amount_usdc),
        "idempotency_key": charge.idempotency_key,
        "receipt": charge.receipt,
    }


def _chunks(items: Sequence[str]) -> Iterator[Sequence[str]]:
    for start in range(0, len(items), _CHUNK):
        yield items[start : start + _CHUNK]


def sync_usage(
    ledger: Ledger, charges: Iterable[UsageCharge], *, now: float | None = None
) -> SyncResult:
    """Write charges fetched from `GET /api/agent/usage` into the ledger, in one transaction.

    A charge id already stored with the same fields changes nothing; with different fields (the
    service filled in a receipt, say) it is updated. Every charge written is reconciled at once,
    together with any other charge sharing its idempotency key (the earliest one uses the approval,
    later ones are duplicates)."""
    now = time.time() if now is None else now
    latest: dict[str, dict[str, object]] = {}
    received = 0
    for charge in charges:
        received += 1
        latest[charge.id] = _service_row(charge)  # a page repeating a charge: the last one wins
    conn = ledger.db.conn
    inserted = updated = 0
    touched: list[str] = []
    with ledger.transaction():
        ids = list(latest)
        for chunk in _chunks(ids):
            marks = ",".join("?" * len(chunk))
            # Compared by the fingerprint of what the service said, not by the stored columns:
            # reconciling fills in what the service left out (the agent, say), and that must not
            # read as a change on the next sync.
            stored = dict(
                conn.execute(
                    f"SELECT id, fingerprint FROM usage WHERE id IN ({marks})", list(chunk)
                ).fetchall()
            )
            fresh, changed = [], []
            for charge_id in chunk:
                if charge_id not in stored:
                    fresh.append(charge_id)
                elif stored[charge_id] != fingerprint(latest[charge_id]):
                    changed.append(charge_id)
            _insert_new(conn, [(i, latest[i]) for i in fresh], now)
            _update_changed(conn, [(i, latest[i]) for i in changed], now)
            inserted += len(fresh)
            updated += len(changed)
            touched += fresh + changed
        flagged = _reconcile_ids(conn, touched)
        if touched:
            for charge_id in touched:
                ledger.seal("usage", charge_id)
            ledger.event(None, "usage_synced", {"inserted": inserted, "updated": updated}, now)
    return SyncResult(received, inserted, updated, received - inserted - updated, flagged)


def fingerprint(row: dict[str, object]) -> str:
    """A digest of the service's fields of one charge."""
    text = json.dumps(row, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _insert_new(
    conn: sqlite3.Connection, rows: list[tuple[str, dict[str, object]]], now: float
) -> None:
    if not rows:
        return
    columns = ("id", *_SERVICE_FIELDS, "fingerprint", "state", "flagged", "synced_at")
    sql = f"INSERT INTO usage ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})"
    # Stored as uncovered until `_reconcile_ids` looks, in the same transaction.
    conn.executemany(
        sql,
        [
            (
                charge_id,
                *(row[f] for f in _SERVICE_FIELDS),
                fingerprint(row),
                Reconciled.uncovered.value,
                1,
                now,
            )
            for charge_id, row in rows
        ],
    )


def _update_changed(
    conn: sqlite3.Connection, rows: list[tuple[str, dict[str, object]]], now: float
) -> None:
    if not rows:
        return
    sets = ", ".join(f"{f} = ?" for f in _SERVICE_FIELDS)
    conn.executemany(
        f"UPDATE usage SET {sets}, fingerprint = ?, synced_at = ? WHERE id = ?",
        [
            (*(row[f] for f in _SERVICE_FIELDS), fingerprint(row), now, charge_id)
            for charge_id, row in rows
        ],
    )


# -- reconciling ----------------------------------------------------------------------------------


def recheck_flagged(ledger: Ledger) -> int:
    """Reconcile every flagged charge again (the ledger may know more now); returns how many stay
    flagged."""
    conn = ledger.db.conn
    with ledger.db.atomic():
        ids = [row[0] for row in conn.execute("SELECT id FROM usage WHERE flagged = 1")]
        return _reconcile_ids(conn, ids)


def _reconcile_ids(conn: sqlite3.Connection, ids: Sequence[str]) -> int:
    """Match these charges (and every charge sharing an idempotency key with them) with the
    ledger, store the outcome, and return how many of `ids` are flagged."""
    if not ids:
        return 0
    keys: set[str] = set()
    keyless: list[str] = []
    for chunk in _chunks(list(ids)):
        marks = ",".join("?" * len(chunk))
        for charge_id, key in conn.execute(
            f"SELECT id, idempotency_key FROM usage WHERE id IN ({marks})", list(chunk)
        ):
            if key is None:
                keyless.append(charge_id)
            else:
                keys.add(key)
    updates: list[tuple[object, ...]] = []
    for chunk in _chunks(sorted(keys)):
        matches = _ledger_matches(conn, chunk)
        marks = ",".join("?" * len(chunk))
        # Earliest charge first: it is the one the approval covers.
        rows = conn.execute(
            f"SELECT id, idempotency_key, amount FROM usage WHERE idempotency_key IN ({marks})"
            " ORDER BY idempotency_key, at, seq",
            list(chunk),
        ).fetchall()
        previous_key = None
        for charge_id, key, amount in rows:
            match = matches.get(key)
            if match is not None and key == previous_key:
                match = replace(match, first_charge=False)
            previous_key = key
            updates.append(_outcome(charge_id, amount, match, has_key=True))
    for charge_id in keyless:
        amount = conn.execute("SELECT amount FROM usage WHERE id = ?", [charge_id]).fetchone()[0]
        updates.append(_outcome(charge_id, amount, None, has_key=False))
    conn.executemany(
        "UPDATE usage SET request_id = ?, decision = ?, decided_by = ?, ceiling = ?,"
        " agent = coalesce(agent, ?), provider = coalesce(provider, ?),"
        " domain_type = coalesce(domain_type, ?), state = ?, flag = ?, flagged = ?"
        " WHERE id = ?",
        updates,
    )
    wanted = set(ids)
    return sum(1 for update in updates if update[-1] in wanted and update[-2])


def _outcome(
    charge_id: str, amount: int, match: LedgerMatch | None, *, has_key: bool
) -> tuple[object, ...]:
    state, flag = reconcile(amount, match, has_key=has_key)
    decision = None
    if match is not None and match.approved is not None:
        decision = "approved" if match.approved else "denied"
    return (
        match.request_id if match else None,
        decision,
        match.decided_by if match else None,
        match.ceiling if match else None,
        match.agent if match else None,
        match.provider if match else None,
        match.domain_type if match else None,
        state.value,
        flag,
        int(state != Reconciled.ok),
        charge_id,
    )


def _ledger_matches(conn: sqlite3.Connection, keys: Sequence[str]) -> dict[str, LedgerMatch]:
    """The execution each idempotency key names, with its request and the decision it ran under."""
    marks = ",".join("?" * len(keys))
    rows = conn.execute(
        "SELECT e.idempotency_key, e.request_id, r.agent, r.provider,"
        " json_extract(r.endpoint, '$.domain_type'), d.approved, d.by, d.ceiling_usdc, d.evidence"
        " FROM executions e JOIN requests r ON r.id = e.request_id"
        " LEFT JOIN decisions d ON d.id = e.decision_id"
        f" WHERE e.idempotency_key IN ({marks})",
        list(keys),
    )
    return {
        key: LedgerMatch(
            request_id=request_id,
            agent=agent,
            provider=provider,
            domain_type=domain_type,
            approved=None if approved is None else bool(approved),
            decided_by=_decided_by(by, evidence),
            ceiling=ceiling,
        )
        for key, request_id, agent, provider, domain_type, approved, by, ceiling, evidence in rows
    }


def _decided_by(by: str | None, evidence: str | None) -> str | None:
    """Who decided, with the evidence the console observed when it has any."""
    if evidence is None:
        return by
    return Evidence.model_validate_json(evidence).summary()
