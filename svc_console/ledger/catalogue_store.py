"""Filling the ledger's catalogue cache, and the record of when it was last filled.

`store` replaces the whole catalogue in one transaction, so a reader sees the old catalogue or
the new one, never half of each. The writer uses a connection of its own (`open_writer`) so a
sync never goes through the broker's connection nor blocks the screen's searches.

Money is integer atomic USDC, as everywhere in the ledger. Nothing here knows of the network:
`services/catalogue_sync.py` fetches.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from svc_console.core.datasets import DatasetListing
from svc_console.core.models import EndpointRecord
from svc_console.core.money import to_atomic
from svc_console.ledger.catalogue_schema import (
    DATASETS,
    DATASETS_FTS,
    ENDPOINTS,
    ENDPOINTS_FTS,
    create_tables,
    has_table,
    is_ready,
)


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


def open_writer(path: Path) -> sqlite3.Connection:
    """A connection that writes the cache without going through the broker's. The file is the
    ledger's (migration `_v4` made the tables), or beside a PostgreSQL ledger the local file that
    holds the cache alone (FTS5's trigrams are SQLite's): made here, owner-only, the first time."""
    fresh = not path.exists()
    if fresh:
        os.close(os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600))
    conn = sqlite3.connect(path, check_same_thread=False)
    try:
        conn.execute("PRAGMA busy_timeout=5000")
        if fresh:
            with conn:
                create_tables(conn)
    except BaseException:
        conn.close()
        raise
    return conn


def ensure_file(path: Path) -> None:
    """The cache's file made, empty, where none is yet: beside a PostgreSQL ledger nothing makes
    it before a first sync, and a screen that reads the cache must open it first."""
    if path.exists():
        return
    with contextlib.suppress(FileExistsError):  # made meanwhile by a sync
        open_writer(path).close()


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
            if has_table(conn, fts):
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


def sync_state(conn: sqlite3.Connection) -> SyncState:
    """What the last `store` recorded (empty before the first, or on a ledger older than `_v4`).
    Any connection will do, the screen's read-only one too."""
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
