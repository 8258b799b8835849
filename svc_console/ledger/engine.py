"""The seam between the ledger and its engine: SQLite (a file, the default) or PostgreSQL (a URL).

The ledger's code holds a `Database`: `execute` and `conn` (a DB-API connection as sqlite3's,
`?` placeholders), `atomic()` for a transaction, and the few things the engines keep differently
(the schema version, a table's columns). Its SQL is one text for both:
SQLite's own spelling where PostgreSQL has none is turned into PostgreSQL's in `pg_dialect`, and
nowhere else.

A ledger has a place on disk either way (`path`): its audit key and the chain's head file live
beside it, outside the database whoever can write the rows can reach (`audit_chain`). With a URL
the rows are in PostgreSQL, and the file at `path` holds only the market catalogue's cache (made
by its first sync, `catalogue_store`), which is SQLite's full-text search.

Each engine's module is imported when a ledger of it is opened (`sqlite_db`, `pg`): the first
frame's reads of the ledger file need neither sqlite-utils nor psycopg. What the engines do
differently is here (the SQLite writer's lock, the snapshot, a table's existence), in
`pg_dialect` (SQL spellings, SQLite's JSON functions) and in `pg` (the PostgreSQL connection).
"""

from __future__ import annotations

import errno
import fcntl
import os
import sqlite3
from collections.abc import Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Protocol

from svc_console.ledger.refusals import (
    CorruptLedger,
    LedgerLocked,
    LedgerRefused,
    UnsafeLedgerFile,
    refuse_unsafe_file,
)

__all__ = ["CorruptLedger", "LedgerLocked", "LedgerRefused", "UnsafeLedgerFile"]


class Database(Protocol):
    dialect: str
    conn: Any

    def execute(self, sql: str, params: Sequence[Any] | None = ..., /) -> Any: ...

    def atomic(self) -> AbstractContextManager[Any]: ...

    def rollback(self) -> None: ...

    def close(self) -> None: ...

    def schema_version(self) -> int: ...

    def set_schema_version(self, version: int) -> None: ...

    def prepare_schema(self) -> None: ...

    def finish_schema(self) -> None: ...

    def column_names(self, table: str) -> list[str]: ...

    def has_table(self, table: str) -> bool: ...

    def table_names(self) -> list[str]: ...


def of(db: Any) -> Database:
    """`db` as a `Database`: a plain sqlite-utils database (a migration step run on its own, as
    the tests of old ledgers do) gains the engine's methods over the same connection."""
    if hasattr(db, "column_names"):
        return db
    from svc_console.ledger.sqlite_db import SqliteDatabase

    return SqliteDatabase(db.conn)


def open_database(path: Path, url: str | None) -> Database:
    if url:
        from svc_console.ledger.pg import Database as PgDatabase

        return PgDatabase(url)
    from svc_console.ledger.sqlite_db import open_sqlite

    return open_sqlite(path)


def errors() -> tuple[type[Exception], ...]:
    """What a failed statement raises, on either engine: sqlite3's errors (the PostgreSQL
    connection raises its own as those, `pg._as_sqlite_errors`)."""
    return (sqlite3.Error,)


def table_exists(conn: Any, name: str) -> bool:
    """Whether a raw connection's database (either engine's) has this table."""
    if isinstance(conn, sqlite3.Connection):
        sql = "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?"
    else:
        sql = "SELECT 1 FROM information_schema.tables WHERE table_name = ?"
    return conn.execute(sql, [name]).fetchone() is not None


def begin_snapshot(conn: Any) -> None:
    """Begin a transaction that reads one snapshot throughout: SQLite's reads in a transaction
    do; PostgreSQL's default (READ COMMITTED) sees each statement's own."""
    if isinstance(conn, sqlite3.Connection):
        conn.execute("BEGIN")
    else:
        conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")


class WriterLock:
    """One broker a console home: an flock on `<path>.lock`, taken before the ledger is opened.
    For a SQLite ledger it is also the file's one writer; brokers sharing a PostgreSQL ledger
    each have a home of their own, and serialize their transactions in the database (`shared`)."""

    def __init__(self, path: Path):
        refuse_unsafe_file(path)
        flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW
        try:
            self._fd: int | None = os.open(f"{path}.lock", flags, 0o600)
        except OSError as exc:
            if exc.errno == errno.ELOOP:  # made a link since the check above
                raise UnsafeLedgerFile(f"{path}.lock is a symbolic link; remove it") from None
            raise
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self.release()
            raise LedgerLocked(
                f"another svc-console broker is using {path}; stop it or set SVC_CONSOLE_HOME"
            ) from None

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def url_shown(url: str) -> str:
    """A URL as it may be shown or logged: without its password."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{parts.username}:***@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))
