"""The sandbox's seeded dataset catalogue: 364 published datasets and two publisher drafts.

Deterministic like the market catalogue (a fixed seed, built once per process in a few
milliseconds). Every tier, modality, format and category is present; four well-known datasets,
one per tier, are fixed for the tests and the demo (`ds_fx_daily_rates` free, `ds_news_headlines_
2024` standard at 0.25 USDC, `ds_court_opinions` premium at 10 USDC, `ds_global_vessel_positions`
enterprise at 250 USDC), as are the drafts (`ds_draft_city_budgets`, whose analysis succeeds, and
`ds_draft_unlabelled_upload`, whose analysis fails). Drafts are never listed: see
`sandbox.publishing` for how one becomes published. Rows are made up (`sandbox.dataset_values`).
"""

from __future__ import annotations

import hashlib
import random
import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace
from datetime import date, timedelta
from decimal import Decimal
from functools import lru_cache
from typing import Any

from svc_console.core.datasets import (
    FORMATS,
    MODALITIES,
    TIERS,
    CardPricing,
    CardStatistics,
    CoverageReport,
    Datacard,
    DatasetContent,
    DatasetListing,
    Preview,
    Provenance,
    QualitySignals,
    SchemaColumn,
    TrialResult,
)
from svc_console.sandbox import dataset_values
from svc_console.sandbox.dataset_values import AS_OF
from svc_console.sandbox.queries import DatasetQuery
from svc_console.sandbox.seed import datasets as words
from svc_console.sandbox.seed.datasets import (
    DRAFT_ID,
    ENTERPRISE_ID,
    FAILING_DRAFT_ID,
    FREE_ID,
    PREMIUM_ID,
    STANDARD_ID,
)

SEED = 20250402
GENERATED_DATASETS = 360
# A paid dataset settles over x402 on Base by default (CAIP-2).
PAYMENT_NETWORK = "eip155:8453"

_BYTES_PER_CELL = {"csv": 11, "tsv": 11, "json": 26, "jsonl": 24, "parquet": 4}
_FRESHNESS_DAYS = {"daily": 2, "weekly": 7, "monthly": 31, "quarterly": 92}
_CATEGORY = {c.slug: c for c in words.CATEGORIES}


@dataclass(frozen=True)
class Dataset:
    """One listing with everything the catalogue derives its answers from."""

    id: str
    title: str
    description: str
    tags: tuple[str, ...]
    category: str
    tier: str
    modality: str
    format: str
    price_usdc: Decimal
    columns: tuple[SchemaColumn, ...]
    row_count: int
    size_bytes: int
    created_at: date
    updated_at: date
    downloads: int
    publisher: str
    license: str
    quality: QualitySignals
    sources: tuple[str, ...]
    collection: str
    draft: bool = False
    analysis_error: str | None = None

    @property
    def column_names(self) -> list[str]:
        return [c.name for c in self.columns]

    @property
    def paid(self) -> bool:
        return self.price_usdc > 0


def _column(spec: str) -> SchemaColumn:
    name, kind, description = spec.split(":", 2)
    # Identifiers and the main text are always present; optional-looking fields may be empty.
    nullable = kind not in {"id", "text"} and name not in {"date", "timestamp", "title"}
    return SchemaColumn(name=name, type=kind, description=description, nullable=nullable)


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")[:56]


def _quality(rng: random.Random, age_days: int, frequency: str, verified: bool) -> QualitySignals:
    completeness = rng.uniform(0.82, 1.0)
    accuracy = rng.uniform(0.86, 1.0)
    duplicates = rng.uniform(0.0, 0.04)
    freshness = min(age_days, rng.randrange(_FRESHNESS_DAYS.get(frequency, age_days) + 1))
    stale = min(freshness / 365, 1.0)
    score = 0.4 * completeness + 0.4 * accuracy + 0.1 * (1 - duplicates * 10) + 0.1 * (1 - stale)
    return QualitySignals(
        score=round(score, 2),
        completeness=round(completeness, 3),
        schema_accuracy=round(accuracy, 3),
        duplicate_rate=round(duplicates, 3),
        freshness_days=freshness,
        update_frequency=frequency,
        verified_publisher=verified,
    )


def _make(
    rng: random.Random,
    *,
    dataset_id: str,
    title: str,
    category: str,
    subject: str,
    scope: str,
    tier: str,
    modality: str,
    fmt: str,
    price: Decimal | None = None,
    columns: Sequence[str] | None = None,
    frequency: str | None = None,
) -> Dataset:
    kind = _CATEGORY[category]
    if columns is None:
        if modality == "document":
            columns = (*words.DOCUMENT_COLUMNS, *kind.document_columns)
        else:
            table = list(rng.choice(kind.tables))
            # Some publishers ship a narrower extract: drop up to two trailing columns.
            columns = table[: len(table) - rng.choice((0, 0, 1, 2))]
    schema = tuple(_column(spec) for spec in columns)
    if modality == "document":
        rows = int(10 ** rng.uniform(2, 5.3))
        size = rows * rng.randrange(2_000, 40_000) * (3 if fmt == "pdf" else 1)
    else:
        rows = int(10 ** rng.uniform(3, 7.5))
        size = rows * len(schema) * _BYTES_PER_CELL[fmt]
    age = rng.randrange(30, 1200)
    frequency = frequency or rng.choice(words.UPDATE_FREQUENCIES)
    publisher_index = rng.randrange(len(words.PUBLISHERS))
    quality = _quality(rng, age, frequency, verified=publisher_index < 7)
    created = AS_OF - timedelta(days=age)
    if price is None:
        price = rng.choice(words.TIER_PRICES[tier])
    if tier == "free":
        license_ = rng.choice(words.LICENSES[:3])
    elif tier == "enterprise":
        license_ = "commercial"
    else:
        license_ = rng.choice(words.LICENSES)
    source = rng.choice(kind.sources)
    collection = rng.choice(words.COLLECTION).format(source=source)
    noun = "documents" if modality == "document" else "rows"
    description = (
        f"{subject} ({kind.label.lower()}), {scope.lower()} coverage: about {rows:,} {noun}"
        f" in {fmt.upper()}. {collection} Updated {frequency}."
    )
    tags = dict.fromkeys((*kind.tags, *_slug(subject).split("_"), modality, fmt))
    return Dataset(
        id=dataset_id,
        title=title,
        description=description,
        tags=tuple(tags),
        category=category,
        tier=tier,
        modality=modality,
        format=fmt,
        price_usdc=price,
        columns=schema,
        row_count=rows,
        size_bytes=size,
        created_at=created,
        updated_at=AS_OF - timedelta(days=quality.freshness_days),
        downloads=int(10 ** rng.uniform(0.5, 5.5 if tier == "free" else 4.5)),
        publisher=words.PUBLISHERS[publisher_index],
        license=license_,
        quality=quality,
        sources=(source, *[s for s in kind.sources if s != source][:1]),
        collection=collection,
    )


def _generated(rng: random.Random, taken_ids: set[str]) -> list[Dataset]:
    pairs = [("structured", f) for f in words.STRUCTURED_FORMATS]
    pairs += [("document", f) for f in words.DOCUMENT_FORMATS]
    tiers, weights = list(words.TIER_WEIGHTS), list(words.TIER_WEIGHTS.values())
    result = []
    for index in range(GENERATED_DATASETS):
        category = words.CATEGORIES[index % len(words.CATEGORIES)]
        # The first rounds walk every pair and tier, so coverage never depends on the draws.
        if index < 2 * len(pairs):
            modality, fmt = pairs[index % len(pairs)]
        else:
            modality = "document" if rng.random() < 0.3 else "structured"
            fmt = rng.choice(
                words.DOCUMENT_FORMATS if modality == "document" else words.STRUCTURED_FORMATS
            )
        tier = TIERS[index] if index < len(TIERS) else rng.choices(tiers, weights)[0]
        subjects = category.documents if modality == "document" else category.subjects
        while True:
            subject, scope = rng.choice(subjects), rng.choice(words.SCOPES)
            title = f"{scope} {subject}{rng.choice(words.SPANS)}"
            if _slug(title) not in taken_ids:
                break
        taken_ids.add(_slug(title))
        result.append(
            _make(
                rng,
                dataset_id=f"ds_{_slug(title)}",
                title=title,
                category=category.slug,
                subject=subject,
                scope=scope,
                tier=tier,
                modality=modality,
                fmt=fmt,
            )
        )
    return result


_ORDERS = {
    "newest": lambda d: (-d.created_at.toordinal(), d.id),
    "popular": lambda d: (-d.downloads, d.id),
    "price_asc": lambda d: (d.price_usdc, d.id),
    "price_desc": lambda d: (-d.price_usdc, d.id),
}


class DatasetCatalog:
    """The published datasets (what list/search see) and the drafts (only publishing sees)."""

    def __init__(self, datasets: Sequence[Dataset], drafts: Sequence[Dataset] = ()):
        self.datasets = tuple(datasets)
        self._by_id = {d.id: d for d in self.datasets}
        self._drafts = {d.id: d for d in drafts}
        self._haystacks = {
            d.id: " ".join((d.title, d.description, *d.tags)).lower()
            for d in (*self.datasets, *drafts)
        }
        self._ordered = {name: sorted(self.datasets, key=key) for name, key in _ORDERS.items()}
        self._listings: dict[str, dict[str, Any]] = {}

    @property
    def categories(self) -> list[str]:
        return sorted({d.category for d in self.datasets})

    def get(self, dataset_id: str) -> Dataset | None:
        """A published dataset, or None (drafts included)."""
        return self._by_id.get(dataset_id)

    def find(self, dataset_id: str) -> Dataset | None:
        """A published dataset or a draft."""
        return self._by_id.get(dataset_id) or self._drafts.get(dataset_id)

    @property
    def drafts(self) -> tuple[Dataset, ...]:
        return tuple(self._drafts.values())

    def query(self, q: DatasetQuery, *, also: Collection[str] = ()) -> tuple[list[dict], int]:
        """JSON-ready listings matching every filter, in `q.sort_by` order (ties by id), at most
        `q.limit`, and how many matched in all. `also` names drafts published in this session."""
        pool: Sequence[Dataset] = self._ordered[q.sort_by]
        extra = [self._drafts[i] for i in also if i in self._drafts]
        if extra:
            pool = sorted([*pool, *extra], key=_ORDERS[q.sort_by])
        terms = (q.query or "").lower().split()
        needed = {f.strip().lower() for f in q.required_fields or ()}
        matches = [d for d in pool if self._matches(d, q, terms, needed)]
        return [self.listing(d.id) for d in matches[: q.limit]], len(matches)

    def _matches(self, d: Dataset, q: DatasetQuery, terms: list[str], needed: set[str]) -> bool:
        if q.category is not None and d.category != q.category:
            return False
        if q.tier is not None and d.tier != q.tier:
            return False
        if q.modality is not None and d.modality != q.modality:
            return False
        if q.format is not None and d.format != q.format:
            return False
        if q.max_price_usdc is not None and d.price_usdc > q.max_price_usdc:
            return False
        if needed and not needed <= {c.lower() for c in d.column_names}:
            return False
        haystack = self._haystacks[d.id]
        return all(term in haystack for term in terms)

    def _dataset(self, dataset_id: str) -> Dataset:
        found = self.find(dataset_id)
        if found is None:
            raise KeyError(dataset_id)
        return found

    def listing(self, dataset_id: str) -> dict[str, Any]:
        """The listing as JSON (raises KeyError for an unknown id)."""
        cached = self._listings.get(dataset_id)
        if cached is None:
            d = self._dataset(dataset_id)
            cached = DatasetListing(
                id=d.id,
                title=d.title,
                description=d.description,
                tags=list(d.tags),
                category=d.category,
                tier=d.tier,
                modality=d.modality,
                format=d.format,
                price_usdc=d.price_usdc,
                columns=d.column_names,
                row_count=d.row_count,
                size_bytes=d.size_bytes,
                created_at=d.created_at.isoformat(),
                updated_at=d.updated_at.isoformat(),
                downloads=d.downloads,
                publisher=d.publisher,
                license=d.license,
                quality_signals=d.quality,
            ).model_dump(mode="json")
            self._listings[dataset_id] = cached
        return dict(cached)

    def card(self, dataset_id: str) -> dict[str, Any]:
        """The full datacard as JSON (`card.json`), marked as the sandbox's."""
        d = self._dataset(dataset_id)
        limitations = ["Sandbox data: every value is made up; do not rely on it."]
        if d.quality.duplicate_rate > 0.02:
            limitations.append(f"About {d.quality.duplicate_rate:.0%} of rows are near-duplicates.")
        if d.quality.freshness_days > 60:
            limitations.append(f"Last updated {d.quality.freshness_days} days ago.")
        if d.license == "CC-BY-NC-4.0":
            limitations.append("Non-commercial use only.")
        if d.modality == "document":
            uses = ["retrieval-augmented generation", "search indexes", "summarisation"]
        else:
            uses = ["analytics and dashboards", "feature engineering", "agent lookups"]
        card = Datacard(
            dataset_id=d.id,
            title=d.title,
            version="1.0.0",
            publisher=d.publisher,
            license=d.license,
            summary=d.description,
            intended_use=uses,
            limitations=limitations,
            provenance=Provenance(
                sources=list(d.sources),
                collection=d.collection,
                update_frequency=d.quality.update_frequency,
            ),
            columns=list(d.columns),
            statistics=CardStatistics(
                row_count=d.row_count,
                column_count=len(d.columns),
                size_bytes=d.size_bytes,
                null_rate=round(1 - d.quality.completeness, 3),
            ),
            quality=d.quality,
            pricing=CardPricing(
                tier=d.tier,
                price_usdc=d.price_usdc,
                protocols=["x402"] if d.paid else [],
                networks=[PAYMENT_NETWORK] if d.paid else [],
            ),
            analyzed_at=d.updated_at.isoformat(),
        )
        return {**card.model_dump(mode="json"), "sandbox": True}

    def coverage(self, dataset_id: str, required_fields: Sequence[str] | None) -> dict[str, Any]:
        d = self._dataset(dataset_id)
        columns = {c.lower(): c for c in d.column_names}
        asked = list(dict.fromkeys(f.strip() for f in required_fields or ()))
        present = [f for f in asked if f.lower() in columns]
        missing = [f for f in asked if f.lower() not in columns]
        report = CoverageReport(
            required_fields=asked,
            present=present,
            missing=missing,
            coverage=round(len(present) / len(asked), 4) if asked else 1.0,
            complete=not missing,
            columns=d.column_names,
        )
        return report.model_dump(mode="json")

    def trial(self, dataset_id: str, required_fields: Sequence[str] | None) -> dict[str, Any]:
        """`try_dataset`: preview rows, the coverage of `required_fields`, the full datacard."""
        d = self._dataset(dataset_id)
        sample = dataset_values.rows(d.id, d.columns, d.category, dataset_values.PREVIEW_ROWS)
        card = self.card(dataset_id)
        result = TrialResult(
            dataset_id=d.id,
            preview=Preview(
                columns=d.column_names, rows=[dataset_values.shorten(r) for r in sample]
            ),
            coverage=self.coverage(dataset_id, required_fields),
            datacard=card,
        )
        # The datacard keeps its "sandbox" mark, as served at card.json.
        return {**result.model_dump(mode="json"), "datacard": card}

    def content(self, dataset_id: str) -> dict[str, Any]:
        """What access delivers (free at once, paid tiers once paid): a sample of the data in the
        dataset's format, its digest and what it cost."""
        d = self._dataset(dataset_id)
        count = (
            dataset_values.DELIVERED_DOCUMENTS
            if d.modality == "document"
            else dataset_values.DELIVERED_ROWS
        )
        records = dataset_values.rows(d.id, d.columns, d.category, min(count, d.row_count))
        text = dataset_values.body(d.format, records, d.column_names)
        delivered_as, media_type = dataset_values.DELIVERED_AS[d.format]
        content = DatasetContent(
            dataset_id=d.id,
            title=d.title,
            format=d.format,
            delivered_as=delivered_as,
            media_type=media_type,
            body=text,
            sha256=hashlib.sha256(text.encode()).hexdigest(),
            rows_delivered=len(records),
            row_count=d.row_count,
            charged_usdc=d.price_usdc,
        )
        return content.model_dump(mode="json")


def build_datasets(seed: int = SEED) -> DatasetCatalog:
    """A fresh dataset catalogue from `seed`; the same seed always gives the same catalogue."""
    pinned = [_make(random.Random(spec["dataset_id"]), **spec) for spec in words.PINNED]
    taken = {d.id.removeprefix("ds_") for d in pinned}
    generated = _generated(random.Random(seed), taken)
    drafts = []
    for spec in words.DRAFTS:
        made = _make(random.Random(spec["dataset_id"]), **spec)
        failure = words.ANALYSIS_FAILURE if not made.columns else None
        drafts.append(replace(made, draft=True, analysis_error=failure))
    return DatasetCatalog([*pinned, *generated], drafts)


@lru_cache(maxsize=1)
def dataset_catalog() -> DatasetCatalog:
    """The process-wide dataset catalogue (built on first use)."""
    return build_datasets()


__all__ = [
    "DRAFT_ID",
    "ENTERPRISE_ID",
    "FAILING_DRAFT_ID",
    "FORMATS",
    "FREE_ID",
    "MODALITIES",
    "PREMIUM_ID",
    "STANDARD_ID",
    "TIERS",
    "Dataset",
    "DatasetCatalog",
    "build_datasets",
    "dataset_catalog",
]
