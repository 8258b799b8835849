"""The catalogue cache against the real thing: synced from the sandbox over HTTP into a real ledger
file, then searched with every filter and compared, answer for answer, with what the service's own
routes (`POST /api/search`, `GET /api/datasets`) answer to the same question over HTTP.

One sync per module (a few seconds): the ledger it fills is copied for tests that change it.
"""

from __future__ import annotations

import asyncio
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from svc_console.core.catalogue_filters import (
    DatasetFilter,
    MarketFilter,
    parse_fields,
    parse_price,
)
from svc_console.ledger import Ledger, catalogue_schema, catalogue_search, catalogue_store
from svc_console.ledger.readers import open_reader
from svc_console.ledger.schema import MIGRATIONS
from svc_console.market import errors
from svc_console.market.mcp import McpClient
from svc_console.market.rest import MarketClient
from svc_console.sandbox.server import SandboxServer
from svc_console.services.catalogue_details import MAX_SKILL_CHARS, skill, try_dataset
from svc_console.services.catalogue_sync import SyncProgress, SyncReport, sync_catalogue

SYNCED_AT = 1_795_000_000.0


# For the worker's whole session, not the module's: a worker that runs this module's tests in
# two stretches, others between, would otherwise sync the whole catalogue again (4 to 5 s).
@pytest.fixture(scope="session")
def server() -> Iterator[SandboxServer]:
    served = SandboxServer()
    served.start()
    yield served
    served.stop(wait=False)  # the worker is leaving: no need to wait out uvicorn's shutdown


@pytest.fixture(scope="session")
def synced(
    server: SandboxServer, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, SyncReport, list[SyncProgress]]:
    """A ledger file whose cache was synced from the sandbox over HTTP, once for the worker."""
    path = tmp_path_factory.mktemp("catalogue") / "ledger.db"
    Ledger(path).close()
    seen: list[SyncProgress] = []

    async def sync() -> SyncReport:
        rest = MarketClient(server.base_url, server.state.api_key)
        try:
            return await sync_catalogue(rest, path, now=SYNCED_AT, progress=seen.append)
        finally:
            await rest.aclose()

    return path, asyncio.run(sync()), seen


@pytest.fixture
def reader(synced: tuple[Path, SyncReport, list[SyncProgress]]) -> Iterator[sqlite3.Connection]:
    conn = open_reader(synced[0])
    yield conn
    conn.close()


@pytest.fixture
def ledger_copy(synced: tuple[Path, SyncReport, list[SyncProgress]], tmp_path: Path) -> Path:
    """A copy of the synced ledger, for a test that writes to it."""
    path = tmp_path / "ledger.db"
    shutil.copy(synced[0], path)
    return path


@pytest.fixture
async def rest(server: SandboxServer) -> AsyncIterator[MarketClient]:
    client = MarketClient(server.base_url, server.state.api_key)
    yield client
    await client.aclose()


# -- the sync -------------------------------------------------------------------------------------


async def test_sync_caches_every_endpoint_and_dataset_the_service_lists(
    synced: tuple[Path, SyncReport, list[SyncProgress]],
    reader: sqlite3.Connection,
    rest: MarketClient,
):
    _, report, progress = synced
    endpoints_total = (await rest.search_page(limit=1)).total
    datasets_total = (await rest.datasets(limit=1)).total
    assert endpoints_total > 2_400 and datasets_total > 350  # the sandbox's full catalogue
    state = catalogue_store.sync_state(reader)
    assert state == report.state
    assert (state.endpoints, state.endpoints_reported) == (endpoints_total, endpoints_total)
    assert (state.datasets, state.datasets_reported) == (datasets_total, datasets_total)
    assert state.complete and state.synced_at == SYNCED_AT
    # The cache holds exactly the browse route's endpoint ids, each once.
    listed: list[str] = []
    offset: int | None = 0
    while offset is not None:
        page = await rest.market_catalog(offset=offset, limit=100)
        listed += [i for provider in page.providers for i in provider.endpoints]
        offset = page.next_offset
    cached = [row[0] for row in reader.execute("SELECT id FROM catalogue_endpoints")]
    assert sorted(cached) == sorted(set(listed))
    # Progress was reported stage by stage, ending with the write.
    stages = [p.stage for p in progress]
    assert stages[0] == "endpoints" and stages[-1] == "storing" and "datasets" in stages
    assert progress[-1].fetched == endpoints_total + datasets_total


def test_cached_records_are_the_service_records(reader: sqlite3.Connection):
    from svc_console.sandbox.catalog import catalog

    for endpoint_id in ("ep_websearch_basic", "ep_scrape_page", "ep_fx_rates"):
        assert catalogue_search.endpoint_record(reader, endpoint_id) == catalog().get(endpoint_id)
    assert catalogue_search.endpoint_record(reader, "ep_nope") is None
    listing = catalogue_search.dataset_listing(
        reader, catalogue_search.search_datasets(reader, DatasetFilter(), limit=1).rows[0].id
    )
    assert listing is not None and listing.columns
    assert catalogue_search.dataset_listing(reader, "ds_nope") is None
    categories = catalogue_search.categories(reader)
    assert categories == sorted(set(categories)) and len(categories) > 5


async def test_a_failed_sync_keeps_the_previous_cache(
    server: SandboxServer, ledger_copy: Path, rest: MarketClient, refused_url: str
):
    before = _state(ledger_copy)
    server.state.faults.set("error", routes=["rest"], status=503)
    try:
        with pytest.raises(errors.MarketError):
            await sync_catalogue(rest, ledger_copy, now=SYNCED_AT + 60)
    finally:
        server.state.faults.clear()
    unreachable = MarketClient(refused_url, "sk_live_x")
    try:
        with pytest.raises(errors.ServiceUnreachable):
            await sync_catalogue(unreachable, ledger_copy, now=SYNCED_AT + 60)
    finally:
        await unreachable.aclose()
    assert _state(ledger_copy) == before
    conn = open_reader(ledger_copy)
    try:
        assert catalogue_search.search_endpoints(conn, MarketFilter(query="scraper")).total > 0
    finally:
        conn.close()


def _state(path: Path) -> catalogue_store.SyncState:
    conn = open_reader(path)
    try:
        return catalogue_store.sync_state(conn)
    finally:
        conn.close()


def test_store_replaces_the_whole_catalogue_and_its_index(ledger_copy: Path):
    from svc_console.sandbox.catalog import catalog

    kept = [catalog().get("ep_websearch_basic"), catalog().get("ep_fx_rates")]
    conn = catalogue_store.open_writer(ledger_copy)
    try:
        state = catalogue_store.store(
            conn, [*kept, kept[0]], [], synced_at=SYNCED_AT + 1, endpoints_reported=5
        )
        assert (state.endpoints, state.endpoints_reported, state.complete) == (2, 5, False)
        assert catalogue_search.search_endpoints(conn, MarketFilter()).total == 2
        # The trigram index was rebuilt: a word only the removed records had finds nothing.
        assert catalogue_search.search_endpoints(conn, MarketFilter(query="scraper")).total == 0
        found = catalogue_search.search_endpoints(conn, MarketFilter(query="rates"))
        assert [row.id for row in found.rows] == ["ep_fx_rates"]
        assert catalogue_search.search_datasets(conn, DatasetFilter()).total == 0
        assert catalogue_store.sync_state(conn).synced_at == SYNCED_AT + 1
    finally:
        conn.close()


def test_the_cache_tables_come_with_the_ledger(tmp_path: Path):
    ledger = Ledger(tmp_path / "ledger.db")
    try:
        version = ledger.db.execute("PRAGMA user_version").fetchone()[0]
        assert version == len(MIGRATIONS)
        assert catalogue_schema.is_ready(ledger.db.conn)
        catalogue_schema.create_tables(ledger.db.conn)  # safe to meet twice
        assert catalogue_store.sync_state(ledger.db.conn).empty
        assert catalogue_search.search_endpoints(ledger.db.conn, MarketFilter()).total == 0
    finally:
        ledger.close()
    bare = sqlite3.connect(tmp_path / "older.db")
    try:
        assert not catalogue_schema.is_ready(bare)
        assert catalogue_store.sync_state(bare).empty
    finally:
        bare.close()


# -- the same answers as the service --------------------------------------------------------------

MARKET_QUESTIONS: list[dict[str, Any]] = [
    {},
    {"query": "web search"},
    {"query": "earch"},  # a substring, as the service matches
    {"query": "w"},  # shorter than a trigram
    {"query": "WEATHER Forecast"},
    {"query": "fx", "chain": "tempo"},
    {"query": "search search"},  # a repeated word counts twice in the rank
    {"domain_type": "A7", "verified_only": True},
    {"product_class": "B5", "chain": "base"},
    {"chain": "solana", "max_price_usdc": Decimal("0.05")},
    {"query": "scrap", "max_price_usdc": Decimal("0.05")},
    {"query": "scrap", "max_price_usdc": Decimal("0.10")},
    {"query": "data", "domain_type": "A11", "product_class": "B2", "verified_only": True},
    {"query": 'quote" OR "x'},
    {"query": "NEAR(a b) *"},
    {"query": "zzzz-nothing"},
]


@pytest.mark.parametrize("question", MARKET_QUESTIONS, ids=lambda q: repr(q)[:60])
async def test_market_search_answers_as_the_service(
    question: dict[str, Any], reader: sqlite3.Connection, rest: MarketClient
):
    service = await rest.search_page(limit=50, **question)
    cached = catalogue_search.search_endpoints(reader, MarketFilter(**question), limit=50)
    assert cached.total == service.total
    assert [row.id for row in cached.rows] == [record.id for record in service.results]


DATASET_QUESTIONS: list[dict[str, Any]] = [
    {},
    {"query": "climate"},
    {"query": "es"},
    {"query": "Open data 2024"},
    {"tier": "free", "sort_by": "popular"},
    {"modality": "document", "format": "pdf", "sort_by": "price_desc"},
    {"category": "finance", "sort_by": "price_asc"},
    {"max_price_usdc": Decimal("2.5"), "sort_by": "price_desc"},
    {"required_fields": ("date",)},
    {"required_fields": ("DATE", "country"), "tier": "standard"},
    {"query": "report", "required_fields": ("nope_column",)},
]


@pytest.mark.parametrize("question", DATASET_QUESTIONS, ids=lambda q: repr(q)[:60])
async def test_dataset_search_answers_as_the_service(
    question: dict[str, Any], reader: sqlite3.Connection, rest: MarketClient
):
    asked = dict(question)
    search = asked.pop("query", None)
    if "required_fields" in asked:
        asked["required_fields"] = list(asked["required_fields"])
    service = await rest.datasets(search=search, limit=100, **asked)
    cached = catalogue_search.search_datasets(reader, DatasetFilter(**question), limit=100)
    assert cached.total == service.total
    assert [row.id for row in cached.rows] == [listing.id for listing in service.datasets]


WORDS = ["we", "web", "search", "ar", "data", "x", "forecast", "api", "pay", "é", "'", "q", "%"]
WORDS += ["_", "\\", "e_", "%a", "-"]


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    words=st.lists(st.sampled_from(WORDS), max_size=3),
    domain_type=st.sampled_from([None, "A7", "A11", "A14"]),
    chain=st.sampled_from([None, "base", "tempo"]),
    verified_only=st.booleans(),
    max_price=st.sampled_from([None, "0.005", "0.03", "1"]),
)
def test_any_market_question_answers_as_the_service_does(
    reader: sqlite3.Connection,
    words: list[str],
    domain_type: str | None,
    chain: str | None,
    verified_only: bool,
    max_price: str | None,
):
    """The service's own search function, in process, against the cache, for random questions."""
    from svc_console.sandbox.catalog import catalog
    from svc_console.sandbox.queries import MarketQuery, search_market

    question = {
        "domain_type": domain_type,
        "chain": chain,
        "verified_only": verified_only,
        "max_price_usdc": Decimal(max_price) if max_price else None,
    }
    query = " ".join(words)
    expected, total = search_market(catalog(), MarketQuery(query=query, limit=50, **question))
    cached = catalogue_search.search_endpoints(
        reader, MarketFilter(query=query, **question), limit=50
    )
    assert cached.total == total
    assert [row.id for row in cached.rows] == [record.id for record in expected]


def test_a_dynamic_price_counts_at_its_maximum(reader: sqlite3.Connection):
    # ep_scrape_page costs 0.02 to 0.10: a 0.05 ceiling must not promise it.
    def ids(price: str) -> set[str]:
        f = MarketFilter(query="page scraper", max_price_usdc=Decimal(price))
        return {row.id for row in catalogue_search.search_endpoints(reader, f, limit=50).rows}

    assert "ep_scrape_page" not in ids("0.05")
    assert "ep_scrape_page" not in ids("0.099999")
    assert "ep_scrape_page" in ids("0.10")
    row = next(
        r
        for r in catalogue_search.search_endpoints(
            reader, MarketFilter(query="page scraper"), limit=50
        ).rows
        if r.id == "ep_scrape_page"
    )
    assert catalogue_search.price_text(row.price_floor, row.price_ceiling, row.dynamic) == (
        "0.02\N{EN DASH}0.10"
    )


def test_windows_page_through_the_matches_with_a_steady_total(reader: sqlite3.Connection):
    f = MarketFilter(query="search")
    whole = catalogue_search.search_endpoints(reader, f, limit=1_000)
    assert 50 < whole.total == len(whole.rows)
    pages = [catalogue_search.search_endpoints(reader, f, limit=50, offset=o) for o in (0, 50, 100)]
    assert all(page.total == whole.total for page in pages)
    assert [row.id for page in pages for row in page.rows] == [r.id for r in whole.rows[:150]]
    beyond = catalogue_search.search_endpoints(reader, f, limit=50, offset=whole.total + 10)
    assert beyond.rows == [] and beyond.total == whole.total
    last = catalogue_search.search_endpoints(reader, f, limit=50, offset=whole.total - 3)
    assert len(last.rows) == 3 and last.total == whole.total


def test_searches_use_their_indexes(reader: sqlite3.Connection):
    """Plans, not timings: a word of three letters or more goes through the trigram index, the
    unfiltered list reads the rank index, each filter has an index to start from."""

    def plan(sql: str, params: list[Any]) -> str:
        rows = reader.execute(f"EXPLAIN QUERY PLAN {sql}", params).fetchall()
        return " | ".join(row[-1] for row in rows)

    text = plan(
        "SELECT id FROM catalogue_endpoints WHERE rowid IN (SELECT rowid FROM"
        " catalogue_endpoints_fts WHERE catalogue_endpoints_fts MATCH ?)",
        ['"weather"'],
    )
    assert "VIRTUAL TABLE INDEX" in text
    assert "catalogue_endpoints_rank" in plan(
        "SELECT id FROM catalogue_endpoints ORDER BY quality_score DESC, id LIMIT 50", []
    )
    assert "catalogue_endpoints_domain" in plan(
        "SELECT count(*) FROM catalogue_endpoints WHERE domain_type = ?", ["A7"]
    )
    assert "catalogue_datasets_newest" in plan(
        "SELECT id FROM catalogue_datasets ORDER BY created_day DESC, id LIMIT 50", []
    )
    assert "USING PRIMARY KEY (name=?)" in plan(
        "SELECT dataset FROM catalogue_dataset_columns WHERE name IN (?)", ["date"]
    )
    assert "USING PRIMARY KEY (chain=?)" in plan(
        "SELECT endpoint FROM catalogue_endpoint_chains WHERE chain = ?", ["base"]
    )


# -- filters typed by the operator ----------------------------------------------------------------


def test_filters_parse_what_the_operator_types():
    assert parse_price(" 0.05 USDC ") == Decimal("0.05")
    assert parse_price("") is None
    for bad in ("abc", "-1", "0.0000001"):
        with pytest.raises(ValueError, match="max price"):
            parse_price(bad)
    assert parse_fields("ticker, date  close,,Date") == ("ticker", "date", "close")
    assert DatasetFilter(required_fields=(" Date", "date")).needed_columns == ["date"]
    f = DatasetFilter()
    orders = [f.sort_by]
    for _ in range(4):
        f = f.next_sort()
        orders.append(f.sort_by)
    assert orders == ["newest", "popular", "price_asc", "price_desc", "newest"]
    assert MarketFilter(query="x").with_query("y" * 600).query == "y" * 500
    assert not MarketFilter(query="a").has_filters and MarketFilter(chain="base").has_filters
    with pytest.raises(ValueError):
        DatasetFilter(sort_by="random")


# -- the selected item's details, over HTTP -------------------------------------------------------


async def test_skill_md_and_trial_come_from_the_service(
    server: SandboxServer, rest: MarketClient, reader: sqlite3.Connection
):
    text = await skill(rest, "ep_websearch_basic")
    assert text.startswith("# SANDBOX LISTING: Web Search") and len(text) < MAX_SKILL_CHARS
    with pytest.raises(errors.EndpointNotFound):
        await skill(rest, "ep_does_not_exist")
    dataset = catalogue_search.search_datasets(reader, DatasetFilter(), limit=1).rows[0]
    listing = catalogue_search.dataset_listing(reader, dataset.id)
    assert listing is not None
    have = listing.columns[0]
    async with McpClient(f"{server.base_url}/api/mcp", credential=server.state.api_key) as mcp:
        trial = await try_dataset(mcp, dataset.id, [have.upper(), "no_such_column"])
        plain = await try_dataset(mcp, dataset.id)
    assert trial.dataset_id == dataset.id and trial.preview.rows
    assert trial.coverage.present == [have.upper()]
    assert trial.coverage.missing == ["no_such_column"]
    assert trial.coverage.coverage == 0.5 and not trial.coverage.complete
    assert trial.datacard.dataset_id == dataset.id
    assert plain.coverage.required_fields == [] and plain.coverage.complete


def test_the_cache_and_the_sync_do_not_import_textual():
    code = (
        "import sys, svc_console.ledger.catalogue_search, svc_console.ledger.catalogue_store,"
        " svc_console.services.catalogue_sync,"
        " svc_console.services.catalogue_details, svc_console.core.catalogue_filters;"
        " print('textual' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
