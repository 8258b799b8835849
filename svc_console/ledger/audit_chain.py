"""The ledger's event chain as the ledger writes it, and what makes it evidence about the money.

Three things, so that neither an edit of a table nor a rewrite of the chain goes unseen:

- Each event's hash is an HMAC-SHA256 of the hash before it and the event's payload, keyed with a
  key kept outside the ledger (`config.audit_key`): whoever can write the file cannot compute a
  link, so rewriting an event and every hash after it no longer passes.
- The rows a transaction wrote in the tables that move or permit money (`SEALED`) are sealed into
  the last event of that transaction: each row's digest, by table and key. A later edit,
  deletion or insertion of such a row disagrees with the last seal of that row (`audit` checks).
- The chain's head (last seq and hash) is written to a file beside the ledger after each commit,
  so cutting the last events off shows too; `audit verify` prints it for keeping elsewhere.

Digests cover a row's non-null columns as canonical JSON, so a column a later schema adds (null
in old rows) leaves old seals valid. Usage rows are sealed on what the service charged (the
columns reconciliation never rewrites).
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import sqlite3
import time
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from svc_console.core.canonical_json import canonical_json

GENESIS = "0" * 64
# table -> (key column, the columns sealed; None: every column)
SEALED: dict[str, tuple[str, tuple[str, ...] | None]] = {
    "requests": ("id", None),
    "decisions": ("id", None),
    "executions": ("id", None),
    "budget_reservations": ("id", None),
    "policy_versions": ("id", None),
    "agent_pauses": ("id", None),
    "grants": ("id", None),
    # Keyed by the row's own key (a charge id may be held by several services, and in
    # several versions); `service` is null on rows synced before, which keeps their seals.
    "usage": (
        "row_key",
        (
            "service",
            "id",
            "at",
            "kind",
            "resource",
            "chain",
            "protocol",
            "amount",
            "idempotency_key",
            "receipt",
        ),
    ),
}
SEALS_PER_EVENT = 5000  # when many rows are sealed at once (a first sealing, a big usage sync)
_CHUNK = 500  # host parameters per IN (...) list
# The encoder the ledger's JSON uses for one string (ensure_ascii=False), without a dumps per call.
_string = json.encoder.encode_basestring  # type: ignore[attr-defined]


dumps = canonical_json  # what every link and seal covers


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def link(key: bytes, prev_hash: str, payload: str) -> str:
    """One link: HMAC-SHA256(key, prev_hash + payload), hex."""
    return hmac.new(key, (prev_hash + payload).encode(), hashlib.sha256).hexdigest()


def plain_link(prev_hash: str, payload: str) -> str:
    """A link as ledgers wrote them before the chain was keyed (plain SHA-256)."""
    return hashlib.sha256((prev_hash + payload).encode()).hexdigest()


def stored_payload(at: object, request_id: object, kind: object, data: str) -> str:
    """What an event's link covers: the canonical JSON of its `at`, `request_id`, `type` and
    `data`, with `data` (the stored column, exactly the nested object's canonical JSON) spliced
    in as it is: any edit of it shows, and the writer serialises its data once, not twice."""
    request = "null" if request_id is None else _string(request_id)
    number = repr(at)
    if "n" in number:  # inf and nan, which JSON spells Infinity and NaN
        number = json.dumps(at)
    return f'{{"at":{number},"data":{data},"request_id":{request},"type":{_string(kind)}}}'


def payloads(at: object, request_id: object, kind: object, data: str) -> Iterator[str]:
    """The payloads a stored event may have been linked with: SQLite keeps `at` as REAL, so an
    event written with a whole-number time was linked with it as an int."""
    yield stored_payload(at, request_id, kind, data)
    if isinstance(at, float) and at.is_integer():
        yield stored_payload(int(at), request_id, kind, data)


def row_digest(names: Sequence[str], values: Sequence[Any], only: Iterable[str] | None) -> str:
    if only is None:  # every column: one pass (the keys are sorted when dumped)
        row = {name: value for name, value in zip(names, values, strict=True) if value is not None}
    else:
        every = dict(zip(names, values, strict=True))
        row = {name: every[name] for name in only if every.get(name) is not None}
    return hashlib.sha256(dumps(row).encode()).hexdigest()[:32]


def seal_key(table: str, key: Any) -> str:
    return f"{table}:{key}"


def digests(conn: sqlite3.Connection, table: str, keys: Sequence[Any]) -> Iterator[tuple[Any, str]]:
    """(key, digest) of the rows of `table` with these keys (a key with no row is left out)."""
    key_column, only = SEALED[table]
    for start in range(0, len(keys), _CHUNK):
        chunk = list(keys[start : start + _CHUNK])
        cursor = conn.execute(
            f'SELECT * FROM "{table}" WHERE "{key_column}" IN ({",".join("?" * len(chunk))})',
            chunk,
        )
        names = [d[0] for d in cursor.description]
        index = names.index(key_column)
        for values in cursor:
            yield values[index], row_digest(names, values, only)


class Chain:
    """The links a transaction adds, held until it seals them just before it commits."""

    def __init__(self, key: bytes, head: tuple[int, str]):
        self.key = key
        self.seq, self.hash = head
        self._events: list[tuple[str | None, str, dict[str, Any], float]] = []
        self._touched: dict[str, dict[Any, None]] = {}
        self._touch_order: list[tuple[str, Any]] = []  # the same, in order, for `rewind`

    def begin(self) -> None:
        self._events, self._touched, self._touch_order = [], {}, []

    def event(self, request_id: str | None, kind: str, data: dict[str, Any], at: float) -> None:
        self._events.append((request_id, kind, data, at))

    def touch(self, table: str, key: Any) -> None:
        self._touched.setdefault(table, {})[key] = None
        self._touch_order.append((table, key))

    def mark(self) -> tuple[int, int]:
        """Where the transaction stands: a write of a group transaction that fails is taken
        back to its mark (`rewind`), the others' events and rows kept."""
        return len(self._events), len(self._touch_order)

    def rewind(self, mark: tuple[int, int]) -> None:
        events, touches = mark
        del self._events[events:]
        del self._touch_order[touches:]
        self._touched = {}
        for table, key in self._touch_order:
            self._touched.setdefault(table, {})[key] = None

    def seal(self, conn: sqlite3.Connection) -> tuple[int, str] | None:
        """Write the transaction's events, its rows' seals in the last; returns the new head
        (None when the transaction wrote no event), to be taken once the commit holds."""
        touched = self._touched.get("requests")
        if touched:
            # Reservations change with their request (reserved, settled, released).
            for start in range(0, len(keys := list(touched)), _CHUNK):
                chunk = keys[start : start + _CHUNK]
                marks = ",".join("?" * len(chunk))
                for (row_id,) in conn.execute(
                    f"SELECT id FROM budget_reservations WHERE request_id IN ({marks})", chunk
                ):
                    self.touch("budget_reservations", row_id)
        seals = {
            seal_key(table, key): digest
            for table, keys in self._touched.items()
            for key, digest in digests(conn, table, list(keys))
        }
        events, self._events, self._touched, self._touch_order = self._events, [], {}, []
        if seals and not events:
            raise RuntimeError("rows of money written with no event to seal them in")
        if not events:
            return None
        # The last event carries the seals; a great many (a big usage sync) go in more events.
        parts = list(seals.items())
        last_request, last_kind, last_data, last_at = events[-1]
        first, rest = dict(parts[:SEALS_PER_EVENT]), parts[SEALS_PER_EVENT:]
        events[-1] = (last_request, last_kind, {**last_data, "rows": first}, last_at)
        for start in range(0, len(rest), SEALS_PER_EVENT):
            more = dict(rest[start : start + SEALS_PER_EVENT])
            events.append((None, "rows_sealed", {"rows": more}, last_at))
        return self.append(conn, events)

    def append(
        self,
        conn: sqlite3.Connection,
        events: Sequence[tuple[str | None, str, dict[str, Any], float]],
    ) -> tuple[int, str]:
        seq, previous = self.seq, self.hash
        rows = []
        for request_id, kind, data, at in events:
            text = dumps(data)
            digest = link(self.key, previous, stored_payload(at, request_id, kind, text))
            # The seq is the chain's own count, not the engine's: a sequence on PostgreSQL
            # would leave a gap after a transaction rolled back, and a gap reads as cut events.
            seq += 1
            rows.append((seq, at, request_id, kind, text, previous, digest))
            previous = digest
        # In one go: on PostgreSQL, one round trip for the lot (psycopg pipelines executemany).
        conn.executemany(
            "INSERT INTO events (seq, at, request_id, type, data, prev_hash, hash)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)",
            rows,
        )
        return seq, previous

    def took(self, head: tuple[int, str]) -> None:
        self.seq, self.hash = head


# -- the head anchored outside the ledger -------------------------------------------------------


def head_path(ledger: Path) -> Path:
    return ledger.with_name(ledger.name + ".head")


HEAD_BYTES = 128  # one fixed-size record, rewritten in place


class HeadFile:
    """The head file, held open by the ledger's writer and rewritten in place after each commit:
    one `pwrite` of a fixed-size record (a rename per commit cost a third of a millisecond,
    more than the commit itself). Owner-only; the folder is never changed."""

    def __init__(self, ledger: Path):
        self._fd = os.open(
            head_path(ledger), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600
        )

    def write(self, seq: int, digest: str) -> None:
        record = dumps({"seq": seq, "hash": digest}).encode().ljust(HEAD_BYTES - 1) + b"\n"
        os.pwrite(self._fd, record, 0)

    def close(self) -> None:
        os.close(self._fd)


def read_head(ledger: Path) -> tuple[int, str] | None:
    """(seq, hash) from the head file, None when there is none; ValueError when unreadable. Read
    until two reads agree: the writer rewrites it in place while a verifier may be reading."""
    with contextlib.suppress(FileNotFoundError):
        path, previous = head_path(ledger), None
        for _ in range(10):
            text = path.read_text()
            if text == previous:
                break
            previous = text
        record = json.loads(previous or "")
        if not isinstance(record, dict):
            raise ValueError("not a head record")
        return int(record["seq"]), str(record["hash"])
    return None


def check_key(conn: sqlite3.Connection, key: bytes, where: str) -> None:
    """Refuse to write a chain with a key other than the one its last link was made with: a
    broker joining a shared ledger with a key of its own would make every later link fail
    `audit verify`."""
    from svc_console.ledger.engine import LedgerRefused

    last = conn.execute(
        "SELECT at, request_id, type, data, prev_hash, hash FROM events ORDER BY seq DESC LIMIT 1"
    ).fetchone()
    if last is None or is_plain(conn):
        return
    at, request_id, kind, data, prev_hash, stored = last
    if not any(link(key, prev_hash, p) == stored for p in payloads(at, request_id, kind, data)):
        raise LedgerRefused(
            f"the audit chain of {where} was written with another audit key: give this broker"
            " the key of those that write it (the `.key` file beside their ledger.db, or their"
            " keyring's entry) before starting it"
        )


def is_plain(conn: sqlite3.Connection) -> bool:
    """Whether the chain was written before it was keyed: its first link is plain SHA-256."""
    first = conn.execute(
        "SELECT at, request_id, type, data, hash FROM events ORDER BY seq LIMIT 1"
    ).fetchone()
    if first is None:
        return False
    at, request_id, kind, data, stored = first
    return any(plain_link(GENESIS, p) == stored for p in payloads(at, request_id, kind, data))


def rekey(conn: sqlite3.Connection, key: bytes) -> tuple[int, str] | None:
    """Turn a chain of plain SHA-256 links into keyed ones, in the caller's transaction, and seal
    every row the tables already hold (they were written before rows were sealed). Only a chain
    that holds link by link is rekeyed: a broken one is left as it is (None), for `audit verify`
    to report."""
    old, new, seq = GENESIS, GENESIS, 0
    relinked = []
    for seq, at, request_id, kind, data, prev_hash, stored in conn.execute(
        "SELECT seq, at, request_id, type, data, prev_hash, hash FROM events ORDER BY seq"
    ).fetchall():
        payload = next(
            (p for p in payloads(at, request_id, kind, data) if plain_link(old, p) == stored),
            None,
        )
        if payload is None or prev_hash != old:
            return None
        old, new = stored, link(key, new, payload)
        relinked.append((relinked[-1][1] if relinked else GENESIS, new, seq))
    conn.executemany("UPDATE events SET prev_hash = ?, hash = ? WHERE seq = ?", relinked)
    events = []
    for table, (key_column, _only) in SEALED.items():
        keys = [row[0] for row in conn.execute(f'SELECT "{key_column}" FROM "{table}"')]
        for start in range(0, len(keys), SEALS_PER_EVENT):
            part = keys[start : start + SEALS_PER_EVENT]
            seals = {seal_key(table, k): d for k, d in digests(conn, table, part)}
            events.append((None, "rows_sealed", {"rows": seals}, time.time()))
    events.append((None, "chain_keyed", {}, time.time()))
    return Chain(key, (seq, new)).append(conn, events)
