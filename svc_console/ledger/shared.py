"""Several brokers on one PostgreSQL ledger (one per agent host): one queue, one set of budgets.

What a single broker gets from being the ledger's only writer, brokers sharing one get from the
database:

- Their writes are serialized. Every transaction first takes one transaction-level advisory lock
  (`WRITES`), which its commit releases: the chain's next link is read from the table under it
  (another broker may have added events since), and budget changes commit in the order of their
  ids.
- Each broker's budget changes are also written to `budget_changes`; a broker applies the others'
  to its in-memory totals as soon as it holds the lock, before anything it decides in that
  transaction. A cap checked there counts every reservation any broker committed before it
  (`Ledger.decide`'s `recheck`), so two brokers never pass a cap together.
- Each broker holds a session-level advisory lock on a key of its own for as long as its
  connection lives; the server drops it when the broker dies, however it died. A request's
  `broker` column names the broker answering for it (its intake, then its execution). An
  unfinished request whose broker holds no lock is an orphan: the first broker to see it adopts
  it, and a call its broker had in flight becomes `unknown`.
- Each transaction NOTIFYs the requests it changed; every broker LISTENs and tells its own
  listeners (consoles, waiting agents) of the others' changes.
"""

from __future__ import annotations

import asyncio
import json
import logging
import secrets
from collections.abc import Callable, Iterable
from typing import Any

from svc_console.core.buckets import Change
from svc_console.ledger.pg_dialect import WRITER_LOCK_KEY

log = logging.getLogger(__name__)

WRITES = WRITER_LOCK_KEY + 2  # (+1 is the migrations' lock)
BROKERS = 0x5FC1  # the first half of each broker's two-part key: "svc brokers"
CHANNEL = "svc_console_ledger"
_PAYLOAD_BYTES = 7000  # NOTIFY takes under 8000 bytes a message
CHANGES_KEPT_S = 3600.0  # a broker catches up every second; an hour is ample


class Member:
    """This broker's place among the ledger's brokers: its key (held as a session lock on the
    ledger's connection) and the last budget change it applied."""

    def __init__(self, conn: Any):
        self.key = secrets.randbelow(2**31 - 2) + 1
        conn.execute(
            "SELECT pg_advisory_lock(CAST(? AS int4), CAST(? AS int4))", [BROKERS, self.key]
        )
        self.seen = 0

    # -- in each transaction ------------------------------------------------------------------

    def begin(self, conn: Any) -> tuple[tuple[int, str] | None, list[Change]]:
        """Right after BEGIN: wait for the writers' lock, then return the chain's head as
        committed (None: no event yet) and the other brokers' budget changes since the last."""
        # One round trip for the lock, the head and whether any change is new (alone, there is
        # none): the reads run after the lock is held, each statement with a snapshot of its own.
        _locked, [(seq, digest, last)] = conn.batch(
            [
                ("SELECT pg_advisory_xact_lock(?)", [WRITES]),
                (
                    "SELECT (SELECT seq FROM events ORDER BY seq DESC LIMIT 1),"
                    " (SELECT hash FROM events ORDER BY seq DESC LIMIT 1),"
                    " (SELECT max(id) FROM budget_changes)",
                    [],
                ),
            ]
        )
        changes = self.others_changes(conn) if (last or 0) > self.seen else []
        return ((seq, digest) if seq is not None else None), changes

    def others_changes(self, conn: Any) -> list[Change]:
        """The budget changes other brokers committed since the last read. Read outside the
        lock too: ids are taken under it and committed in its order, so any snapshot holds
        a prefix of them and nothing is skipped."""
        found = conn.execute(
            "SELECT id, broker, buckets, slot, delta FROM budget_changes WHERE id > ? ORDER BY id",
            [self.seen],
        ).fetchall()
        changes: list[Change] = []
        for change_id, broker, buckets, slot, delta in found:
            self.seen = change_id
            if broker != self.key:
                changes.append((tuple(tuple(b) for b in json.loads(buckets)), slot, delta))
        return changes

    def record(self, conn: Any, change: Change, at: float) -> None:
        """Write one of this broker's changes. Under the writers' lock, taken when the
        transaction began and every earlier change read: its id is the last one seen."""
        buckets, slot, delta = change
        self.seen = conn.execute(
            "INSERT INTO budget_changes (broker, at, buckets, slot, delta) VALUES (?, ?, ?, ?, ?)"
            " RETURNING id",
            [self.key, at, json.dumps(buckets), slot, delta],
        ).fetchone()[0]

    def notify(self, conn: Any, request_ids: Iterable[str]) -> None:
        """Tell the other brokers (on commit) which requests this transaction changed."""
        message = str(self.key)
        for request_id in request_ids:
            if len(message) + len(request_id) >= _PAYLOAD_BYTES:
                conn.execute("SELECT pg_notify(?, ?)", [CHANNEL, message])
                message = str(self.key)
            message += " " + request_id
        if " " in message:
            conn.execute("SELECT pg_notify(?, ?)", [CHANNEL, message])

    # -- between transactions -----------------------------------------------------------------

    def totals_watermark(self, conn: Any) -> None:
        """In the snapshot the budget totals are loaded from: the changes in it are in the
        totals, so only later ones are applied after."""
        row = conn.execute("SELECT max(id) FROM budget_changes").fetchone()
        self.seen = int(row[0] or 0)

    def forget_changes(self, conn: Any, before: float) -> None:
        conn.execute("DELETE FROM budget_changes WHERE at < ?", [before])


def alive(conn: Any) -> set[int]:
    """The keys of the brokers whose connection to this database lives."""
    rows = conn.execute(
        "SELECT objid::bigint FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 2"
        " AND classid::bigint = ? AND granted"
        " AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
        [BROKERS],
    ).fetchall()
    return {int(row[0]) for row in rows}


async def listen(url: str, own_key: int, changed: Callable[[list[str]], None]) -> None:
    """Call `changed` with the requests each other broker's commit changed, until cancelled;
    a lost connection is opened again (a second later), and what was missed meanwhile is
    caught up by the caller's periodic reads."""
    import psycopg

    while True:
        try:
            async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
                await conn.execute(f"LISTEN {CHANNEL}")
                async for note in conn.notifies():
                    sender, _, ids = note.payload.partition(" ")
                    if sender != str(own_key) and ids:
                        changed(ids.split(" "))
        except psycopg.Error as exc:
            log.warning("listening to the other brokers failed (%s); again in a second", exc)
            await asyncio.sleep(1.0)
