"""Catalogue search: one keystroke's search over the full catalogue.

An operator types a query into the catalogue screen; every keystroke searches again with the text
typed so far. Each sample is one such search: the prefixes of a few typed queries, from the first
letter to the last, plus the same with a filter set (domain type, verified only).

What is measured, in this order of preference:
- the console's own catalogue cache (`svc_console.ledger.catalogue_cache.search_endpoints`, an
  SQLite FTS5 trigram index in the ledger file) holding the sandbox's whole catalogue, when that
  module is present;
- the sandbox's search path (`svc_console.sandbox.queries.search_market`: the argument model, then
  the scan and ranking) over the whole catalogue, which is what `POST /api/search` runs.
Both are reported; the target applies to each. No baseline: the issue names none.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from pathlib import Path

import data
import harness
from harness import BenchResult, Figures, Target

from svc_console.core.models import EndpointRecord
from svc_console.sandbox.catalog import catalog

TARGET = Target({"median": 15.0})
TYPED = ("weather forecast", "stock prices", "translate text", "image generation", "web scraping")
FILTERS = ({}, {"domain_type": "A11"}, {"verified_only": True})


def keystrokes() -> list[tuple[str, dict]]:
    """Every search a few typed queries cause, one per keystroke, under each filter."""
    return [
        (text[:n], extra) for extra in FILTERS for text in TYPED for n in range(1, len(text) + 1)
    ]


def _timed(search, strokes: list[tuple[str, dict]], runs: int) -> list[float]:
    for query, extra in strokes[:10]:
        search(query, extra)  # warms caches (compiled regexes, SQLite pages)
    samples = []
    for _ in range(runs):
        for query, extra in strokes:
            start = time.perf_counter_ns()
            search(query, extra)
            samples.append((time.perf_counter_ns() - start) / 1e6)
    return samples


def measure_search_market(runs: int) -> list[float]:
    from svc_console.sandbox.queries import MarketQuery, search_market

    listing = catalog()

    def search(query: str, extra: dict) -> None:
        search_market(listing, MarketQuery(query=query, limit=50, **extra))

    return _timed(search, keystrokes(), runs)


def measure_cache(runs: int) -> list[float] | str:
    """Samples of the console's cache search, or why it could not be measured."""
    try:
        from svc_console.core.catalogue_filters import MarketFilter
        from svc_console.ledger import Ledger, catalogue_cache
    except ImportError as exc:
        return f"no console catalogue cache to measure ({exc.name} is missing)"
    records = [EndpointRecord.model_validate(r) for r in json.loads(data.catalogue().read_text())]
    folder = Path(tempfile.mkdtemp(prefix="svc-cat-"))
    try:
        path = folder / "ledger-sandbox.db"
        Ledger(path).close()  # the schema, with the cache's tables, as the console makes it
        writer = catalogue_cache.open_writer(path)
        try:
            catalogue_cache.store(
                writer,
                records,
                [],
                synced_at=time.time(),
                endpoints_reported=len(records),
                datasets_reported=0,
            )
        finally:
            writer.close()
        reader = catalogue_cache.open_reader(path)
        try:

            def search(query: str, extra: dict) -> None:
                catalogue_cache.search_endpoints(
                    reader, MarketFilter(query=query, **extra), limit=50
                )

            return _timed(search, keystrokes(), runs)
        finally:
            reader.close()
    except Exception as exc:  # a module still being built: say so rather than fail the run
        return f"the console's catalogue cache could not be measured: {type(exc).__name__}: {exc}"
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def run(runs: int) -> list[BenchResult]:
    size = len(catalog().endpoints)
    strokes = len(keystrokes())
    results = []
    cache = measure_cache(runs)
    if isinstance(cache, str):
        print(f"note: {cache}")
    else:
        results.append(
            BenchResult(
                "catalogue search: console cache, one keystroke",
                "ms",
                Figures.of(cache),
                TARGET,
                context={"endpoints": size, "keystrokes_per_run": strokes},
                note=f"ledger/catalogue_cache.search_endpoints, FTS5 trigram, {size:,} endpoints",
            )
        )
    results.append(
        BenchResult(
            "catalogue search: sandbox search_market, one keystroke",
            "ms",
            Figures.of(measure_search_market(runs)),
            TARGET,
            context={"endpoints": size, "keystrokes_per_run": strokes},
            note=f"sandbox/queries.search_market (what POST /api/search runs), {size:,} endpoints",
        )
    )
    return results


if __name__ == "__main__":
    harness.main(run, default_runs=3)
