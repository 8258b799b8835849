"""Checking the ledger's event log: the hash chain `Ledger._event` writes, link by link.

Each event's hash is `sha256(prev_hash + payload)`, where the payload is the event's `at`,
`request_id`, `type` and `data` as canonical JSON (keys sorted, no spaces, UTF-8 kept), and
`prev_hash` is the hash of the event before it (64 zeros for the first). So an edited row no longer
matches its hash, a deleted row leaves a gap in `seq` (and a `prev_hash` that points at nothing),
and rows put in another order no longer point at their predecessor. `verify` walks the chain from
the first event and names the first link that does not hold.

It reads through one read-only connection in batches, so it runs beside a broker that is writing
(it sees one consistent snapshot) and never holds the whole log in memory.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from svc_console.ledger.store import GENESIS

BATCH = 20_000
# The encoder the ledger's JSON uses for one string (ensure_ascii=False), without a dumps per call.
_string = json.encoder.encode_basestring  # type: ignore[attr-defined]


class AuditError(Exception):
    """The file cannot be audited at all (missing, not a ledger, unreadable)."""


@dataclass(frozen=True)
class Break:
    seq: int
    why: str


@dataclass(frozen=True)
class AuditReport:
    """`verified` events hold (all of them when `broken` is None); `head` is the last good hash."""

    verified: int
    head: str
    broken: Break | None = None

    @property
    def intact(self) -> bool:
        return self.broken is None


def payload(at: object, request_id: object, kind: object, data: str) -> str:
    """The text the ledger hashes after `prev_hash`: `_dumps({"at", "request_id", "type",
    "data"})` as `Ledger._event` builds it. `data` is the stored column, which is exactly the
    nested object's canonical JSON, so it is spliced in as it is: any edit of it shows."""
    request = "null" if request_id is None else _string(request_id)
    number = repr(at)
    if "n" in number:  # inf and nan, which JSON spells Infinity and NaN
        number = json.dumps(at)
    return f'{{"at":{number},"data":{data},"request_id":{request},"type":{_string(kind)}}}'


def _digest(prev_hash: str, text: str) -> str:
    return hashlib.sha256((prev_hash + text).encode()).hexdigest()


def _content_holds(row: tuple) -> bool:
    _seq, at, request_id, kind, data, prev_hash, stored = row
    if not isinstance(data, str) or not isinstance(kind, str):
        return False
    if request_id is not None and not isinstance(request_id, str):
        return False
    if not isinstance(at, int | float):
        return False
    if _digest(prev_hash, payload(at, request_id, kind, data)) == stored:
        return True
    # SQLite keeps `at` as REAL: an event written with a whole-number time was hashed as an int.
    return (
        isinstance(at, float)
        and at.is_integer()
        and _digest(prev_hash, payload(int(at), request_id, kind, data)) == stored
    )


def verify_rows(rows: Iterable[tuple]) -> AuditReport:
    """Walk (seq, at, request_id, type, data, prev_hash, hash) rows in seq order."""
    expected_seq, previous, verified = 1, GENESIS, 0
    for row in rows:
        seq, prev_hash = row[0], row[5]
        if seq != expected_seq:
            # seq is the primary key, so rows come unique and ascending: only gaps are possible.
            gap = (
                f"event {expected_seq} is"
                if seq == expected_seq + 1
                else f"events {expected_seq}-{seq - 1} are"
            )
            after = (
                f"the chain starts at event {seq}"
                if expected_seq == 1
                else (f"seq jumps from {expected_seq - 1} to {seq}")
            )
            why = f"{gap} missing: {after}"
            return AuditReport(verified, previous, Break(expected_seq, why))
        if prev_hash != previous:
            before = "the start of the chain" if seq == 1 else f"event {seq - 1}"
            why = (
                f"its prev_hash is not the hash of {before}: rows were reordered, deleted"
                " and renumbered, or the link was rewritten"
            )
            return AuditReport(verified, previous, Break(seq, why))
        if not _content_holds(row):
            why = "its content does not match its hash: the row was edited"
            return AuditReport(verified, previous, Break(seq, why))
        previous, expected_seq, verified = row[6], seq + 1, verified + 1
    return AuditReport(verified, previous)


def _batches(conn: sqlite3.Connection, size: int) -> Iterator[tuple]:
    cursor = conn.execute(
        "SELECT seq, at, request_id, type, data, prev_hash, hash FROM events ORDER BY seq"
    )
    while batch := cursor.fetchmany(size):
        yield from batch


def open_read_only(path: Path) -> sqlite3.Connection:
    """A read-only connection that never creates the file (a URI, so any path is safe in it)."""
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


def verify(path: Path, batch: int = BATCH) -> AuditReport:
    """Verify the event chain of the ledger file at `path`, from its first event."""
    conn = open_read_only(path)
    try:
        # One statement reads one snapshot, so events a broker appends meanwhile are not seen.
        return verify_rows(_batches(conn, batch))
    except sqlite3.Error as exc:
        raise AuditError(f"cannot read {path}: {exc}") from None
    finally:
        conn.close()
