"""Fill the ledger's catalogue cache from the service: every market endpoint and every dataset
listing, fetched through the discovery routes an agent would use, then stored in one transaction
(`ledger/catalogue_store.py`).

The service has no "list everything" route for either: `POST /api/search` answers at most 50
endpoints, `GET /api/datasets` at most 100 listings, neither with an offset. The browse route
(`GET /api/market/catalog`) does page, by provider: it names every endpoint id and what each
provider's endpoints have in common. So the sync browses first, then walks the search filters:
one query per domain type; a query whose total is more than it returned is split by product
class, then by chain, skipping combinations no provider has. What the walk still misses (a
partition larger than a page even at the finest split) is fetched by id. Datasets: tier, then
modality, then format, then category; a partition still too large is read in each of the four
orders, and what stays unseen is reported as the difference between what the service counted and
what the cache holds.

Nothing is written unless every fetch succeeded: a sync that fails leaves the previous cache (and
its sync time) as it was, and the error says why.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from svc_console.core.catalogue import ProviderSummary
from svc_console.core.datasets import FORMATS, MODALITIES, SORT_ORDERS, TIERS, DatasetListing
from svc_console.core.models import EndpointRecord
from svc_console.core.taxonomy import CHAINS, DOMAIN_TYPES, PRODUCT_CLASSES
from svc_console.ledger import catalogue_store
from svc_console.ledger.catalogue_store import SyncState
from svc_console.market import errors

if TYPE_CHECKING:
    from svc_console.market.rest import MarketClient

SEARCH_LIMIT = 50  # the most `POST /api/search` answers
DATASETS_LIMIT = 100  # the most `GET /api/datasets` answers
BROWSE_LIMIT = 100  # providers per page of `GET /api/market/catalog`
MAX_PROVIDERS = 100_000  # a catalogue claiming more is a fault, not a market
CONCURRENCY = 4  # requests in flight at once: quick against a remote service, gentle on it

T = TypeVar("T")


@dataclass(frozen=True)
class SyncProgress:
    """How far a sync is: `stage` is "endpoints", "datasets" or "storing"; `total` is what the
    service reported (None until it has)."""

    stage: str
    fetched: int
    total: int | None


Progress = Callable[[SyncProgress], None]


@dataclass(frozen=True)
class SyncReport:
    state: SyncState
    requests: int
    seconds: float


class _Fetcher:
    """Runs the sync's requests, at most `CONCURRENCY` at once, and counts them."""

    def __init__(self, rest: MarketClient, progress: Progress | None) -> None:
        self.rest = rest
        self.progress = progress
        self.requests = 0
        self._slots = asyncio.Semaphore(CONCURRENCY)

    async def call(self, request: Callable[[], Awaitable[T]]) -> T:
        async with self._slots:
            self.requests += 1
            return await request()

    def report(self, stage: str, fetched: int, total: int | None) -> None:
        if self.progress is not None:
            self.progress(SyncProgress(stage, fetched, total))


# -- market endpoints -----------------------------------------------------------------------------

_MARKET_SPLITS: tuple[tuple[str, Sequence[str]], ...] = (
    ("domain_type", tuple(DOMAIN_TYPES)),
    ("product_class", tuple(PRODUCT_CLASSES)),
    ("chain", CHAINS),
)


async def fetch_endpoints(fetcher: _Fetcher) -> tuple[list[EndpointRecord], int]:
    """Every endpoint record the service lists, and how many it lists."""
    rest = fetcher.rest
    providers = await _browse(fetcher)
    listed = list(dict.fromkeys(i for provider in providers for i in provider.endpoints))
    found: dict[str, EndpointRecord] = {}

    def possible(filters: dict[str, Any]) -> bool:
        # A provider's summary lists every domain type, class and chain of its endpoints, so a
        # combination no provider has cannot match: no request is spent on it.
        return any(
            all(value in getattr(p, _SUMMARY_FIELDS[name]) for name, value in filters.items())
            for p in providers
        )

    async def walk(filters: dict[str, Any], depth: int) -> None:
        if not possible(filters):
            return
        page = await fetcher.call(lambda: rest.search_page(limit=SEARCH_LIMIT, **filters))
        for record in page.results:
            found[record.id] = record
        fetcher.report("endpoints", len(found), len(listed))
        if page.total > len(page.results) and depth < len(_MARKET_SPLITS):
            name, values = _MARKET_SPLITS[depth]
            await asyncio.gather(*(walk({**filters, name: v}, depth + 1) for v in values))

    name, values = _MARKET_SPLITS[0]
    await asyncio.gather(*(walk({name: value}, 1) for value in values))
    missing = [i for i in listed if i not in found]
    for record in await asyncio.gather(*(_endpoint(fetcher, i) for i in missing)):
        if record is not None:
            found[record.id] = record
    fetcher.report("endpoints", len(found), len(listed))
    return list(found.values()), len(listed)


# Which field of a provider's summary holds the values of each search filter.
_SUMMARY_FIELDS = {
    "domain_type": "domain_types",
    "product_class": "product_classes",
    "chain": "chains",
}


async def _browse(fetcher: _Fetcher) -> list[ProviderSummary]:
    """Every provider of the browse route: the first page says how many, the rest follow."""
    first = await fetcher.call(lambda: fetcher.rest.market_catalog(offset=0, limit=BROWSE_LIMIT))
    offsets = range(len(first.providers), min(first.total, MAX_PROVIDERS), BROWSE_LIMIT)
    pages = await asyncio.gather(
        *(
            fetcher.call(lambda at=at: fetcher.rest.market_catalog(offset=at, limit=BROWSE_LIMIT))
            for at in (offsets if first.providers else ())
        )
    )
    providers = {p.id: p for page in (first, *pages) for p in page.providers}
    return list(providers.values())


async def _endpoint(fetcher: _Fetcher, endpoint_id: str) -> EndpointRecord | None:
    try:
        return await fetcher.call(lambda: fetcher.rest.endpoint(endpoint_id))
    except errors.EndpointNotFound:
        return None  # delisted since the browse named it


# -- dataset listings -----------------------------------------------------------------------------

_DATASET_SPLITS: tuple[tuple[str, Sequence[str]], ...] = (
    ("tier", TIERS),
    ("modality", MODALITIES),
    ("format", FORMATS),
)


async def fetch_datasets(fetcher: _Fetcher) -> tuple[list[DatasetListing], int]:
    """Every dataset listing the service lists (as far as its filters reach), and how many it
    says there are."""
    rest = fetcher.rest
    found: dict[str, DatasetListing] = {}
    reported: list[int] = []

    async def page(filters: dict[str, Any]) -> int:
        result = await fetcher.call(lambda: rest.datasets(limit=DATASETS_LIMIT, **filters))
        if not filters:
            reported.append(result.total)
        for listing in result.datasets:
            found[listing.id] = listing
        fetcher.report("datasets", len(found), reported[0] if reported else None)
        return result.total - len(result.datasets)

    async def walk(filters: dict[str, Any], depth: int) -> None:
        if not await page(filters):
            return
        if depth < len(_DATASET_SPLITS):
            name, values = _DATASET_SPLITS[depth]
            await asyncio.gather(*(walk({**filters, name: v}, depth + 1) for v in values))
            return
        # Finest split still larger than a page: by category (those seen so far), then the
        # partition read from each of its ends.
        if "category" not in filters:
            seen = sorted({listing.category for listing in found.values()})
            await asyncio.gather(*(walk({**filters, "category": c}, depth) for c in seen))
            return
        others = [order for order in SORT_ORDERS if order != "newest"]
        await asyncio.gather(*(page({**filters, "sort_by": order}) for order in others))

    await walk({}, 0)
    return list(found.values()), reported[0]


# -- the whole sync -------------------------------------------------------------------------------


async def sync_catalogue(
    rest: MarketClient,
    ledger_path: Path,
    *,
    now: float,
    progress: Progress | None = None,
) -> SyncReport:
    """Fetch the whole catalogue and replace the cache with it; `now` is the sync's time as
    the console's clock tells it."""
    started = time.perf_counter()
    fetcher = _Fetcher(rest, progress)
    endpoints, endpoints_total = await fetch_endpoints(fetcher)
    datasets, datasets_total = await fetch_datasets(fetcher)
    fetcher.report("storing", len(endpoints) + len(datasets), endpoints_total + datasets_total)

    def write() -> SyncState:
        conn = catalogue_store.open_writer(ledger_path)
        try:
            return catalogue_store.store(
                conn,
                endpoints,
                datasets,
                synced_at=now,
                endpoints_reported=endpoints_total,
                datasets_reported=datasets_total,
            )
        finally:
            conn.close()

    # Its own connection, in a thread: the broker's writes and the screen never wait on it.
    state = await asyncio.to_thread(write)
    return SyncReport(state, fetcher.requests, time.perf_counter() - started)
