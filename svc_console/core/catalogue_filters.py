"""The catalogue's filters, as the service's discovery tools take them.

`MarketFilter` holds the arguments of `list_market_apis` / `POST /api/search` and `DatasetFilter`
those of `list_datasets` / `search_datasets` / `GET /api/datasets` (the page size aside). The local
catalogue cache (`ledger/catalogue_search.py`) answers them with the service's own semantics, so a
search in the console finds what an agent's search would:

- `query`: every whitespace-separated word must occur, case-insensitively, as a substring of the
  record's text (endpoint: its name, provider name, description and tags; dataset: its title,
  description and tags);
- `max_price_usdc`: a dynamic price counts at its maximum (the filter promises nothing above it);
- `chain`: one of the chains the endpoint settles on;
- `required_fields`: every field must be one of the dataset's schema columns, case-insensitively;
- `sort_by`: datasets only; market matches are ranked (words in a name first, then in tags, then
  by qualityScore).

Plain values, no I/O: the screen builds them, the cache reads them.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from decimal import Decimal

from svc_console.core.datasets import SORT_ORDERS
from svc_console.core.money import format_usdc, parse_usdc

QUERY_MAX_CHARS = 500  # the service refuses longer queries
REQUIRED_FIELDS_MAX = 50
SORT_LABELS = {
    "newest": "newest first",
    "popular": "most downloaded first",
    "price_asc": "cheapest first",
    "price_desc": "dearest first",
}


def query_terms(query: str) -> list[str]:
    """The words a query must all contain, as the service splits and folds them."""
    return query.lower().split()


def parse_price(text: str) -> Decimal | None:
    """A max price typed by the operator ("0.05", "2"); empty means none. Raises ValueError with
    a sentence that can be shown as it is."""
    text = text.strip().removesuffix("USDC").removesuffix("usdc").strip()
    if not text:
        return None
    try:
        return parse_usdc(text)
    except ValueError as exc:
        raise ValueError(f"max price {exc}") from None


def parse_fields(text: str) -> tuple[str, ...]:
    """Required fields typed as "ticker, date close": split on commas and spaces, empties dropped,
    each kept once (case-insensitively) in the order given."""
    seen: dict[str, str] = {}
    for word in text.replace(",", " ").split():
        seen.setdefault(word.lower(), word)
    fields = tuple(seen.values())
    if len(fields) > REQUIRED_FIELDS_MAX:
        raise ValueError(f"at most {REQUIRED_FIELDS_MAX} required fields")
    return fields


@dataclass(frozen=True)
class MarketFilter:
    """`list_market_apis`: query, domain type, product class, chain, verified only, max price."""

    query: str = ""
    domain_type: str | None = None
    product_class: str | None = None
    chain: str | None = None
    verified_only: bool = False
    max_price_usdc: Decimal | None = None

    @property
    def terms(self) -> list[str]:
        return query_terms(self.query)

    @property
    def has_filters(self) -> bool:
        """Whether anything beyond the query narrows the list."""
        return self != MarketFilter(query=self.query)

    def with_query(self, query: str) -> MarketFilter:
        return replace(self, query=query[:QUERY_MAX_CHARS])

    def describe(self) -> list[str]:
        """The active filters in a few words each (the query is shown in its own box)."""
        parts = []
        if self.domain_type:
            parts.append(f"domain {self.domain_type}")
        if self.product_class:
            parts.append(f"class {self.product_class}")
        if self.chain:
            parts.append(f"chain {self.chain}")
        if self.verified_only:
            parts.append("verified only")
        if self.max_price_usdc is not None:
            parts.append(f"≤ {format_usdc(self.max_price_usdc)} USDC (dynamic at its max)")
        return parts


@dataclass(frozen=True)
class DatasetFilter:
    """`list_datasets` / `search_datasets`: query, category, tier, modality, format, max price,
    required fields and the order."""

    query: str = ""
    category: str | None = None
    tier: str | None = None
    modality: str | None = None
    format: str | None = None
    max_price_usdc: Decimal | None = None
    required_fields: tuple[str, ...] = field(default=())
    sort_by: str = "newest"

    def __post_init__(self) -> None:
        if self.sort_by not in SORT_ORDERS:
            raise ValueError(f"sort_by must be one of {', '.join(SORT_ORDERS)}")

    @property
    def terms(self) -> list[str]:
        return query_terms(self.query)

    @property
    def needed_columns(self) -> list[str]:
        """The required fields as the service compares them: stripped, lower-cased, once each."""
        return list(dict.fromkeys(name.strip().lower() for name in self.required_fields if name))

    @property
    def has_filters(self) -> bool:
        return replace(self, sort_by="newest") != DatasetFilter(query=self.query)

    def with_query(self, query: str) -> DatasetFilter:
        return replace(self, query=query[:QUERY_MAX_CHARS])

    def next_sort(self) -> DatasetFilter:
        index = SORT_ORDERS.index(self.sort_by)
        return replace(self, sort_by=SORT_ORDERS[(index + 1) % len(SORT_ORDERS)])

    def describe(self) -> list[str]:
        parts = []
        for name in ("category", "tier", "modality", "format"):
            value = getattr(self, name)
            if value:
                parts.append(f"{name} {value}")
        if self.max_price_usdc is not None:
            parts.append(f"≤ {format_usdc(self.max_price_usdc)} USDC")
        if self.required_fields:
            parts.append("has " + ", ".join(self.required_fields))
        return parts
