"""The arguments of the discovery tools, checked once for REST and MCP alike, and the market search.

Each model refuses unknown arguments, holds the defaults and ranges of SPEC.md exactly (datasets:
`limit` 1 to 100, default 20; market: `limit` 1 to 50, default 25) and refuses anything out of range
instead of clamping it: an agent that asked for 500 rows must learn it got at most 100. Numbers are
strict (`true` is not 1, `"10"` is not 10). `parse_arguments` turns a validation failure into
`InvalidArguments`, whose message names each argument at fault (JSON-RPC -32602, REST 400
`INVALID_PARAMS`). `TOOLS_SUMMARY` describes the nine MCP tools for `tools/list` and
`/api/content/tools`.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Annotated, Any, Literal, TypeVar

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictBool,
    ValidationError,
    WithJsonSchema,
)

from svc_console.core.catalogue import ProviderSummary, ToolInfo
from svc_console.core.datasets import Format, Modality, SortBy, Tier
from svc_console.core.models import EndpointRecord
from svc_console.core.money import parse_usdc
from svc_console.core.taxonomy import CHAINS, DOMAIN_TYPES, PRODUCT_CLASSES
from svc_console.sandbox.catalog import Catalog

DATASETS_DEFAULT_LIMIT, DATASETS_MAX_LIMIT = 20, 100
MARKET_DEFAULT_LIMIT, MARKET_MAX_LIMIT = 25, 50
BROWSE_DEFAULT_LIMIT, BROWSE_MAX_LIMIT = 50, 100
QUERY_MAX_CHARS = 500
REQUIRED_FIELDS_MAX = 50

DomainType = Literal[tuple(DOMAIN_TYPES)]  # type: ignore[valid-type]
ProductClass = Literal[tuple(PRODUCT_CLASSES)]  # type: ignore[valid-type]
Chain = Literal[tuple(CHAINS)]  # type: ignore[valid-type]

Text = Annotated[str, Field(strict=True, max_length=QUERY_MAX_CHARS)]
Identifier = Annotated[str, Field(strict=True, min_length=1, max_length=200)]
Secret = Annotated[str, Field(strict=True, min_length=1, max_length=20_000)]
Price = Annotated[
    Decimal,
    BeforeValidator(parse_usdc),
    WithJsonSchema({"type": "number", "minimum": 0, "description": "USDC"}),
]
FieldName = Annotated[str, Field(strict=True, min_length=1, max_length=100)]
Category = Annotated[str, Field(strict=True, pattern=r"^[a-z0-9][a-z0-9-]{0,59}$")]


def _whole(value: Any) -> Any:
    # JSON Schema counts 10.0 as an integer; anything else that is not an int stays as given and
    # is refused by the strict check (`true`, `"10"`, 10.5).
    return int(value) if isinstance(value, float) and value.is_integer() else value


def _limit(high: int) -> Any:
    # The bounds sit before the validator, so the JSON Schema states them as minimum/maximum.
    return Annotated[int, Field(strict=True, ge=1, le=high), BeforeValidator(_whole)]


class Arguments(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class DatasetQuery(Arguments):
    """`list_datasets` and `search_datasets` (identical arguments), and `GET /api/datasets`."""

    query: Text | None = Field(None, description="keyword search over title, description, tags")
    category: Category | None = Field(None, description="category slug, e.g. finance")
    tier: Tier | None = None
    modality: Modality | None = None
    format: Format | None = None
    max_price_usdc: Price | None = Field(None, description="excludes listings above it")
    required_fields: (
        Annotated[list[FieldName], Field(strict=True, max_length=REQUIRED_FIELDS_MAX)] | None
    ) = Field(None, description="schema columns that must exist (case-insensitive)")
    sort_by: SortBy = "newest"
    limit: _limit(DATASETS_MAX_LIMIT) = DATASETS_DEFAULT_LIMIT


class MarketQuery(Arguments):
    """`list_market_apis` and `POST /api/search`."""

    query: Text | None = Field(None, description="free text over provider name, description, tags")
    domain_type: DomainType | None = None
    product_class: ProductClass | None = None
    chain: Chain | None = None
    verified_only: StrictBool | None = Field(None, description="only verified providers")
    max_price_usdc: Price | None = Field(None, description="maximum per-call price")
    limit: _limit(MARKET_MAX_LIMIT) = MARKET_DEFAULT_LIMIT


class BrowseQuery(Arguments):
    """`GET /api/market/catalog`: the market filters, by provider, a page at a time."""

    query: Text | None = None
    domain_type: DomainType | None = None
    product_class: ProductClass | None = None
    chain: Chain | None = None
    verified_only: StrictBool | None = None
    origin: Literal["publisher", "registry"] | None = None
    max_price_usdc: Price | None = None
    offset: Annotated[int, Field(strict=True, ge=0, le=1_000_000), BeforeValidator(_whole)] = 0
    limit: _limit(BROWSE_MAX_LIMIT) = BROWSE_DEFAULT_LIMIT


class TryDatasetArgs(Arguments):
    """`try_dataset`: free; preview, schema coverage of `required_fields`, datacard."""

    dataset_id: Identifier
    required_fields: (
        Annotated[list[FieldName], Field(strict=True, max_length=REQUIRED_FIELDS_MAX)] | None
    ) = Field(None, description="fields to verify as present")


class GetDatasetArgs(Arguments):
    """`get_dataset`: free tier at once; paid tiers need a payment (v2 signature preferred)."""

    dataset_id: Identifier
    payment_signature: Secret | None = Field(None, description="base64 x402 PAYMENT-SIGNATURE")
    payment_proof: Secret | None = Field(None, description="legacy proof (X-PAYMENT-RESPONSE)")
    x_payment: Secret | None = Field(None, description="legacy v1 X-PAYMENT header value")


# --- validation errors that name the argument ------------------------------------------------


class InvalidArguments(ValueError):
    """Arguments a tool or route refuses. `problems` pairs each argument with what is wrong."""

    def __init__(self, problems: list[tuple[str, str]]):
        self.problems = problems
        self.message = "; ".join(f"{name} {problem}" for name, problem in problems)
        super().__init__(self.message)

    def as_json(self) -> list[dict[str, str]]:
        return [{"argument": name, "problem": problem} for name, problem in self.problems]


def _location(loc: tuple[Any, ...]) -> str:
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text[:100] or "(arguments)"


def _problem(error: Any) -> str:
    kind, ctx = error["type"], error.get("ctx") or {}
    given = error.get("input")
    shown = f" (got {given!r})"[:60] if isinstance(given, int | float | str) else ""
    problems = {
        "extra_forbidden": "is not a known argument",
        "missing": "is required",
        "less_than_equal": f"must be at most {ctx.get('le')}{shown}",
        "greater_than_equal": f"must be at least {ctx.get('ge')}{shown}",
        "int_type": "must be an integer",
        "bool_type": "must be true or false",
        "string_type": "must be a string",
        "list_type": "must be a list of strings",
        "literal_error": f"must be one of {ctx.get('expected')}",
        "string_too_long": f"must be at most {ctx.get('max_length')} characters",
        "string_too_short": "must not be empty",
        "too_long": f"must have at most {ctx.get('max_length')} items",
        "string_pattern_mismatch": "must be a lower-case slug (letters, digits, dashes)",
    }
    if kind in problems:
        return problems[kind]
    if kind == "value_error":
        return str(ctx.get("error") or error["msg"]).removeprefix("Value error, ")
    return str(error["msg"]).lower()


ArgumentsT = TypeVar("ArgumentsT", bound=Arguments)


def parse_arguments(model: type[ArgumentsT], data: Any) -> ArgumentsT:
    """`data` checked against `model`; raises InvalidArguments naming each argument at fault."""
    if data is None:
        data = {}
    if not isinstance(data, Mapping):
        raise InvalidArguments([("(arguments)", "must be an object")])
    try:
        return model.model_validate(dict(data))
    except ValidationError as exc:
        seen: dict[tuple[str, str], None] = {}
        for error in exc.errors():
            loc = tuple(p for p in error["loc"] if not str(p).startswith(("function-", "literal")))
            seen[(_location(loc), _problem(error))] = None
        raise InvalidArguments(list(seen)) from None


# --- the market search -----------------------------------------------------------------------


def _endpoint_matches(record: EndpointRecord, q: MarketQuery | BrowseQuery) -> bool:
    if q.domain_type and record.domain_type != q.domain_type:
        return False
    if q.product_class and record.product_class != q.product_class:
        return False
    if q.chain and q.chain not in record.chains:
        return False
    if q.verified_only and not record.verified:
        return False
    # A dynamic price counts at its ceiling: the filter promises nothing above the threshold.
    return q.max_price_usdc is None or record.pricing.ceiling <= q.max_price_usdc


def search_market(catalog: Catalog, q: MarketQuery) -> tuple[list[EndpointRecord], int]:
    """Endpoints matching every filter and every query word (in the endpoint or provider name, the
    description or the tags): words in a name rank first, then in tags, then by qualityScore."""
    terms = (q.query or "").lower().split()
    ranked = []
    for record in catalog.endpoints:
        if not _endpoint_matches(record, q):
            continue
        haystack = catalog.haystack(record.id)
        if not all(term in haystack for term in terms):
            continue
        title = f"{record.name} {record.provider_name}".lower()
        tags = " ".join(record.tags).lower()
        score = sum(3 if t in title else 2 if t in tags else 1 for t in terms)
        ranked.append((-score, -record.quality_score, record.id, record))
    ranked.sort(key=lambda item: item[:3])
    return [item[3] for item in ranked[: q.limit]], len(ranked)


def browse_catalog(catalog: Catalog, q: BrowseQuery) -> tuple[list[ProviderSummary], int]:
    """Providers (by name) with at least one endpoint passing the endpoint filters, whose name,
    tags or endpoint texts hold every query word; one page of them and how many in all."""
    terms = (q.query or "").lower().split()
    matched = []
    for provider in catalog.providers:
        if q.origin and provider.origin != q.origin:
            continue
        endpoints = catalog.provider_endpoints[provider.id]
        if not any(_endpoint_matches(record, q) for record in endpoints):
            continue
        if terms:
            text = " ".join(catalog.haystack(record.id) for record in endpoints)
            if not all(term in text for term in terms):
                continue
        matched.append(provider)
    return matched[q.offset : q.offset + q.limit], len(matched)


# --- the nine tools, as the MCP endpoint and the content routes describe them ----------------


def _tool(
    name: str, category: str, auth: str, cost: str, description: str, **flags: Any
) -> ToolInfo:
    price = flags.pop("price", None)
    return ToolInfo(
        name=name,
        category=category,
        auth=auth,
        cost=cost,
        price_usdc=price,
        description=description,
        read_only=flags.get("read_only", False),
        destructive=flags.get("destructive", False),
    )


_KEY = "API key or OAuth token (scope mcp:tools)"
TOOLS_SUMMARY: tuple[ToolInfo, ...] = (
    _tool(
        "svc_auth_start", "Auth", "none", "free",
        "Sends a 6-digit one-time code to the operator's e-mail address (valid 10 minutes). "
        "Arguments: email.",
    ),
    _tool(
        "svc_auth_complete", "Auth", "none", "free",
        "Exchanges the e-mailed code for an API key (sk_live_...), the agent id and the MCP "
        "address; on first login also the wallet configuration, shown exactly once. Arguments: "
        "email, otp_code.",
    ),
    _tool(
        "list_datasets", "Discovery", _KEY, "free",
        "Pages through the dataset catalogue with filters: category, tier (free, standard, "
        "premium, enterprise), modality (structured, document), format, max_price_usdc, "
        "required_fields, sort_by (newest, popular, price_asc, price_desc), limit (1-100, "
        "default 20). Returns ids, titles, tiers, prices and quality signals.",
        read_only=True,
    ),
    _tool(
        "search_datasets", "Discovery", _KEY, "free",
        "Keyword search (query) over dataset titles, descriptions and tags, with the same "
        "filters and limits as list_datasets.",
        read_only=True,
    ),
    _tool(
        "list_market_apis", "Discovery", _KEY, "free",
        "Searches the pay-per-call API market: query, domain_type (A1-A22), product_class "
        "(B1-B6), chain, verified_only, max_price_usdc, limit (1-50, default 25). Returns "
        "provider metadata, pricing estimates and chain availability.",
        read_only=True,
    ),
    _tool(
        "try_dataset", "Evaluate", _KEY, "free",
        "Free trial of one dataset: preview rows, a schema coverage report for required_fields "
        "and the full quality datacard. Arguments: dataset_id, required_fields.",
        read_only=True,
    ),
    _tool(
        "get_dataset", "Purchase", _KEY, "free tier: free; paid tiers: x402 payment (varies)",
        "Delivers a dataset. Free tier at once; paid tiers answer a payment challenge until "
        "called again with payment_signature (x402 v2; payment_proof and x_payment accepted "
        "for old integrations). Charges on paid tiers.",
    ),
    _tool(
        "svc_breed_agent", "Compute", _KEY, "10 USDC",
        "Starts a GPU fine-tuning job for target_task (optionally from base_model) and returns "
        "a Job ID. Charges exactly 10 USDC at once: payment_signature must cover exactly that.",
        price=Decimal(10), destructive=True,
    ),
    _tool(
        "merge_models", "Compute", _KEY, "15 USDC",
        "Starts a model-fusion job from config_yaml (a valid merge configuration) and returns a "
        "Job ID. Charges exactly 15 USDC at once: payment_signature must cover exactly that.",
        price=Decimal(15), destructive=True,
    ),
)  # fmt: skip

# Which argument model checks which discovery tool's arguments.
TOOL_ARGUMENTS: dict[str, type[Arguments]] = {
    "list_datasets": DatasetQuery,
    "search_datasets": DatasetQuery,
    "list_market_apis": MarketQuery,
    "try_dataset": TryDatasetArgs,
    "get_dataset": GetDatasetArgs,
}
