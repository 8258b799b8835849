"""What the marketplace's browse, search and content routes answer, as typed records.

`GET /api/market/catalog` pages through providers (`CatalogPage`), `POST /api/search` ranks
endpoints (`SearchPage`), and the content routes for answer engines describe the service itself
(`ContentIndex`, `Glossary`, `ToolCatalogue`). Field names on the wire are camelCase.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from svc_console.core.models import EndpointRecord, Wire
from svc_console.core.money import Usdc


class ProviderSummary(Wire):
    """One provider of the market as the browse lists it: what its endpoints have in common."""

    id: str
    name: str
    origin: Literal["publisher", "registry"]
    verified: bool
    domain_types: list[str] = Field(alias="domainTypes")
    product_classes: list[str] = Field(alias="productClasses")
    chains: list[str]
    protocols: list[Literal["x402", "mpp"]]
    endpoints: list[str] = Field(description="ids for `GET /api/endpoints/{id}`")
    price_from_usdc: Usdc = Field(alias="priceFromUsdc")
    price_to_usdc: Usdc = Field(alias="priceToUsdc")
    quality_score: float = Field(alias="qualityScore", ge=0, le=1)
    reliability: float = Field(ge=0, le=1, description="the least reliable endpoint's figure")
    tags: list[str] = Field(default_factory=list)


class CatalogPage(Wire):
    """`GET /api/market/catalog`: one page of providers; `next_offset` is None on the last."""

    providers: list[ProviderSummary]
    total: int = Field(ge=0)
    offset: int = Field(ge=0)
    limit: int = Field(ge=1)
    next_offset: int | None = Field(None, alias="nextOffset")


class SearchPage(Wire):
    """`POST /api/search`: the best matches first, and how many matched in all."""

    results: list[EndpointRecord]
    total: int = Field(ge=0)


class ToolInfo(Wire):
    """One MCP tool as `/api/content/tools` describes it."""

    name: str
    category: str
    auth: str
    cost: str
    price_usdc: Usdc | None = Field(None, alias="priceUsdc", description="fixed price, if any")
    description: str
    read_only: bool = Field(alias="readOnly")
    destructive: bool


class ToolCatalogue(Wire):
    tools: list[ToolInfo]


class GlossaryTerm(Wire):
    term: str
    definition: str
    see_also: list[str] = Field(default_factory=list, alias="seeAlso")


class Glossary(Wire):
    terms: list[GlossaryTerm]


class ContentEntry(Wire):
    """One page of the service's content: where it is and what it says."""

    id: str
    title: str
    url: str
    summary: str
    kind: Literal["route", "tool", "document", "taxonomy"]


class ContentIndex(Wire):
    title: str
    description: str
    entries: list[ContentEntry]
    counts: dict[str, int] = Field(default_factory=dict)
