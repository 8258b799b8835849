"""Providers by name on the usage screen, as the approvals screen shows them: a cache of the
names `ledger/provider_names.py` finds for the ids on screen, filled by the screen's worker
threads on their read-only connections; painting only reads it. An id with no known name is shown
as it is. Names are the service's text: shown through `core.sanitize.inert_line`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

from svc_console.ledger.provider_names import provider_names
from svc_console.ledger.readers import Connection, ReadError, open_reader


class ProviderNames:
    def __init__(self, cache: Path | None = None) -> None:
        """`cache`: the catalogue cache's own file, beside a PostgreSQL ledger (None: the cache
        is in the ledger read)."""
        self._cache = cache
        self._names: dict[str, str | None] = {}  # None: looked up, no name known

    def get(self, provider: str | None) -> str | None:
        return self._names.get(provider) if provider else None

    def shown(self, provider: str | None) -> str:
        return self.get(provider) or provider or "-"

    def forget_unknown(self) -> None:
        """A sync (of usage, or of the catalogue) may have brought names: ask again."""
        self._names = {key: name for key, name in self._names.items() if name is not None}

    def learn(self, conn: Connection, providers: Iterable[str | None]) -> None:
        """Look up the ids not asked about yet (in a worker thread)."""
        missing = sorted({p for p in providers if p and p not in self._names})
        if not missing:
            return
        try:
            found = self._find(conn, missing)
        except ReadError:
            # A ledger without these tables yet, or a query interrupted: ids are shown, and
            # asked about again next time.
            return
        self._names.update({provider: found.get(provider) for provider in missing})

    def _find(self, conn: Connection, providers: Sequence[str]) -> dict[str, str]:
        if self._cache is None:
            return provider_names(conn, providers)
        if not self._cache.exists():  # made by the catalogue's first sync or visit
            return provider_names(conn, providers, cached=False)
        cache = open_reader(self._cache)
        try:
            return provider_names(conn, providers, cache)
        finally:
            cache.close()
