"""Keep the ledger's copy of the service's usage history current: fetch `GET /api/agent/usage`
page by page and hand each page to `ledger.usage_write.sync_usage`, which keeps every charge
under the service it came from, dedupes and reconciles.

The service's charges are kept under the identity it gives itself, else its base URL
(`core.usage.service_identity`); a first small page says which, before the newest charge already
stored of that service is looked up. Incremental: it asks only for charges since that one, less
a day of overlap (a charge the service reports late is still picked up; the overlap costs
nothing, a charge held with the same facts is not stored twice). Each page is its own
transaction, so an interrupted sync keeps what it stored.
"""

from __future__ import annotations

from dataclasses import fields
from typing import TYPE_CHECKING

from svc_console.core.usage import DAY_S, service_identity
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
    account: AccountClient, ledger: Ledger, base_url: str, *, page_size: int = PAGE_SIZE
) -> SyncResult:
    """Fetch every charge of the service at `base_url` since the last sync and store it;
    returns what changed."""
    first = await account.usage(limit=1)
    service = service_identity(base_url, first.service_id)
    newest = ledger.db.execute("SELECT max(at) FROM usage WHERE service = ?", [service]).fetchone()[
        0
    ]
    since = None if newest is None else newest - OVERLAP_S
    total = SyncResult(0, 0, 0, 0, 0)
    cursor: str | None = None
    for _ in range(MAX_PAGES):
        page = await account.usage(since=since, cursor=cursor, limit=page_size)
        identity = service_identity(base_url, page.service_id)
        total = _add(total, sync_usage(ledger, page.charges, service=identity))
        if not page.next_cursor or not page.charges:
            break
        cursor = page.next_cursor
    return total
