"""Keep the ledger's copy of the service's usage history current: fetch `GET /api/agent/usage`
page by page and hand each page to `ledger.usage_write.sync_usage`, which dedupes and reconciles.

Incremental: it asks only for charges since the newest one already stored, less a day of overlap
(a charge the service reports late is still picked up; the overlap costs nothing, charges are
deduped by id). Each page is its own transaction, so an interrupted sync keeps what it stored.
"""

from __future__ import annotations

from dataclasses import fields
from typing import TYPE_CHECKING

from svc_console.core.usage import DAY_S
from svc_console.ledger.usage_write import SyncResult, sync_usage

if TYPE_CHECKING:
    from svc_console.ledger import Ledger
    from svc_console.market.account import AccountClient

PAGE_SIZE = 200
OVERLAP_S = DAY_S
MAX_PAGES = 10_000  # a service that never stops paging is a fault, not a history


def _add(a: SyncResult, b: SyncResult) -> SyncResult:
    return SyncResult(*(getattr(a, f.name) + getattr(b, f.name) for f in fields(SyncResult)))


async def sync_from(
    account: AccountClient, ledger: Ledger, *, page_size: int = PAGE_SIZE
) -> SyncResult:
    """Fetch every charge since the last sync and store it; returns what changed."""
    newest = ledger.db.execute("SELECT max(at) FROM usage").fetchone()[0]
    since = None if newest is None else newest - OVERLAP_S
    total = SyncResult(0, 0, 0, 0, 0)
    cursor: str | None = None
    for _ in range(MAX_PAGES):
        page = await account.usage(since=since, cursor=cursor, limit=page_size)
        total = _add(total, sync_usage(ledger, page.charges))
        if not page.next_cursor or not page.charges:
            break
        cursor = page.next_cursor
    return total
