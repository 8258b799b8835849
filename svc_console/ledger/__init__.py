"""The ledger (SQLite, or PostgreSQL for a team: `engine`): every request, decision and execution,
and a hash-chained event log.

`Ledger` and its errors are imported on first use, not with the package: the console's first
frame reads requests through `request_reads` without the writer (sqlite-utils, the audit chain).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from svc_console.ledger.store import Ledger, LedgerLocked, LedgerRefused, PastLifetime

__all__ = ["Ledger", "LedgerLocked", "LedgerRefused", "PastLifetime"]


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from svc_console.ledger import store

    return getattr(store, name)
