"""Catalogue search: one keystroke's search over the full catalogue cache.

An operator types a query into the catalogue screen; every keystroke searches again with the text
typed so far. Each sample is one such search: the prefixes of a few typed queries, from the first
letter to the last, with no filter and with a filter set (market: domain type, verified only,
chain with a max price; datasets: tier, required fields with an order). The first keystrokes (one
and two letters) are the hardest: too short for the trigram index, they scan.

What is measured:
- the console's catalogue cache (`svc_console.ledger.catalogue_search`: SQLite, FTS5 trigram
  index, in a ledger file made by the console's own migrations) holding the sandbox's whole
  catalogue, endpoints and datasets, stored with the cache's own `store`: one window of 50
  matches and the total, as the screen asks for them;
- for comparison, the sandbox's search path over the same endpoints
  (`svc_console.sandbox.queries.search_market`: the argument model, the scan and the ranking,
  what `POST /api/search` runs), in the same run.
The target (15 ms) applies to each. No baseline: the issue names none.

    python tests/bench/bench_catalogue.py [--runs N] [--json FILE]
"""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import data
import harness
from harness import BenchResult, Figures, Target

from svc_console.core.models import EndpointRecord
from svc_console.ledger.readers import open_reader
from svc_console.sandbox.catalog import catalog

TARGET = Target({"median": 15.0})
WINDOW = 50  # the screen's page of matches
TYPED = ("weather forecast", "stock prices", "translate text", "image generation", "web scraping")
FILTERS: tuple[dict[str, Any], ...] = (
    {},
    {"domain_type": "A11"},
    {"verified_only": True},
    {"chain": "base", "max_price_usdc": "0.05"},
)
TYPED_DATASETS = ("climate", "daily fx rates", "court opinions", "public health")
DATASET_FILTERS: tuple[dict[str, Any], ...] = (
    {},
    {"tier": "free"},
    {"required_fields": ("date",), "sort_by": "price_desc"},
)

Stroke = tuple[str, dict[str, Any]]


def keystrokes(typed: tuple[str, ...], filters: tuple[dict[str, Any], ...]) -> list[Stroke]:
    """Every search the typed queries cause, one per keystroke, under each filter."""
    return [
        (text[:n], extra) for extra in filters for text in typed for n in range(1, len(text) + 1)
    ]


def _timed(search: Callable[[str, dict[str, Any]], object], strokes: list[Stroke], runs: int):
    for query, extra in strokes[:10]:
        search(query, extra)  # warms caches (compiled statements, SQLite pages)
    samples = []
    for _ in range(runs):
        for query, extra in strokes:
            start = time.perf_counter_ns()
            search(query, extra)
            samples.append((time.perf_counter_ns() - start) / 1e6)
    return samples


def _market_filter(query: str, extra: dict[str, Any]) -> Any:
    from decimal import Decimal

    from svc_console.core.catalogue_filters import MarketFilter

    price = extra.get("max_price_usdc")
    return MarketFilter(
        query=query,
        **{**extra, "max_price_usdc": Decimal(price) if price is not None else None},
    )


def measure_search_market(runs: int) -> list[float]:
    from decimal import Decimal

    from svc_console.sandbox.queries import MarketQuery, search_market

    listing = catalog()

    def search(query: str, extra: dict[str, Any]) -> None:
        price = extra.get("max_price_usdc")
        arguments = {**extra, "max_price_usdc": Decimal(price) if price is not None else None}
        search_market(listing, MarketQuery(query=query, limit=WINDOW, **arguments))

    return _timed(search, keystrokes(TYPED, FILTERS), runs)


def _dataset_listings() -> list[Any]:
    from svc_console.core.datasets import DatasetListing
    from svc_console.sandbox.datasets import dataset_catalog

    datasets = dataset_catalog()
    return [DatasetListing.model_validate(datasets.listing(d.id)) for d in datasets.datasets]


def measure_cache(runs: int) -> dict[str, list[float]] | str:
    """Samples of the cache's searches (endpoints, datasets), or why they could not be taken."""
    try:
        from svc_console.core.catalogue_filters import DatasetFilter
        from svc_console.ledger import Ledger, catalogue_search, catalogue_store
    except ImportError as exc:
        return f"no console catalogue cache to measure ({exc.name} is missing)"
    records = [EndpointRecord.model_validate(r) for r in json.loads(data.catalogue().read_text())]
    folder = Path(tempfile.mkdtemp(prefix="svc-cat-"))
    try:
        path = folder / "ledger-sandbox.db"
        Ledger(path).close()  # the schema, with the cache's tables, as the console makes it
        writer = catalogue_store.open_writer(path)
        try:
            catalogue_store.store(writer, records, _dataset_listings(), synced_at=time.time())
        finally:
            writer.close()
        reader = open_reader(path)
        try:

            def endpoints(query: str, extra: dict[str, Any]) -> None:
                f = _market_filter(query, extra)
                catalogue_search.search_endpoints(reader, f, limit=WINDOW)

            def datasets(query: str, extra: dict[str, Any]) -> None:
                f = DatasetFilter(query=query, **extra)
                catalogue_search.search_datasets(reader, f, limit=WINDOW)

            return {
                "endpoints": _timed(endpoints, keystrokes(TYPED, FILTERS), runs),
                "datasets": _timed(datasets, keystrokes(TYPED_DATASETS, DATASET_FILTERS), runs),
            }
        finally:
            reader.close()
    except Exception as exc:  # a module still being built: say so rather than fail the run
        return f"the console's catalogue cache could not be measured: {type(exc).__name__}: {exc}"
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _short_share(samples: list[float], strokes: list[Stroke]) -> float:
    """The median of the one- and two-letter keystrokes (the ones no trigram index serves)."""
    import statistics

    per_run = len(strokes)
    short = [s for i, s in enumerate(samples) if len(strokes[i % per_run][0].strip()) < 3]
    return statistics.median(short) if short else 0.0


def run(runs: int) -> list[BenchResult]:
    size = len(catalog().endpoints)
    market_strokes = keystrokes(TYPED, FILTERS)
    dataset_strokes = keystrokes(TYPED_DATASETS, DATASET_FILTERS)
    results = []
    cache = measure_cache(runs)
    if isinstance(cache, str):
        print(f"note: {cache}")
    else:
        short = _short_share(cache["endpoints"], market_strokes)
        results.append(
            BenchResult(
                "catalogue search: console cache, one keystroke (APIs)",
                "ms",
                Figures.of(cache["endpoints"]),
                TARGET,
                context={
                    "endpoints": size,
                    "keystrokes_per_run": len(market_strokes),
                    "window": WINDOW,
                    "median_one_or_two_letters_ms": round(short, 3),
                },
                note=(
                    f"ledger/catalogue_search.search_endpoints, FTS5 trigram, {size:,} endpoints;"
                    f" one- and two-letter keystrokes (scans) median {harness.number(short)} ms"
                ),
            )
        )
        results.append(
            BenchResult(
                "catalogue search: console cache, one keystroke (datasets)",
                "ms",
                Figures.of(cache["datasets"]),
                TARGET,
                context={"keystrokes_per_run": len(dataset_strokes), "window": WINDOW},
                note="ledger/catalogue_search.search_datasets, FTS5 trigram, every dataset",
            )
        )
    results.append(
        BenchResult(
            "catalogue search: sandbox search_market, one keystroke",
            "ms",
            Figures.of(measure_search_market(runs)),
            TARGET,
            context={"endpoints": size, "keystrokes_per_run": len(market_strokes)},
            note=f"sandbox/queries.search_market (what POST /api/search runs), {size:,} endpoints",
        )
    )
    return results


if __name__ == "__main__":
    harness.main(run, default_runs=3)
