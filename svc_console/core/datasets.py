"""The dataset catalogue's records: listings, datacards, trial results, delivered content and the
publish state of a listing, as the marketplace sends them (camelCase on the wire).

SPEC.md fixes the listing's searchable attributes (title, description, tags, category, tier,
modality, format, price, schema columns, quality signals); the rest of each shape is the sandbox's
documented choice (see docs/sandbox.md), and the console parses exactly that.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from svc_console.core.models import Wire
from svc_console.core.money import Usdc

Tier = Literal["free", "standard", "premium", "enterprise"]
Modality = Literal["structured", "document"]
Format = Literal["csv", "tsv", "json", "jsonl", "parquet", "txt", "md", "pdf"]
SortBy = Literal["newest", "popular", "price_asc", "price_desc"]
PublishState = Literal["draft", "processing", "published", "failed"]

TIERS: tuple[str, ...] = ("free", "standard", "premium", "enterprise")
MODALITIES: tuple[str, ...] = ("structured", "document")
FORMATS: tuple[str, ...] = ("csv", "tsv", "json", "jsonl", "parquet", "txt", "md", "pdf")
SORT_ORDERS: tuple[str, ...] = ("newest", "popular", "price_asc", "price_desc")
PUBLISH_STATES: tuple[str, ...] = ("draft", "processing", "published", "failed")


class QualitySignals(Wire):
    """Measured by the service's analysis of the data, not claimed by the publisher."""

    score: float = Field(ge=0, le=1, description="overall, from the figures below")
    completeness: float = Field(ge=0, le=1, description="share of non-empty cells")
    schema_accuracy: float = Field(
        alias="schemaAccuracy", ge=0, le=1, description="share of rows matching the schema types"
    )
    duplicate_rate: float = Field(alias="duplicateRate", ge=0, le=1)
    freshness_days: int = Field(alias="freshnessDays", ge=0, description="days since the update")
    update_frequency: str = Field(alias="updateFrequency")
    verified_publisher: bool = Field(alias="verifiedPublisher")


class SchemaColumn(Wire):
    name: str
    type: str
    description: str = ""
    nullable: bool = False


class DatasetListing(Wire):
    """`GET /api/datasets/{id}` and each result of list/search."""

    id: str
    title: str
    description: str
    tags: list[str]
    category: str
    tier: Tier
    modality: Modality
    format: Format
    price_usdc: Usdc = Field(alias="priceUsdc", description="per access; 0 on the free tier")
    columns: list[str] = Field(description="schema column names, matched by required_fields")
    row_count: int = Field(alias="rowCount", ge=0)
    size_bytes: int = Field(alias="sizeBytes", ge=0)
    created_at: str = Field(alias="createdAt", description="ISO date")
    updated_at: str = Field(alias="updatedAt", description="ISO date")
    downloads: int = Field(ge=0)
    publisher: str
    license: str
    quality_signals: QualitySignals = Field(alias="qualitySignals")


class DatasetPage(Wire):
    """`GET /api/datasets`: the matches in the requested order, and how many matched in all."""

    datasets: list[DatasetListing]
    total: int = Field(ge=0)
    limit: int = Field(ge=1)


class Provenance(Wire):
    sources: list[str]
    collection: str
    update_frequency: str = Field(alias="updateFrequency")


class CardStatistics(Wire):
    row_count: int = Field(alias="rowCount", ge=0)
    column_count: int = Field(alias="columnCount", ge=0)
    size_bytes: int = Field(alias="sizeBytes", ge=0)
    null_rate: float = Field(alias="nullRate", ge=0, le=1)


class CardPricing(Wire):
    tier: Tier
    price_usdc: Usdc = Field(alias="priceUsdc")
    currency: Literal["USDC"] = "USDC"
    protocols: list[str] = Field(description="empty on the free tier")
    networks: list[str] = Field(description="CAIP-2 networks a payment may settle on")


class Datacard(Wire):
    """The full quality datacard (`GET /api/datasets/{id}/card.json`, and inside a trial)."""

    dataset_id: str = Field(alias="datasetId")
    title: str
    version: str
    publisher: str
    license: str
    summary: str
    intended_use: list[str] = Field(alias="intendedUse")
    limitations: list[str]
    provenance: Provenance
    columns: list[SchemaColumn]
    statistics: CardStatistics
    quality: QualitySignals
    pricing: CardPricing
    analyzed_at: str = Field(alias="analyzedAt", description="ISO date of the last analysis")


class CoverageReport(Wire):
    """How a dataset's schema covers the fields a caller needs (`try_dataset` required_fields)."""

    required_fields: list[str] = Field(alias="requiredFields")
    present: list[str]
    missing: list[str]
    coverage: float = Field(ge=0, le=1, description="present / required; 1 when none asked")
    complete: bool
    columns: list[str]


class Preview(Wire):
    columns: list[str]
    rows: list[dict[str, Any]]


class TrialResult(Wire):
    """`try_dataset`: free, spends nothing."""

    dataset_id: str = Field(alias="datasetId")
    preview: Preview
    coverage: CoverageReport
    datacard: Datacard


class DatasetContent(Wire):
    """What access delivers: free at once, paid tiers after payment. `body` is untrusted data."""

    dataset_id: str = Field(alias="datasetId")
    title: str
    format: Format
    delivered_as: str = Field(alias="deliveredAs", description="the format `body` is in")
    media_type: str = Field(alias="mediaType")
    body: str
    body_encoding: Literal["utf-8", "base64"] = Field("utf-8", alias="bodyEncoding")
    sha256: str
    rows_delivered: int = Field(alias="rowsDelivered", ge=0)
    row_count: int = Field(alias="rowCount", ge=0)
    charged_usdc: Usdc = Field(alias="chargedUsdc")


class PublishEvent(Wire):
    state: PublishState
    at: float


class PublishStatus(Wire):
    """`GET /api/datasets/{id}/publish-status` and the answer of `POST .../process`."""

    dataset_id: str = Field(alias="datasetId")
    state: PublishState
    version: int = Field(ge=0, description="analyses completed")
    reason: str | None = None
    datacard_url: str | None = Field(None, alias="datacardUrl")
    history: list[PublishEvent] = Field(default_factory=list)


class DatasetAccess(Wire):
    """`POST /api/datasets/{id}/access`: the content, what it cost and, when paid, the settlement
    (`payment`) and the `PAYMENT-RESPONSE` header it came with."""

    dataset_id: str = Field(alias="datasetId")
    tier: Tier
    charged_usdc: Usdc = Field(alias="chargedUsdc")
    content: DatasetContent
    payment: dict[str, Any] | None = None
    payment_response: str | None = Field(None, alias="paymentResponse")
