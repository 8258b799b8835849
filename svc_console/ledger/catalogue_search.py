"""Searching the ledger's catalogue cache as the operator types, and reading one cached item.

Free-text search looks in each row's lower-cased haystack through the FTS5 trigram index
(`ledger/catalogue_schema.py`). Trigrams match substrings, which is what the service's search does
("earch" finds "search"), so the cache never finds less or more than the service would. Words
shorter than three characters cannot use a trigram index; they are matched with LIKE on the rows
the other conditions left.

A search returns one window of light rows (`EndpointRow`, `DatasetRow`) and the number of matches
in all; nothing here loads a whole table. The full record of one item is read when it is selected.
Searches use a read-only connection of their own (`readers.open_reader`), so a search never
waits for the broker.

Money is integer atomic USDC, as everywhere in the ledger. Nothing here knows of Textual: the
catalogue screen shows.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from svc_console.core.catalogue_filters import DatasetFilter, MarketFilter
from svc_console.core.datasets import DatasetListing
from svc_console.core.models import EndpointRecord
from svc_console.core.money import format_usdc, from_atomic, to_atomic
from svc_console.ledger.catalogue_schema import (
    DATASETS,
    DATASETS_FTS,
    ENDPOINTS,
    ENDPOINTS_FTS,
    has_table,
)

# A word this long or longer can use the trigram index.
TRIGRAM = 3


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


# -- searching ----------------------------------------------------------------------------------


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
    if indexed and has_table(conn, fts):
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


# -- one item -----------------------------------------------------------------------------------


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


# -- for the screen's filters and rows -----------------------------------------------------------


def categories(conn: sqlite3.Connection) -> list[str]:
    """The dataset categories present in the cache, for the category filter."""
    return [row[0] for row in conn.execute(f"SELECT DISTINCT category FROM {DATASETS} ORDER BY 1")]


def price_text(floor: int, ceiling: int, dynamic: bool) -> str:
    """A row's price: one amount, or the range a dynamic price may fall in."""
    if dynamic and floor != ceiling:
        return f"{format_usdc(from_atomic(floor))}\N{EN DASH}{format_usdc(from_atomic(ceiling))}"
    return format_usdc(from_atomic(ceiling))


def endpoint_ids(conn: sqlite3.Connection) -> list[str]:
    """Every endpoint id the cache holds (for "did you mean"); none before a first sync."""
    if not has_table(conn, ENDPOINTS):
        return []
    return [row[0] for row in conn.execute(f"SELECT id FROM {ENDPOINTS}")]
