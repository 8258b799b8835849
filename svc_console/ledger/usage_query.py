"""Querying the synced usage history: the rows the screen shows and the counts, sums and
breakdowns finance runs over it (`ledger/usage_write.py` writes and reconciles the charges).

A table of a million charges is never loaded whole. The screen asks for the rows it shows (a
window by offset, or the page after/before a row it already has), and every count, sum and
breakdown comes from SQL. Each query is shaped for an index of `_v3` (`ledger/schema.py`);
`tests/ledger/test_usage_ledger.py` checks the plans with EXPLAIN QUERY PLAN. Each row carries its
reconciliation, stored when it was written, so filtering by state is an index lookup too.

Every function takes any `sqlite3.Connection`: the screen and the export open the ledger file
read-only (`readers.open_reader`), so a long query never holds up the broker's writes.
"""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from decimal import Decimal

from svc_console.core.money import from_atomic
from svc_console.core.usage import DAY_S, FLAG_TEXT, Reconciled, UsageFilter, day_of
from svc_console.ledger.engine import table_exists

# The columns a query returns, in `UsageRow`'s order.
ROW_COLUMNS = (
    "seq",
    "id",
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
    "request_id",
    "decision",
    "decided_by",
    "ceiling",
    "state",
    "flag",
    "service",
    "version",
)
_SELECT = ", ".join(ROW_COLUMNS)
# Newest first; `seq` (the rowid) breaks ties between charges made in the same instant.
_NEWEST = "ORDER BY at DESC, seq DESC"
_OLDEST = "ORDER BY at ASC, seq ASC"


@dataclass(frozen=True, slots=True)
class UsageRow:
    """One charge with what the ledger says about it. Amounts are atomic USDC; every string from
    the service is untrusted text (shown through `core.sanitize`)."""

    seq: int
    id: str
    at: float
    agent: str | None
    kind: str
    resource: str
    provider: str | None
    domain_type: str | None
    chain: str
    protocol: str
    amount: int
    idempotency_key: str | None
    receipt: str | None
    request_id: str | None
    decision: str | None
    decided_by: str | None
    ceiling: int | None
    state: str
    flag: str | None
    service: str | None  # whose charge it is (None: synced before services were told apart)
    version: int  # 2 and up: another version of a charge already held (a conflict)

    @property
    def key(self) -> tuple[float, int]:
        """Where the row sits in the history's order (for the page after or before it)."""
        return (self.at, self.seq)

    @property
    def flagged(self) -> bool:
        return self.state != Reconciled.ok

    @property
    def amount_usdc(self) -> Decimal:
        return from_atomic(self.amount)

    @property
    def ceiling_usdc(self) -> Decimal | None:
        return None if self.ceiling is None else from_atomic(self.ceiling)

    @property
    def flag_text(self) -> str | None:
        return FLAG_TEXT.get(self.flag, self.flag) if self.flag else None


@dataclass(frozen=True)
class UsageTotals:
    count: int
    amount: int
    flagged_count: int
    flagged_amount: int


@dataclass(frozen=True)
class SpendBucket:
    """Spend of one day (`key` = days since the epoch), one provider or one agent."""

    key: int | str | None
    count: int
    amount: int


def has_usage(conn: sqlite3.Connection) -> bool:
    """Whether this ledger has the usage table (a ledger older than `_v3` has not)."""
    return table_exists(conn, "usage")


# -- reading ---------------------------------------------------------------------------------------


def where(f: UsageFilter, *, times: bool = True) -> tuple[str, list[object]]:
    """The WHERE clause of a filter (never empty: `1 = 1` when nothing is filtered); `times=False`
    leaves the date range out, for a caller that bounds `at` itself."""
    clauses: list[str] = []
    params: list[object] = []
    if times and f.since is not None:
        clauses.append("at >= ?")
        params.append(f.since)
    if times and f.until is not None:
        clauses.append("at < ?")
        params.append(f.until)
    for column in ("agent", "provider", "chain", "domain_type"):
        value = getattr(f, column)
        if value is not None:
            clauses.append(f"{column} = ?")
            params.append(value)
    if f.state == "flagged":
        clauses.append("flagged = 1")
    elif f.state == Reconciled.ok:
        clauses.append("flagged = 0")
    elif f.state is not None:
        clauses += ["flagged = 1", "state = ?"]
        params.append(f.state)
    return " AND ".join(clauses) or "1 = 1", params


def _rows(cursor: Iterable[tuple[object, ...]]) -> list[UsageRow]:
    return [UsageRow(*row) for row in cursor]


def count(conn: sqlite3.Connection, f: UsageFilter) -> int:
    sql, params = where(f)
    return conn.execute(f"SELECT count(*) FROM usage WHERE {sql}", params).fetchone()[0]


def totals(conn: sqlite3.Connection, f: UsageFilter) -> UsageTotals:
    """Count and spend, and of them what is flagged: two queries, each answered from an index
    (flagged charges are few, so they are summed apart rather than on every row)."""
    sql, params = where(f)
    statement = f"SELECT count(*), coalesce(sum(amount), 0) FROM usage WHERE {sql}"
    n, amount = conn.execute(statement, params).fetchone()
    flagged_n, flagged_amount = conn.execute(f"{statement} AND flagged = 1", params).fetchone()
    return UsageTotals(n, amount, flagged_n, flagged_amount)


def window(
    conn: sqlite3.Connection, f: UsageFilter, offset: int, limit: int, *, newest_first: bool = True
) -> list[UsageRow]:
    """Rows `offset` to `offset + limit` of the history, newest first (or oldest first: rows
    counted from the end, which keeps the offset small near the bottom of a long table)."""
    sql, params = where(f)
    order = _NEWEST if newest_first else _OLDEST
    return _rows(
        conn.execute(
            f"SELECT {_SELECT} FROM usage WHERE {sql} {order} LIMIT ? OFFSET ?",
            [*params, limit, offset],
        )
    )


def after(
    conn: sqlite3.Connection, f: UsageFilter, key: tuple[float, int], limit: int
) -> list[UsageRow]:
    """The `limit` rows that follow the row at `key` in newest-first order (keyset paging: as
    fast a million rows down as at the top)."""
    sql, params = where(f)
    at, seq = key
    return _rows(
        conn.execute(
            f"SELECT {_SELECT} FROM usage WHERE {sql} AND at <= ? AND (at < ? OR seq < ?)"
            f" {_NEWEST} LIMIT ?",
            [*params, at, at, seq, limit],
        )
    )


def before(
    conn: sqlite3.Connection, f: UsageFilter, key: tuple[float, int], limit: int
) -> list[UsageRow]:
    """The `limit` rows that come just before the row at `key` in newest-first order, in that
    order."""
    sql, params = where(f)
    at, seq = key
    rows = _rows(
        conn.execute(
            f"SELECT {_SELECT} FROM usage WHERE {sql} AND at >= ? AND (at > ? OR seq > ?)"
            f" {_OLDEST} LIMIT ?",
            [*params, at, at, seq, limit],
        )
    )
    rows.reverse()
    return rows


def stream(conn: sqlite3.Connection, f: UsageFilter, *, batch: int = 1000) -> Iterator[UsageRow]:
    """Every row under the filter, oldest first, `batch` rows in memory at a time."""
    sql, params = where(f)
    key: tuple[float, int] | None = None
    while True:
        if key is None:
            page = conn.execute(
                f"SELECT {_SELECT} FROM usage WHERE {sql} {_OLDEST} LIMIT ?", [*params, batch]
            )
        else:
            page = conn.execute(
                f"SELECT {_SELECT} FROM usage WHERE {sql} AND at >= ? AND (at > ? OR seq > ?)"
                f" {_OLDEST} LIMIT ?",
                [*params, key[0], key[0], key[1], batch],
            )
        rows = _rows(page)
        yield from rows
        if len(rows) < batch:
            return
        key = rows[-1].key


def per_day(conn: sqlite3.Connection, f: UsageFilter) -> list[SpendBucket]:
    """Spend per UTC day, every day from the first charge to the last (days without any: zero).

    One range sum per day over the time index rather than a GROUP BY on a computed day, which
    SQLite could only do by sorting every row."""
    sql, params = where(f)
    first, last = conn.execute(f"SELECT min(at), max(at) FROM usage WHERE {sql}", params).fetchone()
    if first is None:
        return []
    # Each day's range, cut to the filter's: one range per query, so the index seeks straight
    # to it (two lower bounds on `at` would leave SQLite scanning from the wrong one).
    sql, params = where(f, times=False)
    statement = (
        f"SELECT count(*), coalesce(sum(amount), 0) FROM usage WHERE {sql} AND at >= ? AND at < ?"
    )
    low = f.since if f.since is not None else -math.inf
    high = f.until if f.until is not None else math.inf
    buckets = []
    for day in range(day_of(first), day_of(last) + 1):
        start, end = max(day * DAY_S, low), min((day + 1) * DAY_S, high)
        n, amount = conn.execute(statement, [*params, start, end]).fetchone()
        buckets.append(SpendBucket(day, n, amount))
    return buckets


def _per(conn: sqlite3.Connection, column: str, f: UsageFilter, limit: int) -> list[SpendBucket]:
    sql, params = where(f)
    rows = conn.execute(
        f"SELECT {column}, count(*), sum(amount) AS spent FROM usage WHERE {sql}"
        f" GROUP BY {column} ORDER BY spent DESC, {column} LIMIT ?",
        [*params, limit],
    )
    return [SpendBucket(*row) for row in rows]


def per_provider(conn: sqlite3.Connection, f: UsageFilter, limit: int = 10) -> list[SpendBucket]:
    """The providers paid most under the filter, most first."""
    return _per(conn, "provider", f, limit)


def per_agent(conn: sqlite3.Connection, f: UsageFilter, limit: int = 10) -> list[SpendBucket]:
    """The agents that spent most under the filter, most first."""
    return _per(conn, "agent", f, limit)


FILTER_COLUMNS = ("agent", "provider", "chain", "domain_type")


def distinct(conn: sqlite3.Connection, column: str, limit: int = 1000) -> list[str]:
    """The values a filter can take, in order: one index seek per value (a loose index scan),
    not a pass over every row."""
    if column not in FILTER_COLUMNS:
        raise ValueError(f"cannot list values of {column!r}")
    rows = conn.execute(
        f"WITH RECURSIVE v(x) AS (SELECT min({column}) FROM usage"
        f" UNION ALL SELECT (SELECT min({column}) FROM usage WHERE {column} > v.x)"
        " FROM v WHERE v.x IS NOT NULL)"
        " SELECT x FROM v WHERE x IS NOT NULL LIMIT ?",
        [limit],
    )
    return [row[0] for row in rows]


def versions(conn: sqlite3.Connection, charge_id: str) -> list[UsageRow]:
    """Every row the ledger holds under this charge id (every service's, every version), in the
    order they were synced."""
    return _rows(
        conn.execute(f"SELECT {_SELECT} FROM usage WHERE id = ? ORDER BY seq", [charge_id])
    )


def get(conn: sqlite3.Connection, charge_id: str) -> UsageRow | None:
    """The first row synced under this charge id."""
    held = versions(conn, charge_id)
    return held[0] if held else None
