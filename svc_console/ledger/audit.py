"""Checking the ledger against its audit chain (`audit_chain` says how the ledger writes it).

`verify` walks the events from the first and checks each link: the `seq` follows the one before,
`prev_hash` is that event's hash, and the hash is the keyed HMAC of the two (so a row edited,
deleted, put in another order, or rewritten with every hash recomputed, shows at its event
without the key). It then checks the head file beside the ledger: the event it anchored must be
there, with its hash (cutting the last events off shows). Finally the tables must agree with the
events: every row of money (`audit_chain.SEALED`) must be as the last event that sealed it says,
no sealed row may be missing and no row unsealed; the budget totals must be the sums of the
reservations (from where the chain says they were last pruned).

It reads through one read-only connection, in one snapshot, in batches: it runs beside a broker
that is writing, and never holds a table in memory (the seals go to a temporary table).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from svc_console.core.usage import iso_instant
from svc_console.ledger import audit_chain, engine
from svc_console.ledger.audit_anchor import Anchor
from svc_console.ledger.audit_chain import GENESIS, SEALED, link, payloads, row_digest

BATCH = 20_000
MOST_PROBLEMS = 20  # table disagreements listed; the count says how many more


class AuditError(Exception):
    """The file cannot be audited at all (missing, not a ledger, unreadable, no key)."""


@dataclass(frozen=True)
class Break:
    seq: int
    why: str


@dataclass(frozen=True)
class AuditReport:
    """`verified` events hold (all of them when `broken` is None); `head` is the last good
    (seq, hash); `problems` are the tables' disagreements with the events, first event first."""

    verified: int
    head: str
    broken: Break | None = None
    problems: list[Break] = field(default_factory=list)
    more_problems: int = 0
    anchored: tuple[int, str] | None = None  # what the head file said

    @property
    def intact(self) -> bool:
        return self.broken is None and not self.problems


class _Walk:
    """The chain, link by link, keeping the seals and what the tables are checked against."""

    def __init__(self, conn: sqlite3.Connection, key: bytes):
        self.conn, self.key = conn, key
        self.expected_seq, self.previous, self.verified = 1, GENESIS, 0
        self.pruned_before: float | None = None
        self.hashes_wanted: dict[int, str | None] = {}

    def run(self, rows: Iterator[tuple]) -> Break | None:
        for row in rows:
            broken = self._link(row)
            if broken is not None:
                return broken
        return None

    def _link(self, row: tuple) -> Break | None:
        seq, at, request_id, kind, data, prev_hash, stored = row
        if seq != self.expected_seq:
            return Break(self.expected_seq, _gap(self.expected_seq, seq))
        if prev_hash != self.previous:
            before = "the start of the chain" if seq == 1 else f"event {seq - 1}"
            return Break(
                seq,
                f"its prev_hash is not the hash of {before}: rows were reordered, deleted and"
                " renumbered, or the link was rewritten",
            )
        if not _well_typed(at, request_id, kind, data) or not any(
            link(self.key, prev_hash, text) == stored
            for text in payloads(at, request_id, kind, data)
        ):
            return Break(
                seq,
                "its content does not match its keyed hash: the event was edited, or written"
                " without the ledger's key",
            )
        if seq in self.hashes_wanted:
            self.hashes_wanted[seq] = stored
        if '"rows":' in data or kind == "budget_pruned":
            self._facts(seq, kind, json.loads(data))
        self.previous, self.expected_seq, self.verified = stored, seq + 1, self.verified + 1
        return None

    def _facts(self, seq: int, kind: str, data: dict) -> None:
        if kind == "budget_pruned":
            self.pruned_before = max(self.pruned_before or 0.0, float(data["before"]))
        seals = data.get("rows") or {}
        self.conn.executemany(
            "INSERT INTO temp.sealed (tbl, pk, digest, seq) VALUES (?, ?, ?, ?)"
            " ON CONFLICT (tbl, pk) DO UPDATE SET digest = excluded.digest, seq = excluded.seq",
            [(*name.split(":", 1), digest, seq) for name, digest in seals.items()],
        )


def _well_typed(at: object, request_id: object, kind: object, data: object) -> bool:
    return (
        isinstance(data, str)
        and isinstance(kind, str)
        and (request_id is None or isinstance(request_id, str))
        and isinstance(at, int | float)
    )


def _gap(expected: int, seq: int) -> str:
    # seq is the primary key, so rows come unique and ascending: only gaps are possible.
    gap = f"event {expected} is" if seq == expected + 1 else f"events {expected}-{seq - 1} are"
    after = (
        f"the chain starts at event {seq}"
        if expected == 1
        else f"seq jumps from {expected - 1} to {seq}"
    )
    return f"{gap} missing: {after}"


def _events(conn: sqlite3.Connection, size: int) -> Iterator[tuple]:
    cursor = conn.execute(
        "SELECT seq, at, request_id, type, data, prev_hash, hash FROM events ORDER BY seq"
    )
    while batch := cursor.fetchmany(size):
        yield from batch


# -- the tables against the events ----------------------------------------------------------------


def _table_problems(conn: sqlite3.Connection, size: int) -> Iterator[Break]:
    for table, (key_column, only) in SEALED.items():
        columns = [d[0] for d in conn.execute(f'SELECT * FROM "{table}" WHERE 1 = 0').description]
        if key_column not in columns:  # a ledger no console has opened since it was upgraded
            key_column = _KEYED_BEFORE[table]
        rows = conn.execute(f'SELECT * FROM "{table}" ORDER BY "{key_column}"')
        names = [d[0] for d in rows.description]
        index = names.index(key_column)
        # Keys are kept as text (one column type on both engines); the tables keyed by
        # number are merged in their numbers' order.
        key = "pk" if table in _TEXT_KEYED else "CAST(pk AS INTEGER)"
        seals = conn.execute(
            f"SELECT {key}, digest, seq FROM temp.sealed WHERE tbl = ? ORDER BY 1", [table]
        )
        yield from _merge(table, _batched(rows, size), _batched(seals, size), names, index, only)


_TEXT_KEYED = frozenset({"requests", "usage"})
# What a table was keyed by before its key column of `SEALED` was made (ledger/schema.py).
_KEYED_BEFORE = {"usage": "id"}
_HAND = "it was written by hand"
_UNSEALED = {"usage": "a charge the audit chain does not account for, written by hand"}


def _merge(
    table: str,
    rows: Iterator[tuple],
    seals: Iterator[tuple],
    names: list[str],
    index: int,
    only: tuple[str, ...] | None,
) -> Iterator[Break]:
    """Rows and seals, both in key order, side by side."""
    row, seal = next(rows, None), next(seals, None)
    while row is not None or seal is not None:
        row_key = row[index] if row is not None else None
        if seal is None or (row is not None and row_key < seal[0]):
            yield Break(0, f"{table} row {row_key!r} is in no event: {_UNSEALED.get(table, _HAND)}")
            row = next(rows, None)
        elif row is None or seal[0] < row_key:
            yield Break(seal[2], f"{table} row {seal[0]!r}, sealed by event {seal[2]}, is gone")
            seal = next(seals, None)
        else:
            if row_digest(names, row, only) != seal[1]:
                yield Break(
                    seal[2], f"{table} row {row_key!r} is not what event {seal[2]} sealed: edited"
                )
            row, seal = next(rows, None), next(seals, None)


def _batched(cursor: sqlite3.Cursor, size: int) -> Iterator[tuple]:
    while batch := cursor.fetchmany(size):
        yield from batch


# The totals each reservation adds to (budgets.add), summed: what budget_totals must hold.
_EXPECTED_TOTALS = """
    WITH grains(grain) AS (VALUES (60), (3600), (86400))
    SELECT grain, ((r.slot + grain - 1) / grain) * grain AS at,
           json_extract(b.value, '$[0]') AS scope, json_extract(b.value, '$[1]') AS key,
           sum(CASE WHEN r.state = 'reserved' THEN r.reserved_usdc ELSE 0 END) AS reserved,
           sum(CASE WHEN r.state = 'settled' THEN r.settled_usdc ELSE 0 END) AS settled
    FROM budget_reservations r, json_each(r.buckets) b, grains
    GROUP BY 1, 2, 3, 4
"""


def _budget_problems(conn: sqlite3.Connection, pruned_before: float | None) -> Iterator[Break]:
    conn.execute(f"CREATE TEMP TABLE expected AS {_EXPECTED_TOTALS}")
    horizon = pruned_before if pruned_before is not None else float("-inf")
    differing = conn.execute(
        """SELECT t.grain, t.at, t.scope, t.key, t.reserved_usdc, t.settled_usdc,
                  coalesce(e.reserved, 0), coalesce(e.settled, 0)
           FROM budget_totals t LEFT JOIN temp.expected e
             ON e.grain = t.grain AND e.at = t.at AND e.scope = t.scope AND e.key = t.key
           WHERE t.reserved_usdc != coalesce(e.reserved, 0)
              OR t.settled_usdc != coalesce(e.settled, 0)
           UNION ALL
           SELECT e.grain, e.at, e.scope, e.key, 0, 0, e.reserved, e.settled
           FROM temp.expected e
           WHERE (e.reserved != 0 OR e.settled != 0) AND e.at >= ?
             AND NOT EXISTS (SELECT 1 FROM budget_totals t WHERE t.grain = e.grain
                             AND t.at = e.at AND t.scope = e.scope AND t.key = e.key)""",
        [horizon],
    )
    for grain, at, scope, key, reserved, settled, want_reserved, want_settled in differing:
        yield Break(
            0,
            f"budget_totals {scope}:{key} ({grain} s ending {at}) holds {reserved} reserved and"
            f" {settled} settled (atomic units); the sealed reservations sum to"
            f" {want_reserved} and {want_settled}",
        )


# -- the whole check -------------------------------------------------------------------------------


def open_read_only(path: Path, url: str | None = None) -> Any:
    """A read-only connection that never creates the file (a URI, so any path is safe in it);
    with `url`, a session of that PostgreSQL database."""
    if url:
        return _open_postgres(url)
    if not path.is_file():
        raise AuditError(f"no ledger at {path}")
    try:
        conn = sqlite3.connect(f"{path.absolute().as_uri()}?mode=ro", uri=True)
        conn.execute("PRAGMA busy_timeout=5000")
        found = conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'events'"
        ).fetchone()
    except sqlite3.Error as exc:
        raise AuditError(f"cannot read {path} as a ledger: {exc}") from None
    if found is None:
        conn.close()
        raise AuditError(f"{path} is not an svc-console ledger (it has no events table)")
    return conn


def _open_postgres(url: str) -> Any:
    from svc_console.ledger.pg import Connection

    shown = engine.url_shown(url)
    try:
        conn = Connection(url)
        found = conn.execute("SELECT to_regclass('events')").fetchone()[0]
    except engine.errors() as exc:
        raise AuditError(f"cannot read {shown} as a ledger: {exc}") from None
    if found is None:
        conn.close()
        raise AuditError(f"{shown} is not an svc-console ledger (it has no events table)")
    return conn


def verify(
    path: Path,
    *,
    key: bytes | None = None,
    anchor: tuple[int, str] | None = None,
    batch: int = BATCH,
    url: str | None = None,
    outside: Anchor | None = None,
) -> AuditReport:
    """Verify the ledger file at `path` (with `url`, the PostgreSQL ledger whose key and head
    files are beside `path`): its chain, its head (`anchor`, else the head file beside it) and
    its tables; with `outside`, against a head kept outside the home too (`audit_anchor`: what
    catches a chain sealed again with its key). `key`: the chain's (default: the ledger's,
    never made here)."""
    conn = open_read_only(path, url)
    where = engine.url_shown(url) if url else str(path)
    try:
        if key is None:
            key = _key(path)
        try:
            anchor = anchor if anchor is not None else audit_chain.read_head(path)
        except (OSError, ValueError) as exc:
            raise AuditError(f"cannot read the head file of {path}: {exc}") from None
        engine.begin_snapshot(conn)  # one snapshot for the chain and the tables
        conn.execute(
            "CREATE TEMP TABLE sealed (tbl TEXT, pk TEXT, digest TEXT, seq INTEGER,"
            " PRIMARY KEY (tbl, pk))"
        )
        walk = _Walk(conn, key)
        for seq in (anchor[0] if anchor else None, outside.seq if outside else None):
            if seq is not None:
                walk.hashes_wanted[seq] = None
        broken = walk.run(_events(conn, batch))
        head = walk.previous
        if broken is None and outside is not None:
            broken = _outside_break(walk, outside)
        if broken is None:
            broken = _head_break(walk, anchor)
        if broken is not None:
            return AuditReport(walk.verified, head, broken, anchored=anchor)
        problems = [*_table_problems(conn, batch), *_budget_problems(conn, walk.pruned_before)]
        problems.sort(key=lambda p: (p.seq == 0, p.seq))
        return AuditReport(
            walk.verified,
            head,
            None,
            problems[:MOST_PROBLEMS],
            max(0, len(problems) - MOST_PROBLEMS),
            anchor,
        )
    except engine.errors() as exc:
        raise AuditError(f"cannot read {where}: {exc}") from None
    finally:
        conn.close()


def _key(path: Path) -> bytes:
    from svc_console.config.audit_key import NoAuditKey, audit_key

    try:
        return audit_key(path, create=False)
    except (NoAuditKey, OSError, ValueError) as exc:
        raise AuditError(str(exc)) from None


def _outside_break(walk: _Walk, outside: Anchor) -> Break | None:
    last, seq, when = walk.verified, outside.seq, iso_instant(outside.at)
    if seq > last:
        return Break(
            last + 1,
            f"the chain ends at event {last} but the anchor kept outside the home ({when}) names"
            f" event {seq}: the last {seq - last} events were cut off",
        )
    if walk.hashes_wanted.get(seq) != outside.hash:
        return Break(
            seq,
            f"event {seq} is not the one anchored outside the home ({when}): the chain was"
            " rewritten and sealed again with its key (its links hold; only the anchor shows it)",
        )
    return None


def _head_break(walk: _Walk, anchor: tuple[int, str] | None) -> Break | None:
    last = walk.verified
    if anchor is None:
        if last == 0:
            return None
        return Break(
            last,
            "there is no head file beside the ledger: whether later events were cut off cannot"
            " be told (compare the head printed here with one kept elsewhere)",
        )
    seq, digest = anchor
    if seq > last:
        return Break(
            last + 1,
            f"the chain ends at event {last} but its head was anchored at event {seq}: the last"
            f" {seq - last} events were cut off",
        )
    if seq > 0 and walk.hashes_wanted.get(seq) != digest:
        return Break(seq, f"event {seq} is not the one the head anchored: the chain was rewritten")
    return None
