"""The ledger's copy of the service's catalogue (market endpoints and dataset listings), so the
console can search it as the operator types.

What is stored: each record as the service sent it (JSON, untrusted text), beside the columns the
filters of `core/catalogue_filters.py` compare, each with an index, and the lower-cased text that
free-text search looks in, indexed by an FTS5 table with the trigram tokenizer. Trigrams match
substrings, which is what the service's search does ("earch" finds "search"), so the cache never
finds less or more than the service would. Words shorter than three characters cannot use a
trigram index; they are matched with `instr` on the rows the other conditions left.

A search returns one window of light rows (`EndpointRow`, `DatasetRow`) and the number of matches
in all; nothing here loads a whole table. The full record of one item is read when it is selected.

`store` replaces the whole catalogue in one transaction, so a reader sees the old catalogue or
the new one, never half of each. Writers and readers use connections of their own (`open_writer`,
`open_reader`) so a search never waits for the broker and a sync never blocks the screen.

Money is integer atomic USDC, as everywhere in the ledger. Nothing here knows of the network or
of Textual: `catalogue_sync.py` fetches, the catalogue screen shows.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

from svc_console.core.catalogue_filters import DatasetFilter, MarketFilter
from svc_console.core.datasets import DatasetListing
from svc_console.core.models import EndpointRecord
from svc_console.core.money import format_usdc, from_atomic, to_atomic

ENDPOINTS = "catalogue_endpoints"
DATASETS = "catalogue_datasets"
ENDPOINTS_FTS = "catalogue_endpoints_fts"
DATASETS_FTS = "catalogue_datasets_fts"
# A word this long or longer can use the trigram index.
TRIGRAM = 3

_TABLES = (
    f"""CREATE TABLE IF NOT EXISTS {ENDPOINTS} (
        rowid INTEGER PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        name TEXT NOT NULL,
        provider TEXT NOT NULL,
        provider_name TEXT NOT NULL,
        origin TEXT NOT NULL,
        domain_type TEXT NOT NULL,
        product_class TEXT NOT NULL,
        chains TEXT NOT NULL,
        protocols TEXT NOT NULL,
        dynamic INTEGER NOT NULL,
        price_floor INTEGER NOT NULL,
        price_ceiling INTEGER NOT NULL,
        verified INTEGER NOT NULL,
        quality_score REAL NOT NULL,
        reliability REAL NOT NULL,
        title TEXT NOT NULL,
        tags TEXT NOT NULL,
        haystack TEXT NOT NULL
    )""",
    # The records as the service sent them, apart: a search never reads past the columns above.
    """CREATE TABLE IF NOT EXISTS catalogue_endpoint_records (
        id TEXT PRIMARY KEY,
        record TEXT NOT NULL
    ) WITHOUT ROWID""",
    # One row per (chain, endpoint): `chain` filters an endpoint that settles on several.
    """CREATE TABLE IF NOT EXISTS catalogue_endpoint_chains (
        chain TEXT NOT NULL,
        endpoint INTEGER NOT NULL,
        PRIMARY KEY (chain, endpoint)
    ) WITHOUT ROWID""",
    f"""CREATE TABLE IF NOT EXISTS {DATASETS} (
        rowid INTEGER PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        title TEXT NOT NULL,
        category TEXT NOT NULL,
        tier TEXT NOT NULL,
        modality TEXT NOT NULL,
        format TEXT NOT NULL,
        price INTEGER NOT NULL,
        row_count INTEGER NOT NULL,
        downloads INTEGER NOT NULL,
        created_day TEXT NOT NULL,
        quality_score REAL NOT NULL,
        haystack TEXT NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS catalogue_dataset_records (
        id TEXT PRIMARY KEY,
        record TEXT NOT NULL
    ) WITHOUT ROWID""",
    # The schema's column names, lower-cased: `required_fields` is a lookup here.
    """CREATE TABLE IF NOT EXISTS catalogue_dataset_columns (
        name TEXT NOT NULL,
        dataset INTEGER NOT NULL,
        PRIMARY KEY (name, dataset)
    ) WITHOUT ROWID""",
    """CREATE TABLE IF NOT EXISTS catalogue_sync (
        kind TEXT PRIMARY KEY,
        synced_at REAL NOT NULL,
        cached INTEGER NOT NULL,
        reported INTEGER NOT NULL
    )""",
)
_INDEXES = (
    ("catalogue_endpoints_rank", ENDPOINTS, "quality_score DESC, id"),
    ("catalogue_endpoints_domain", ENDPOINTS, "domain_type"),
    ("catalogue_endpoints_class", ENDPOINTS, "product_class"),
    ("catalogue_endpoints_price", ENDPOINTS, "price_ceiling"),
    ("catalogue_endpoints_verified", ENDPOINTS, "verified"),
    ("catalogue_datasets_newest", DATASETS, "created_day DESC, id"),
    ("catalogue_datasets_popular", DATASETS, "downloads DESC, id"),
    ("catalogue_datasets_price", DATASETS, "price, id"),
    ("catalogue_datasets_category", DATASETS, "category"),
    ("catalogue_datasets_tier", DATASETS, "tier"),
    ("catalogue_datasets_modality", DATASETS, "modality"),
    ("catalogue_datasets_format", DATASETS, "format"),
)


def create_tables(conn: sqlite3.Connection) -> None:
    """The cache's tables and indexes (migration `_v4`). Safe to run twice. Without FTS5's
    trigram tokenizer (SQLite older than 3.34) the cache still works, by scanning."""
    for statement in _TABLES:
        conn.execute(statement)
    for name, table, columns in _INDEXES:
        conn.execute(f"CREATE INDEX IF NOT EXISTS {name} ON {table}({columns})")
    for fts, table in ((ENDPOINTS_FTS, ENDPOINTS), (DATASETS_FTS, DATASETS)):
        # Without the trigram tokenizer there is no index: searches scan instead.
        with contextlib.suppress(sqlite3.OperationalError):
            conn.execute(
                f"CREATE VIRTUAL TABLE IF NOT EXISTS {fts} USING fts5(haystack,"
                f" content='{table}', content_rowid='rowid',"
                " tokenize='trigram case_sensitive 1')"
            )


def open_reader(path: Path) -> sqlite3.Connection:
    """A read-only connection to the ledger file, for one thread at a time."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False)
    conn.execute("PRAGMA busy_timeout=5000")
    return conn


def open_writer(path: Path) -> sqlite3.Connection:
    """A connection that writes the cache without going through the broker's."""
    conn = sqlite3.connect(path, check_same_thread=False)
    conn.execute("PRAGMA busy_timeout=5000")
    return conn


def _has_table(conn: sqlite3.Connection, name: str) -> bool:
    found = conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?", [name]).fetchone()
    return found is not None


def is_ready(conn: sqlite3.Connection) -> bool:
    """Whether this ledger has the cache's tables (a ledger older than `_v4` has not)."""
    return _has_table(conn, ENDPOINTS) and _has_table(conn, DATASETS)


# -- what a search returns ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class EndpointRow:
    """One market endpoint as a list shows it. Strings are the service's, untrusted."""

    id: str
    name: str
    provider_name: str
    domain_type: str
    product_class: str
    chains: str
    dynamic: bool
    price_floor: int
    price_ceiling: int
    verified: bool
    quality_score: float


@dataclass(frozen=True, slots=True)
class DatasetRow:
    """One dataset listing as a list shows it. Strings are the service's, untrusted."""

    id: str
    title: str
    category: str
    tier: str
    modality: str
    format: str
    price: int
    row_count: int
    downloads: int
    created_day: str
    quality_score: float


Row = TypeVar("Row")


@dataclass(frozen=True)
class Matches(Generic[Row]):
    """One window of the matches, in the service's order, and how many matched in all."""

    rows: list[Row]
    total: int
    offset: int


@dataclass(frozen=True)
class SyncState:
    """When the cache was last filled, and how much of what the service reported it holds."""

    synced_at: float | None
    endpoints: int
    endpoints_reported: int
    datasets: int
    datasets_reported: int

    @property
    def empty(self) -> bool:
        return self.synced_at is None

    @property
    def complete(self) -> bool:
        return self.endpoints >= self.endpoints_reported and self.datasets >= self.datasets_reported


# -- writing ------------------------------------------------------------------------------------


def _endpoint_row(record: EndpointRecord) -> dict[str, Any]:
    pricing = record.pricing
    floor = pricing.amount_usdc if pricing.model == "fixed" else pricing.min_usdc
    return {
        "id": record.id,
        "name": record.name,
        "provider": record.provider,
        "provider_name": record.provider_name,
        "origin": record.origin,
        "domain_type": record.domain_type,
        "product_class": record.product_class,
        "chains": " ".join(record.chains),
        "protocols": " ".join(record.protocols),
        "dynamic": int(pricing.model == "dynamic"),
        "price_floor": to_atomic(floor),  # type: ignore[arg-type]
        "price_ceiling": to_atomic(pricing.ceiling),
        "verified": int(record.verified),
        "quality_score": record.quality_score,
        "reliability": record.reliability,
        # The texts the service's search looks in, folded as it folds them.
        "title": f"{record.name} {record.provider_name}".lower(),
        "tags": " ".join(record.tags).lower(),
        "haystack": " ".join(
            (record.name, record.provider_name, record.description, *record.tags)
        ).lower(),
    }


def _dataset_row(listing: DatasetListing) -> dict[str, Any]:
    return {
        "id": listing.id,
        "title": listing.title,
        "category": listing.category,
        "tier": listing.tier,
        "modality": listing.modality,
        "format": listing.format,
        "price": to_atomic(listing.price_usdc),
        "row_count": listing.row_count,
        "downloads": listing.downloads,
        # The service orders "newest" by the day of creation, then by id.
        "created_day": listing.created_at[:10],
        "quality_score": listing.quality_signals.score,
        "haystack": " ".join((listing.title, listing.description, *listing.tags)).lower(),
    }


def _insert(conn: sqlite3.Connection, table: str, rows: Iterable[dict[str, Any]]) -> None:
    rows = list(rows)
    if not rows:
        return
    columns = list(rows[0])
    placeholders = ", ".join(f":{name}" for name in columns)
    conn.executemany(
        f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({placeholders})",
        rows,
    )


def _unique(records: Iterable[Any]) -> list[Any]:
    """Records once each by id (the last copy wins), in the order first seen."""
    by_id: dict[str, Any] = {}
    for record in records:
        by_id[record.id] = record
    return list(by_id.values())


_CACHE_TABLES = (
    ENDPOINTS,
    "catalogue_endpoint_records",
    "catalogue_endpoint_chains",
    DATASETS,
    "catalogue_dataset_records",
    "catalogue_dataset_columns",
)


def store(
    conn: sqlite3.Connection,
    endpoints: Sequence[EndpointRecord],
    datasets: Sequence[DatasetListing],
    *,
    synced_at: float,
    endpoints_reported: int | None = None,
    datasets_reported: int | None = None,
) -> SyncState:
    """Replace the cached catalogue with these records, in one transaction. `*_reported` is how
    many the service said it has (defaults: as many as given)."""
    endpoints, datasets = _unique(endpoints), _unique(datasets)
    state = SyncState(
        synced_at=synced_at,
        endpoints=len(endpoints),
        endpoints_reported=len(endpoints) if endpoints_reported is None else endpoints_reported,
        datasets=len(datasets),
        datasets_reported=len(datasets) if datasets_reported is None else datasets_reported,
    )
    with conn:
        for table in _CACHE_TABLES:
            conn.execute(f"DELETE FROM {table}")
        _insert(conn, ENDPOINTS, (_endpoint_row(record) for record in endpoints))
        conn.executemany(
            "INSERT INTO catalogue_endpoint_records (id, record) VALUES (?, ?)",
            [(e.id, e.model_dump_json(by_alias=True)) for e in endpoints],
        )
        rowids = dict(conn.execute(f"SELECT id, rowid FROM {ENDPOINTS}").fetchall())
        conn.executemany(
            "INSERT OR IGNORE INTO catalogue_endpoint_chains (chain, endpoint) VALUES (?, ?)",
            [(chain, rowids[e.id]) for e in endpoints for chain in e.chains],
        )
        _insert(conn, DATASETS, (_dataset_row(listing) for listing in datasets))
        conn.executemany(
            "INSERT INTO catalogue_dataset_records (id, record) VALUES (?, ?)",
            [(d.id, d.model_dump_json(by_alias=True)) for d in datasets],
        )
        rowids = dict(conn.execute(f"SELECT id, rowid FROM {DATASETS}").fetchall())
        conn.executemany(
            "INSERT OR IGNORE INTO catalogue_dataset_columns (name, dataset) VALUES (?, ?)",
            [(column.lower(), rowids[d.id]) for d in datasets for column in d.columns],
        )
        for fts in (ENDPOINTS_FTS, DATASETS_FTS):
            if _has_table(conn, fts):
                conn.execute(f"INSERT INTO {fts}({fts}) VALUES ('rebuild')")
        conn.executemany(
            "INSERT OR REPLACE INTO catalogue_sync (kind, synced_at, cached, reported)"
            " VALUES (?, ?, ?, ?)",
            [
                ("endpoints", synced_at, state.endpoints, state.endpoints_reported),
                ("datasets", synced_at, state.datasets, state.datasets_reported),
            ],
        )
    return state


# -- reading ------------------------------------------------------------------------------------


def sync_state(conn: sqlite3.Connection) -> SyncState:
    if not is_ready(conn):
        return SyncState(None, 0, 0, 0, 0)
    rows = {
        kind: (at, cached, reported)
        for kind, at, cached, reported in conn.execute(
            "SELECT kind, synced_at, cached, reported FROM catalogue_sync"
        )
    }
    if not rows:
        return SyncState(None, 0, 0, 0, 0)
    endpoints = rows.get("endpoints", (None, 0, 0))
    datasets = rows.get("datasets", (None, 0, 0))
    synced = [at for at in (endpoints[0], datasets[0]) if at is not None]
    return SyncState(
        synced_at=min(synced) if synced else None,
        endpoints=endpoints[1],
        endpoints_reported=endpoints[2],
        datasets=datasets[1],
        datasets_reported=datasets[2],
    )


@dataclass
class _Where:
    """Conditions joined by AND, with their parameters in order."""

    clauses: list[str]
    params: list[Any]

    def add(self, clause: str, *params: Any) -> None:
        self.clauses.append(clause)
        self.params.extend(params)

    def sql(self) -> str:
        return " WHERE " + " AND ".join(self.clauses) if self.clauses else ""


def _fts_phrase(term: str) -> str:
    """A word as one FTS5 string: quotes doubled, so no word is read as query syntax."""
    return '"' + term.replace('"', '""') + '"'


def _text_match(
    conn: sqlite3.Connection, where: _Where, table: str, fts: str, terms: list[str]
) -> None:
    """Every word must occur in the row's haystack: through the trigram index when it can,
    with `instr` otherwise."""
    indexed = [term for term in dict.fromkeys(terms) if len(term) >= TRIGRAM]
    if indexed and _has_table(conn, fts):
        where.add(
            f"{table}.rowid IN (SELECT rowid FROM {fts} WHERE {fts} MATCH ?)",
            " AND ".join(_fts_phrase(term) for term in indexed),
        )
        scanned = [term for term in dict.fromkeys(terms) if len(term) < TRIGRAM]
    else:
        scanned = list(dict.fromkeys(terms))
    for term in scanned:
        # LIKE is quicker than instr here, and exact: both sides are lower-cased already (LIKE
        # folds ASCII case only) and the term's wildcards are escaped.
        where.add(f"{table}.haystack LIKE ? ESCAPE '\\'", f"%{_like_escaped(term)}%")


def _like_escaped(term: str) -> str:
    return term.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


_ENDPOINT_COLUMNS = (
    "id, name, provider_name, domain_type, product_class, chains, dynamic, price_floor,"
    " price_ceiling, verified, quality_score"
)


def _endpoint_where(conn: sqlite3.Connection, f: MarketFilter) -> _Where:
    where = _Where([], [])
    _text_match(conn, where, ENDPOINTS, ENDPOINTS_FTS, f.terms)
    if f.domain_type:
        where.add("domain_type = ?", f.domain_type)
    if f.product_class:
        where.add("product_class = ?", f.product_class)
    if f.chain:
        where.add(
            f"{ENDPOINTS}.rowid IN"
            " (SELECT endpoint FROM catalogue_endpoint_chains WHERE chain = ?)",
            f.chain,
        )
    if f.verified_only:
        where.add("verified = 1")
    if f.max_price_usdc is not None:
        # A dynamic price counts at its ceiling, as the service counts it.
        where.add("price_ceiling <= ?", to_atomic(f.max_price_usdc))
    return where


def search_endpoints(
    conn: sqlite3.Connection, f: MarketFilter, *, limit: int = 50, offset: int = 0
) -> Matches[EndpointRow]:
    """The endpoints matching `f`, ranked as the service ranks them: each word scores 3 in the
    endpoint's or provider's name, else 2 in its tags, else 1; then by qualityScore, then id."""
    where = _endpoint_where(conn, f)
    score_parts, score_params = [], []
    for term in f.terms:
        score_parts.append(
            "(CASE WHEN instr(title, ?) > 0 THEN 3 WHEN instr(tags, ?) > 0 THEN 2 ELSE 1 END)"
        )
        score_params += [term, term]
    # With no words every score is 0: the order is qualityScore's, read from its index.
    score = f"{' + '.join(score_parts)} DESC, " if score_parts else ""
    sql = (
        f"SELECT {_ENDPOINT_COLUMNS} FROM {ENDPOINTS}{where.sql()}"
        f" ORDER BY {score}quality_score DESC, id LIMIT ? OFFSET ?"
    )
    rows = conn.execute(sql, [*where.params, *score_params, limit, offset]).fetchall()
    return Matches(
        [EndpointRow(*row) for row in rows],
        _total(conn, ENDPOINTS, where, rows, limit, offset),
        offset,
    )


_DATASET_COLUMNS = (
    "id, title, category, tier, modality, format, price, row_count, downloads, created_day,"
    " quality_score"
)
_DATASET_ORDERS = {
    "newest": "created_day DESC, id",
    "popular": "downloads DESC, id",
    "price_asc": "price ASC, id",
    "price_desc": "price DESC, id",
}


def _dataset_where(conn: sqlite3.Connection, f: DatasetFilter) -> _Where:
    where = _Where([], [])
    _text_match(conn, where, DATASETS, DATASETS_FTS, f.terms)
    for column in ("category", "tier", "modality", "format"):
        value = getattr(f, column)
        if value:
            where.add(f"{column} = ?", value)
    if f.max_price_usdc is not None:
        where.add("price <= ?", to_atomic(f.max_price_usdc))
    needed = f.needed_columns
    if needed:
        marks = ", ".join("?" for _ in needed)
        where.add(
            f"{DATASETS}.rowid IN (SELECT dataset FROM catalogue_dataset_columns"
            f" WHERE name IN ({marks}) GROUP BY dataset HAVING count(*) = ?)",
            *needed,
            len(needed),
        )
    return where


def search_datasets(
    conn: sqlite3.Connection, f: DatasetFilter, *, limit: int = 50, offset: int = 0
) -> Matches[DatasetRow]:
    """The datasets matching `f`, in `f.sort_by` order (ties by id), as the service lists them."""
    where = _dataset_where(conn, f)
    sql = (
        f"SELECT {_DATASET_COLUMNS} FROM {DATASETS}{where.sql()}"
        f" ORDER BY {_DATASET_ORDERS[f.sort_by]} LIMIT ? OFFSET ?"
    )
    rows = conn.execute(sql, [*where.params, limit, offset]).fetchall()
    total = _total(conn, DATASETS, where, rows, limit, offset)
    return Matches([DatasetRow(*row) for row in rows], total, offset)


def _total(
    conn: sqlite3.Connection,
    table: str,
    where: _Where,
    rows: list[Any],
    limit: int,
    offset: int,
) -> int:
    """How many match in all; no second query when the window already holds the last match."""
    if len(rows) < limit and (rows or offset == 0):
        return offset + len(rows)
    return conn.execute(f"SELECT count(*) FROM {table}{where.sql()}", where.params).fetchone()[0]


def endpoint_record(conn: sqlite3.Connection, endpoint_id: str) -> EndpointRecord | None:
    """The full record of one cached endpoint."""
    row = conn.execute(
        "SELECT record FROM catalogue_endpoint_records WHERE id = ?", [endpoint_id]
    ).fetchone()
    return EndpointRecord.model_validate_json(row[0]) if row else None


def dataset_listing(conn: sqlite3.Connection, dataset_id: str) -> DatasetListing | None:
    """The full listing of one cached dataset."""
    row = conn.execute(
        "SELECT record FROM catalogue_dataset_records WHERE id = ?", [dataset_id]
    ).fetchone()
    return DatasetListing.model_validate_json(row[0]) if row else None


def categories(conn: sqlite3.Connection) -> list[str]:
    """The dataset categories present in the cache, for the category filter."""
    return [row[0] for row in conn.execute(f"SELECT DISTINCT category FROM {DATASETS} ORDER BY 1")]


def price_text(floor: int, ceiling: int, dynamic: bool) -> str:
    """A row's price: one amount, or the range a dynamic price may fall in."""
    if dynamic and floor != ceiling:
        return f"{format_usdc(from_atomic(floor))}\N{EN DASH}{format_usdc(from_atomic(ceiling))}"
    return format_usdc(from_atomic(ceiling))
