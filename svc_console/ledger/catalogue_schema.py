"""The tables of the ledger's copy of the service's catalogue (market endpoints and dataset
listings), created by migration `_v4`.

What is stored: each record as the service sent it (JSON, untrusted text), beside the columns the
filters of `core/catalogue_filters.py` compare, each with an index, and the lower-cased text that
free-text search looks in, indexed by an FTS5 table with the trigram tokenizer
(`ledger/catalogue_search.py` says how a search uses them). `ledger/catalogue_store.py` fills the
tables.
"""

from __future__ import annotations

import contextlib
import sqlite3

from svc_console.ledger.engine import table_exists

ENDPOINTS = "catalogue_endpoints"
DATASETS = "catalogue_datasets"
ENDPOINTS_FTS = "catalogue_endpoints_fts"
DATASETS_FTS = "catalogue_datasets_fts"

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


def has_table(conn: sqlite3.Connection, name: str) -> bool:
    """On a PostgreSQL ledger, never: the cache stays in the local file (FTS5's trigrams)."""
    return table_exists(conn, name)


def is_ready(conn: sqlite3.Connection) -> bool:
    """Whether this ledger has the cache's tables (a ledger older than `_v4` has not)."""
    return has_table(conn, ENDPOINTS) and has_table(conn, DATASETS)
