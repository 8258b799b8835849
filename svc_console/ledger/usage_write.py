"""Writing the synced usage history into the ledger: what the service charged, each charge
reconciled with the decision that allowed it (`ledger/usage_query.py` reads the history).

Nothing written is replaced (DESIGN.md invariant 11): a charge is its service's and its id's, and
a second version of one (the same id from the same service, other facts) is a row of its own,
beside the first, flagged `conflict`. Each row is sealed into the audit chain by its `row_key`.

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
from svc_console.core.money import format_usdc, from_atomic, to_atomic
from svc_console.core.usage import LedgerMatch, Reconciled, UsageCharge, reconcile

if TYPE_CHECKING:
    from svc_console.ledger.store import Ledger

# The service's own fields of a charge, what its fingerprint covers.
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
    inserted: int  # charges the ledger did not hold
    conflicts: int  # versions of a charge held with other facts, kept beside the first
    unchanged: int
    flagged: int  # of the charges inserted (conflicts included), how many are flagged now


@dataclass(frozen=True)
class _Version:
    service: str | None  # None: synced before services were told apart
    version: int
    fingerprint: str | None


def row_key(service: str, charge_id: str, version: int) -> str:
    """A usage row's own key (what the audit chain seals it by). A service's identity holds no
    space and the version ends it, so no two (service, id, version) share one."""
    return f"{service} {charge_id} v{version}"


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
    ledger: Ledger,
    charges: Iterable[UsageCharge],
    *,
    service: str,
    now: float | None = None,
) -> SyncResult:
    """Write charges that `service` (`core.usage.service_identity`) listed at
    `GET /api/agent/usage` into the ledger, in one transaction.

    Nothing held is replaced (DESIGN.md invariant 11). A charge is the service's and its id's:
    one already held with the same facts changes nothing (whichever service it was kept under:
    the same facts are the same charge); the same id from another service is another charge;
    the same id from this service with other facts is a second version, kept beside the first,
    flagged `conflict` and told in the audit chain. Every charge written is reconciled at once,
    with any other charge sharing its idempotency key (the earliest uses the approval)."""
    if not service or any(c.isspace() for c in service):
        raise ValueError("a service's identity is a word without spaces")
    now = time.time() if now is None else now
    received = 0
    arrived: dict[tuple[str, str], dict[str, object]] = {}  # (id, fingerprint): row, in order
    for charge in charges:
        received += 1
        row = _service_row(charge)
        arrived.setdefault((charge.id, fingerprint(row)), row)
    conn = ledger.db.conn
    with ledger.transaction():
        known = _versions_held(conn, sorted({charge_id for charge_id, _ in arrived}))
        fresh: list[tuple[str, int, dict[str, object]]] = []
        conflicts: list[tuple[str, int, dict[str, object], list[str | None]]] = []
        for (charge_id, digest), row in arrived.items():
            versions = known.setdefault(charge_id, [])
            if any(v.fingerprint == digest for v in versions):
                continue
            ours = [v for v in versions if v.service in (service, None)]
            version = max((v.version for v in ours), default=0) + 1
            if ours:
                conflicts.append((charge_id, version, row, [v.fingerprint for v in ours]))
            else:
                fresh.append((charge_id, version, row))
            versions.append(_Version(service, version, digest))
        written = [*fresh, *((i, v, r) for i, v, r, _ in conflicts)]
        keys = _insert(conn, service, written, now)
        flagged = _reconcile_keys(conn, keys)
        for key in keys:
            ledger.seal("usage", key)
        for charge_id, version, row, earlier in conflicts:
            data = _conflict(service, charge_id, version, row, earlier)
            ledger.event(None, "charge_conflict", data, now)
        if keys:
            data = {"service": service, "inserted": len(fresh), "conflicts": len(conflicts)}
            ledger.event(None, "usage_synced", data, now)
    unchanged = received - len(fresh) - len(conflicts)
    return SyncResult(received, len(fresh), len(conflicts), unchanged, flagged)


def _conflict(
    service: str, charge_id: str, version: int, row: dict[str, object], earlier: list[str | None]
) -> dict[str, object]:
    """What the audit chain says of a second version: whose, which, and what it charged."""
    return {
        "service": service,
        "id": charge_id,
        "version": version,
        "amount_usdc": format_usdc(from_atomic(int(row["amount"]))),  # type: ignore[call-overload]
        "fingerprint": fingerprint(row),
        "earlier": earlier,
    }


def fingerprint(row: dict[str, object]) -> str:
    """A digest of the service's fields of one charge."""
    text = json.dumps(row, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _versions_held(conn: sqlite3.Connection, ids: Sequence[str]) -> dict[str, list[_Version]]:
    """Every version the ledger holds of these charge ids, whichever service's."""
    held: dict[str, list[_Version]] = {}
    for chunk in _chunks(ids):
        marks = ",".join("?" * len(chunk))
        for charge_id, service, version, digest in conn.execute(
            f"SELECT id, service, version, fingerprint FROM usage WHERE id IN ({marks})",
            list(chunk),
        ):
            held.setdefault(charge_id, []).append(_Version(service, version, digest))
    return held


def _insert(
    conn: sqlite3.Connection,
    service: str,
    rows: list[tuple[str, int, dict[str, object]]],
    now: float,
) -> list[str]:
    """Insert these versions; their row keys. Stored as uncovered until `_reconcile_keys`
    looks, in the same transaction."""
    columns = ("row_key", "service", "id", "version", *_SERVICE_FIELDS)
    columns += ("fingerprint", "state", "flagged", "synced_at")
    sql = f"INSERT INTO usage ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})"
    values = [
        (
            row_key(service, charge_id, version),
            service,
            charge_id,
            version,
            *(row[f] for f in _SERVICE_FIELDS),
            fingerprint(row),
            Reconciled.uncovered.value,
            1,
            now,
        )
        for charge_id, version, row in rows
    ]
    if values:
        conn.executemany(sql, values)
    return [value[0] for value in values]


# -- reconciling ----------------------------------------------------------------------------------


def recheck_flagged(ledger: Ledger) -> int:
    """Reconcile every flagged charge again (the ledger may know more now); returns how many stay
    flagged."""
    conn = ledger.db.conn
    with ledger.db.atomic():
        keys = [row[0] for row in conn.execute("SELECT row_key FROM usage WHERE flagged = 1")]
        return _reconcile_keys(conn, keys)


def _reconcile_keys(conn: sqlite3.Connection, row_keys: Sequence[str]) -> int:
    """Match these rows (and every row sharing an idempotency key with them) with the ledger,
    store the outcome, and return how many of `row_keys` are flagged.

    A second version of a charge is a conflict whatever the ledger says of its key; only first
    versions take part in who used an approval first."""
    if not row_keys:
        return 0
    keys: set[str] = set()
    rows: list[tuple[str, str | None, int, int]] = []  # row key, idempotency key, amount, version
    for chunk in _chunks(list(row_keys)):
        marks = ",".join("?" * len(chunk))
        found = conn.execute(
            "SELECT row_key, idempotency_key, amount, version FROM usage"
            f" WHERE row_key IN ({marks})",
            list(chunk),
        ).fetchall()
        rows += found
        keys.update(key for _, key, _, version in found if key is not None and version == 1)
    updates: list[tuple[object, ...]] = []
    for chunk in _chunks(sorted(keys)):
        matches = _ledger_matches(conn, chunk)
        marks = ",".join("?" * len(chunk))
        # Earliest charge first: it is the one the approval covers.
        previous_key = None
        for key_of_row, key, amount in conn.execute(
            "SELECT row_key, idempotency_key, amount FROM usage"
            f" WHERE idempotency_key IN ({marks}) AND version = 1"
            " ORDER BY idempotency_key, at, seq",
            list(chunk),
        ).fetchall():
            match = matches.get(key)
            if match is not None and key == previous_key:
                match = replace(match, first_charge=False)
            previous_key = key
            updates.append(_outcome(key_of_row, amount, match, has_key=True))
    later = [(k, key) for k, key, _, version in rows if version > 1]
    later_matches: dict[str, LedgerMatch] = {}
    for chunk in _chunks(sorted({key for _, key in later if key is not None})):
        later_matches.update(_ledger_matches(conn, chunk))
    for key_of_row, key in later:
        updates.append(_outcome(key_of_row, 0, later_matches.get(key or ""), conflict=True))
    for key_of_row, key, amount, version in rows:
        if key is None and version == 1:
            updates.append(_outcome(key_of_row, amount, None, has_key=False))
    conn.executemany(
        "UPDATE usage SET request_id = ?, decision = ?, decided_by = ?, ceiling = ?,"
        " agent = coalesce(agent, ?), provider = coalesce(provider, ?),"
        " domain_type = coalesce(domain_type, ?), state = ?, flag = ?, flagged = ?"
        " WHERE row_key = ?",
        updates,
    )
    wanted = set(row_keys)
    return sum(1 for update in updates if update[-1] in wanted and update[-2])


def _outcome(
    row: str,
    amount: int,
    match: LedgerMatch | None,
    *,
    has_key: bool = True,
    conflict: bool = False,
) -> tuple[object, ...]:
    if conflict:
        state, flag = Reconciled.conflict, "conflict"
    else:
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
        row,
    )


def _ledger_matches(conn: sqlite3.Connection, keys: Sequence[str]) -> dict[str, LedgerMatch]:
    """The execution each idempotency key names, with its request and the decision it ran under."""
    if not keys:
        return {}
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
