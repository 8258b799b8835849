"""Providers by name on the usage screen, as the approvals screen shows them: a usage charge holds
only the provider's id, so its name is looked up in what the ledger already knows, first the
catalogue cache (`catalogue_endpoints`), then the endpoint record of any request paid to that
provider (`requests.endpoint`, by the indexed `provider` column). An id found in neither is shown
as it is.

Lookups run in the screen's worker threads, on their read-only connections, for the few ids on
screen; painting only reads the cache. Names are the service's text: shown through
`core.sanitize.inert_line`.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable

from svc_console.ledger.catalogue_schema import ENDPOINTS

_CHUNK = 200  # ids per query, well under SQLite's limit on parameters


class ProviderNames:
    def __init__(self) -> None:
        self._names: dict[str, str | None] = {}  # None: looked up, no name known

    def get(self, provider: str | None) -> str | None:
        return self._names.get(provider) if provider else None

    def shown(self, provider: str | None) -> str:
        return self.get(provider) or provider or "-"

    def forget_unknown(self) -> None:
        """A sync (of usage, or of the catalogue) may have brought names: ask again."""
        self._names = {key: name for key, name in self._names.items() if name is not None}

    def learn(self, conn: sqlite3.Connection, providers: Iterable[str | None]) -> None:
        """Look up the ids not asked about yet (in a worker thread)."""
        missing = sorted({p for p in providers if p and p not in self._names})
        if not missing:
            return
        found: dict[str, str] = {}
        try:
            for start in range(0, len(missing), _CHUNK):
                chunk = missing[start : start + _CHUNK]
                marks = ", ".join("?" * len(chunk))
                rows = conn.execute(
                    f"SELECT provider, min(provider_name) FROM {ENDPOINTS}"
                    f" WHERE provider IN ({marks}) GROUP BY provider",
                    chunk,
                )
                found.update({key: name for key, name in rows if name})
            for provider in (p for p in missing if p not in found):
                row = conn.execute(
                    "SELECT json_extract(endpoint, '$.providerName') FROM requests"
                    " WHERE provider = ? AND endpoint IS NOT NULL ORDER BY rowid DESC LIMIT 1",
                    [provider],
                ).fetchone()
                if row and isinstance(row[0], str) and row[0]:
                    found[provider] = row[0]
        except sqlite3.OperationalError:
            # A ledger without these tables yet, or a query interrupted: ids are shown, and
            # asked about again next time.
            return
        self._names.update({provider: found.get(provider) for provider in missing})
