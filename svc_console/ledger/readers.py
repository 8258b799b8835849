"""Read-only connections to the ledger (its file, or its PostgreSQL database), for the screens and
the usage export.

A screen or an export reads while the broker writes through its own connection: each reader opens
the file read-only (`mode=ro`) with a busy timeout, so a long query never holds up a write and a
write never fails a read at once. A `Reader` is one such connection shared by the worker threads
of one screen, one at a time (its `lock`); closing it interrupts the query running now.

Callers catch `ReadError` (any failure of a read) and `Interrupted` (a query stopped by
`Reader.interrupt`, or a ledger busy past the timeout) rather than sqlite3's own names, so no
module above the ledger imports `sqlite3`.
"""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

from svc_console.ledger.refusals import refuse_unsafe_file

Connection = sqlite3.Connection
ReadError = sqlite3.Error
Interrupted = sqlite3.OperationalError

BUSY_TIMEOUT_MS = 5000


def open_reader(path: Path, url: str | None = None) -> sqlite3.Connection:
    """A read-only connection to a ledger file, usable from any one thread at a time; with
    `url`, a read-only session of the PostgreSQL ledger (`engine`), which speaks as this one."""
    if url:
        from svc_console.ledger.pg import Connection as PgConnection

        return PgConnection(url, read_only=True)  # type: ignore[return-value]
    refuse_unsafe_file(path)  # a link is not followed out of the home, even to read
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False)
    conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
    return conn


def open_query_only(path: Path) -> sqlite3.Connection:
    """A connection of the caller's thread that refuses writes (`PRAGMA query_only`): what a
    policy simulation replays the ledger through while the broker keeps writing."""
    conn = sqlite3.connect(path, check_same_thread=False)
    try:
        conn.execute("PRAGMA query_only=ON")
        conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
    except BaseException:
        conn.close()
        raise
    return conn


class Reader:
    """One read-only connection to the ledger, used by one worker thread at a time."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.lock = threading.Lock()
        self.closed = False

    @classmethod
    def open(cls, path: Path, url: str | None = None) -> Reader:
        return cls(open_reader(path, url))

    def interrupt(self) -> None:
        """Stop the query running now (it raises in its worker); the next one runs normally."""
        self.conn.interrupt()

    def close(self) -> None:
        self.closed = True
        self.conn.interrupt()
        with self.lock:
            self.conn.close()
