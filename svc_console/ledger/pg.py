"""The ledger on PostgreSQL (psycopg 3): a connection that speaks as `sqlite3`'s does to the
ledger's code, and the database around it that `engine.Database` describes.

The connection is in autocommit mode and the ledger opens its transactions itself (BEGIN,
SAVEPOINT, COMMIT), as it does on SQLite, so one transaction shape serves both engines. Each
statement's text goes through `pg_dialect.translate` once (cached).
"""

from __future__ import annotations

import contextlib
import secrets
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import psycopg
from psycopg import pq
from psycopg.adapt import Dumper
from psycopg.pq import Format
from psycopg.types.numeric import NumericLoader

from svc_console.ledger import pg_dialect


@contextlib.contextmanager
def _as_sqlite_errors() -> Iterator[None]:
    """PostgreSQL's errors raised as sqlite3's, so the code above the ledger catches one family
    whichever the engine (`except sqlite3.Error`, `readers.ReadError`) and never imports psycopg:
    a constraint is an IntegrityError, a cancelled query (`interrupt`) an OperationalError as
    SQLite's interrupted one is, anything else a DatabaseError. The original is the cause."""
    try:
        yield
    except psycopg.errors.IntegrityError as exc:
        raise sqlite3.IntegrityError(str(exc)) from exc
    except (psycopg.errors.QueryCanceled, psycopg.OperationalError) as exc:
        raise sqlite3.OperationalError(str(exc)) from exc
    except psycopg.Error as exc:
        raise sqlite3.DatabaseError(str(exc)) from exc


class _BoolAsInt(Dumper):
    """A Python bool is sent as 1 or 0: the ledger's flags are INTEGER columns, as in SQLite."""

    oid = psycopg.postgres.types["int8"].oid
    format = Format.TEXT

    def dump(self, obj: Any) -> bytes:
        return b"1" if obj else b"0"


class _NumericAsNumber(NumericLoader):
    """PostgreSQL sums integers as NUMERIC; SQLite as INTEGER. The ledger stores no NUMERIC, so
    a numeric result is such a sum (or an average): an int when whole, else a float, as SQLite
    gives them."""

    def load(self, data: Any) -> Any:
        value = super().load(data)
        return int(value) if value == value.to_integral_value() else float(value)


def _storable(params: Iterable[Any]) -> list[Any]:
    """The parameters as PostgreSQL can take them. Its text cannot hold NUL, which SQLite's can
    and which a service's or an agent's text may carry: such a text is stored, and looked for,
    with U+FFFD in its place, rather than failing the write (a usage sync would fail on that
    charge at every try). The same text always gives the same stored text, so a charge held is
    still found as held, and a filter on it still matches it."""
    return [p.replace("\x00", "\ufffd") if type(p) is str and "\x00" in p else p for p in params]


_NO_DETAILS = (None,) * 6  # what sqlite3 describes of a column beyond its name


class Cursor:
    """A psycopg cursor with what the ledger reads of a sqlite3 one."""

    def __init__(self, raw: psycopg.Cursor[Any], lastrowid: int | None = None):
        self._raw = raw
        self.lastrowid = lastrowid

    @property
    def description(self) -> tuple[tuple, ...] | None:
        """The columns as sqlite3 describes them (7-tuples, the name first, the rest None),
        read from the result: psycopg's own makes a Column object for each on every access."""
        result = self._raw.pgresult
        if result is None or not result.nfields:
            return None
        return tuple((result.fname(i).decode(), *_NO_DETAILS) for i in range(result.nfields))

    @property
    def rowcount(self) -> int:
        return self._raw.rowcount

    def _has_rows(self) -> bool:
        # sqlite3 answers a fetch after an UPDATE with nothing; psycopg raises. Asked of the
        # result's status, not of `description`, which builds its columns on each access.
        result = self._raw.pgresult
        return result is not None and result.status == pq.ExecStatus.TUPLES_OK

    def fetchone(self) -> tuple | None:
        return self._raw.fetchone() if self._has_rows() else None

    def fetchall(self) -> list[tuple]:
        return self._raw.fetchall() if self._has_rows() else []

    def fetchmany(self, size: int) -> list[tuple]:
        return self._raw.fetchmany(size) if self._has_rows() else []

    def __iter__(self) -> Iterator[tuple]:
        return iter(self._raw) if self._has_rows() else iter(())

    def close(self) -> None:
        self._raw.close()


class Connection:
    """One PostgreSQL session, with `sqlite3.Connection`'s methods as the ledger calls them."""

    def __init__(self, url: str, *, read_only: bool = False):
        with _as_sqlite_errors():
            self.raw = psycopg.connect(url, autocommit=True)
            self.raw.adapters.register_dumper(bool, _BoolAsInt)
            self.raw.adapters.register_loader("numeric", _NumericAsNumber)
            if read_only:
                self.raw.execute("SET default_transaction_read_only = on")

    def execute(self, sql: str, params: Sequence[Any] | None = None) -> Cursor:
        cursor = self.raw.cursor()
        with _as_sqlite_errors():
            if params:
                cursor.execute(pg_dialect.translate(sql), _storable(params))  # type: ignore[arg-type]
            else:  # sent as it is: a migration's several statements in one text
                cursor.execute(pg_dialect.translate(sql, placeholders=False))  # type: ignore[arg-type]
        return Cursor(cursor)

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> Cursor:
        cursor = self.raw.cursor()
        with _as_sqlite_errors():
            cursor.executemany(pg_dialect.translate(sql), [_storable(r) for r in rows])  # type: ignore[arg-type]
        return Cursor(cursor)

    def batch(self, statements: Sequence[tuple[str, Sequence[Any]]]) -> list[list[tuple]]:
        """Several statements in one round trip (psycopg's pipeline mode); the rows of each.
        The server runs them in order, each seeing what the ones before it did: a lock taken
        by the first holds for the reads after it, as if they had been sent one by one."""
        cursors = []
        with _as_sqlite_errors():
            with self.raw.pipeline():
                for sql, params in statements:
                    cursor = self.raw.cursor()
                    cursor.execute(pg_dialect.translate(sql), _storable(params))  # type: ignore[arg-type]
                    cursors.append(Cursor(cursor))
            return [cursor.fetchall() for cursor in cursors]

    @property
    def in_transaction(self) -> bool:
        return self.raw.info.transaction_status != pq.TransactionStatus.IDLE

    def commit(self) -> None:
        if self.in_transaction:
            self.raw.execute("COMMIT")

    def rollback(self) -> None:
        if self.in_transaction:
            self.raw.execute("ROLLBACK")

    def interrupt(self) -> None:
        """Stop the statement running (from another thread), as sqlite3's interrupt does."""
        with contextlib.suppress(psycopg.Error):
            self.raw.cancel_safe()

    def close(self) -> None:
        self.raw.close()

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, *exc: object) -> None:
        if exc[0] is None:
            self.commit()
        else:
            self.rollback()


class Database:
    """The ledger's database on PostgreSQL (see `engine.Database`)."""

    dialect = "postgresql"

    def __init__(self, url: str, *, read_only: bool = False):
        self.url = url
        self.conn = Connection(url, read_only=read_only)

    def execute(self, sql: str, params: Sequence[Any] | None = None) -> Cursor:
        return self.conn.execute(sql, params)

    @contextlib.contextmanager
    def atomic(self) -> Iterator[Database]:
        """A transaction, or a savepoint inside one (as sqlite-utils' `atomic`)."""
        if self.conn.in_transaction:
            savepoint = f"atomic_{secrets.token_hex(8)}"
            self.conn.execute(f"SAVEPOINT {savepoint}")
            try:
                yield self
            except BaseException:
                self.conn.execute(f"ROLLBACK TO SAVEPOINT {savepoint}")
                self.conn.execute(f"RELEASE SAVEPOINT {savepoint}")
                raise
            self.conn.execute(f"RELEASE SAVEPOINT {savepoint}")
            return
        self.conn.execute("BEGIN")
        try:
            yield self
        except BaseException:
            self.rollback()
            raise
        try:
            self.conn.execute("COMMIT")
        except BaseException:
            self.rollback()
            raise

    def rollback(self) -> None:
        self.conn.rollback()

    def close(self) -> None:
        self.conn.close()

    # -- what the two engines keep differently ------------------------------------------------

    def schema_version(self) -> int:
        self.conn.execute(pg_dialect.VERSION_TABLE)
        row = self.conn.execute("SELECT max(version) FROM ledger_schema").fetchone()
        return int(row[0]) if row and row[0] is not None else 0

    def set_schema_version(self, version: int) -> None:
        self.conn.execute("DELETE FROM ledger_schema")
        self.conn.execute("INSERT INTO ledger_schema (version) VALUES (?)", [version])

    def prepare_schema(self) -> None:
        """Once per migration run, in its transaction: SQLite's JSON functions (`pg_dialect`),
        and the lock that keeps two brokers from migrating at once."""
        self.conn.execute("SELECT pg_advisory_xact_lock(?)", [pg_dialect.WRITER_LOCK_KEY + 1])
        self.conn.execute(pg_dialect.FUNCTIONS)

    def finish_schema(self) -> None:
        for statement in pg_dialect.AFTER_MIGRATIONS:
            self.conn.execute(statement)

    def column_names(self, table: str) -> list[str]:
        rows = self.conn.execute(
            "SELECT column_name FROM information_schema.columns"
            " WHERE table_schema = current_schema() AND table_name = ? ORDER BY ordinal_position",
            [table],
        ).fetchall()
        return [row[0] for row in rows]

    def has_table(self, table: str) -> bool:
        return bool(self.column_names(table))

    def table_names(self) -> list[str]:
        rows = self.conn.execute(
            "SELECT table_name FROM information_schema.tables"
            " WHERE table_schema = current_schema() ORDER BY table_name"
        ).fetchall()
        return [row[0] for row in rows]


def bulk_load(url: str, table: str, columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
    """Load many rows into `table` at once (a seeded usage history): COPY, with the table's own
    indexes (not its constraints') dropped meanwhile and built again after, then ANALYZE, in one
    transaction; then VACUUM, so the visibility map lets counts and sums be read from the
    indexes alone (as SQLite's covering indexes are). The counterpart of SQLite's executemany
    with the indexes dropped."""
    with psycopg.connect(url) as conn, conn.cursor() as cursor:
        indexes = cursor.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = %s"
            " AND indexname NOT IN (SELECT conname FROM pg_constraint)",
            [table],
        ).fetchall()
        for name, _ in indexes:
            cursor.execute(f'DROP INDEX "{name}"')
        listed = ", ".join(f'"{column}"' for column in columns)
        with cursor.copy(f'COPY "{table}" ({listed}) FROM STDIN') as copy:
            for row in rows:
                copy.write_row(row)
        for _, create in indexes:
            cursor.execute(create)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f'VACUUM (ANALYZE) "{table}"')
