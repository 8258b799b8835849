"""Plain INSERT and UPDATE by primary key, for the writes on every request's path.

sqlite-utils' table methods read the schema again on each call (some fifty statements for one
request's insert and two state changes); these send one statement each. Table and column names
are the ledger's own, never an agent's or a provider's text. And the values such rows hold.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from svc_console.core.models import Estimate
from svc_console.core.money import to_atomic
from svc_console.ledger.engine import Database


def insert(db: Database, table: str, row: Mapping[str, Any]) -> Any:
    """Insert one row; returns its `id` (RETURNING, which both engines speak: PostgreSQL has no
    lastrowid)."""
    columns = ", ".join(f'"{name}"' for name in row)
    marks = ", ".join("?" * len(row))
    cursor = db.conn.execute(
        f'INSERT INTO "{table}" ({columns}) VALUES ({marks}) RETURNING id', list(row.values())
    )
    return cursor.fetchone()[0]


def update(db: Database, table: str, key: Any, values: Mapping[str, Any]) -> None:
    """Set `values` on the row whose `id` is `key`; a missing row is an error, not a no-op."""
    assignments = ", ".join(f'"{name}" = ?' for name in values)
    cursor = db.conn.execute(
        f'UPDATE "{table}" SET {assignments} WHERE id = ?', [*values.values(), key]
    )
    if cursor.rowcount != 1:
        raise KeyError(f"{table} {key!r}")


def dicts(cursor: Any) -> list[dict[str, Any]]:
    """A cursor's rows as dicts of their column names."""
    names = [column[0] for column in cursor.description]
    return [dict(zip(names, values, strict=True)) for values in cursor.fetchall()]


def estimate_units(estimate: Estimate | dict | None) -> int | None:
    """The estimate's amount in atomic units, kept beside its JSON so the pending list sorts by
    an index (schema `_v5`); NULL without an estimate."""
    if estimate is None:
        return None
    return to_atomic(Estimate.model_validate(estimate).amount_usdc)


def jsonable(value: Any) -> Any:
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json")
    if isinstance(value, list):
        return [jsonable(v) for v in value]
    return value
