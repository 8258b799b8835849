"""The SQLite engine of the ledger (`engine`): sqlite-utils' database with the few methods the
engines answer differently, and the ledger file opened as the writer wants it."""

from __future__ import annotations

import errno
import os
import sqlite3
from pathlib import Path

import sqlite_utils

from svc_console.ledger.refusals import CorruptLedger, UnsafeLedgerFile, refuse_unsafe_file


class SqliteDatabase(sqlite_utils.Database):
    """The SQLite ledger: sqlite-utils' database, with the engine's few differences."""

    dialect = "sqlite"

    def schema_version(self) -> int:
        return int(self.execute("PRAGMA user_version").fetchone()[0])

    def set_schema_version(self, version: int) -> None:
        self.execute(f"PRAGMA user_version = {int(version)}")

    def prepare_schema(self) -> None:
        """Nothing to prepare: the JSON functions are SQLite's own, and the writer holds the
        file's lock already."""

    def finish_schema(self) -> None:
        """Nothing: every index SQLite needs is made by the migrations themselves."""

    def column_names(self, table: str) -> list[str]:
        return [row[1] for row in self.execute(f'PRAGMA table_info("{table}")').fetchall()]

    def has_table(self, table: str) -> bool:
        return bool(self.column_names(table))


def open_sqlite(path: Path) -> SqliteDatabase:
    """The ledger file, made owner-only if it is new. Refused (`LedgerRefused`, one line) when it
    is a symbolic link or no file, or not a database SQLite can read."""
    refuse_unsafe_file(path)
    try:
        os.close(os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600))
    except OSError as exc:
        if exc.errno != errno.ELOOP:
            raise
        raise UnsafeLedgerFile(f"{path} is a symbolic link; put the ledger file there") from None
    db = SqliteDatabase(sqlite3.connect(path, check_same_thread=False))
    try:
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        db.execute("PRAGMA foreign_keys=ON")
        db.execute("PRAGMA busy_timeout=5000")
        # Room for the indexes' upper pages of a ledger of millions of rows (SQLite's default
        # is 2 MB), so a request's inserts do not read them back from the file each time.
        db.execute("PRAGMA cache_size=-32768")
        # The schema read whole: a file SQLite cannot read says so here, not at the first write.
        db.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.DatabaseError as exc:
        db.close()
        if isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc):
            raise
        raise CorruptLedger(
            f"{path} is not a ledger SQLite can read ({exc}): restore it from a backup, or"
            " move it away to start an empty one"
        ) from None
    except BaseException:
        db.close()
        raise
    return db
