"""Providers' names for their ids, from what the ledger already knows: first the catalogue cache
(`catalogue_endpoints`), then the endpoint record of a request paid to the provider
(`requests.endpoint`, found by the indexed `provider` column). A usage charge holds only the id;
the usage screen shows the name, as the approvals screen does.

On SQLite both are read from the ledger's file; beside a PostgreSQL ledger the catalogue cache is
a local file of its own (`catalogue_store.open_writer`), so the two are read through two
connections.

Names are the service's text: whoever shows them passes them through `core.sanitize`.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from svc_console.ledger.catalogue_schema import ENDPOINTS

_CHUNK = 200  # ids per query, well under SQLite's limit on parameters


def provider_names(
    conn: sqlite3.Connection,
    providers: Sequence[str],
    catalogue: sqlite3.Connection | None = None,
    *,
    cached: bool = True,
) -> dict[str, str]:
    """The names known for these ids (an id with none is left out): the catalogue cache's,
    read through `catalogue` (the ledger's own `conn` when None), then the requests'. Without
    `cached`, no cache exists yet and only the requests are asked."""
    found = catalogue_names(catalogue or conn, providers) if cached else {}
    return found | request_names(conn, [p for p in providers if p not in found])


def catalogue_names(conn: sqlite3.Connection, providers: Sequence[str]) -> dict[str, str]:
    """The names the catalogue cache gives. Raises sqlite3.Error, as any read does (a cache
    without its tables yet, a query interrupted)."""
    found: dict[str, str] = {}
    for start in range(0, len(providers), _CHUNK):
        chunk = list(providers[start : start + _CHUNK])
        marks = ", ".join("?" * len(chunk))
        rows = conn.execute(
            f"SELECT provider, min(provider_name) FROM {ENDPOINTS}"
            f" WHERE provider IN ({marks}) GROUP BY provider",
            chunk,
        )
        found.update({key: name for key, name in rows if name})
    return found


def request_names(conn: sqlite3.Connection, providers: Sequence[str]) -> dict[str, str]:
    """The names the latest request paid to each provider recorded, on either engine."""
    found: dict[str, str] = {}
    for provider in providers:
        row = conn.execute(
            "SELECT json_extract(endpoint, '$.providerName') FROM requests"
            " WHERE provider = ? AND endpoint IS NOT NULL ORDER BY created_at DESC LIMIT 1",
            [provider],
        ).fetchone()
        if row and isinstance(row[0], str) and row[0]:
            found[provider] = row[0]
    return found
