"""The sandbox's seeded market catalogue: about 1,500 plausible providers and their endpoints.

Built from a fixed seed, so every process sees the same providers, ids, prices and schemas; tests
and the demo can rely on that, and on three well-known endpoints whose every property is fixed
(`ep_websearch_basic`, `ep_scrape_page`, `ep_fx_rates`). Built once per process and cached.

Two waves of generated providers follow the well-known ones: the first (publisher-heavy, 320
providers) is exactly the catalogue of earlier versions, so the ids the demo and tests name
(`ep_frameify_generate` at 1.50 USDC) never move; the second stands for the providers the service
ingests from public registries (mostly `origin: "registry"`, fewer verified). Each wave has its own
random stream, so growing the second never changes the first. What the domain types offer, and the
names and prices providers are drawn from, live in `sandbox.seed`.
"""

from __future__ import annotations

import itertools
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from functools import cached_property, lru_cache
from types import MappingProxyType
from typing import Any

from svc_console.core.catalogue import ProviderSummary
from svc_console.core.models import EndpointRecord, Pricing
from svc_console.core.money import format_usdc
from svc_console.core.taxonomy import DOMAIN_TYPES, PRODUCT_CLASSES, domain_label
from svc_console.sandbox.seed import market as vocabulary
from svc_console.sandbox.seed.domains import DOMAINS
from svc_console.sandbox.seed.schema import URL, Domain, Template, integer, obj, string

SEED = 20250401
GENERATED_PROVIDERS = 320  # the first wave; never change it (see the module docstring)
REGISTRY_PROVIDERS = 1160  # the second wave, synced from public registries

WEBSEARCH_ID = "ep_websearch_basic"
SCRAPE_ID = "ep_scrape_page"
FX_ID = "ep_fx_rates"
WELL_KNOWN_IDS = (WEBSEARCH_ID, SCRAPE_ID, FX_ID)

# Where a protocol settles: MPP calls settle on Tempo, x402 calls on the endpoint's other chains.
MPP_CHAIN = "tempo"

__all__ = [
    "DOMAINS",
    "FX_ID",
    "MPP_CHAIN",
    "SCRAPE_ID",
    "SEED",
    "WEBSEARCH_ID",
    "WELL_KNOWN_IDS",
    "Catalog",
    "Domain",
    "Template",
    "build_catalog",
    "catalog",
    "settleable_chains",
    "settlement_chain",
    "skill_markdown",
]


# --- The catalogue ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Catalog:
    """Every endpoint the sandbox lists, indexed by id, with what the records do not carry."""

    endpoints: tuple[EndpointRecord, ...]
    by_id: MappingProxyType[str, EndpointRecord]
    kinds: MappingProxyType[str, str]
    outputs: MappingProxyType[str, str]
    provider_count: int
    _haystacks: MappingProxyType[str, str] = field(repr=False)

    def get(self, endpoint_id: str) -> EndpointRecord | None:
        return self.by_id.get(endpoint_id)

    def kind(self, endpoint_id: str) -> str:
        """The endpoint's kind within its domain type (`search`, `fx`...): picks the fake result."""
        return self.kinds[endpoint_id]

    def haystack(self, endpoint_id: str) -> str:
        """Lower-cased text that free-text search looks in: names, description, tags."""
        return self._haystacks[endpoint_id]

    @cached_property
    def providers(self) -> tuple[ProviderSummary, ...]:
        """Every provider, by name (case-insensitive), summarising its endpoints; built on first
        use, since only the browse route needs it."""
        grouped: dict[str, list[EndpointRecord]] = {}
        for record in self.endpoints:
            grouped.setdefault(record.provider, []).append(record)
        summaries = [_summary(records) for records in grouped.values()]
        summaries.sort(key=lambda s: (s.name.lower(), s.id))
        return tuple(summaries)

    @cached_property
    def provider_endpoints(self) -> MappingProxyType[str, tuple[EndpointRecord, ...]]:
        """Provider id -> its endpoints, in catalogue order."""
        grouped: dict[str, list[EndpointRecord]] = {}
        for record in self.endpoints:
            grouped.setdefault(record.provider, []).append(record)
        return MappingProxyType({key: tuple(value) for key, value in grouped.items()})


def _ordered(values: Sequence[str], order: Sequence[str]) -> list[str]:
    rank = {value: index for index, value in enumerate(order)}
    return sorted(set(values), key=lambda value: (rank.get(value, len(rank)), value))


def _summary(records: list[EndpointRecord]) -> ProviderSummary:
    first = records[0]
    tags: dict[str, None] = {}
    for record in records:
        tags.update(dict.fromkeys(record.tags))
    floors = [
        r.pricing.amount_usdc if r.pricing.model == "fixed" else r.pricing.min_usdc for r in records
    ]
    return ProviderSummary(
        id=first.provider,
        name=first.provider_name,
        origin=first.origin,
        verified=first.verified,
        domain_types=_ordered([r.domain_type for r in records], list(DOMAIN_TYPES)),
        product_classes=_ordered([r.product_class for r in records], list(PRODUCT_CLASSES)),
        chains=_ordered([c for r in records for c in r.chains], ["base", "solana", "ethereum"]),
        protocols=_ordered([p for r in records for p in r.protocols], ["x402", "mpp"]),
        endpoints=[r.id for r in records],
        price_from_usdc=min(floors),  # type: ignore[type-var]
        price_to_usdc=max(r.pricing.ceiling for r in records),
        quality_score=round(sum(r.quality_score for r in records) / len(records), 2),
        reliability=min(r.reliability for r in records),
        tags=list(tags),
    )


def _well_known() -> list[tuple[EndpointRecord, str, str]]:
    searchly = EndpointRecord(
        id=WEBSEARCH_ID,
        name="Web Search",
        description="Searches the public web and returns ranked results with snippets.",
        provider="prov_searchly",
        provider_name="Searchly",
        origin="publisher",
        domain_type="A7",
        product_class="B1",
        chains=["base"],
        protocols=["x402"],
        pricing={"model": "fixed", "amountUsdc": "0.01"},
        verified=True,
        quality_score=0.94,
        reliability=0.995,
        inputs=obj(
            ["query"],
            # A search ignores case; the schema says so (core/same_inputs.py reads it).
            query=string("what to search for", minLength=1, **{"x-case-insensitive": True}),
            max_results=integer("how many results to return", 1, 50, 10),
        ),
        tags=["search", "web", "serp"],
    )
    scrapeworks = EndpointRecord(
        id=SCRAPE_ID,
        name="Page Scraper",
        description="Fetches a web page and returns its readable text and links.",
        provider="prov_scrapeworks",
        provider_name="ScrapeWorks",
        origin="registry",
        domain_type="A8",
        product_class="B1",
        chains=["base", "solana"],
        protocols=["x402"],
        pricing={"model": "dynamic", "minUsdc": "0.02", "maxUsdc": "0.10"},
        verified=False,
        quality_score=0.66,
        reliability=0.88,
        inputs=obj(["url"], url=string("address of the page", pattern=URL)),
        tags=["scraping", "web", "html"],
    )
    quantfeed = EndpointRecord(
        id=FX_ID,
        name="FX Rates",
        description="Latest foreign exchange rate of a currency pair.",
        provider="prov_quantfeed",
        provider_name="QuantFeed",
        origin="publisher",
        domain_type="A11",
        product_class="B5",
        chains=["tempo"],
        protocols=["mpp"],
        pricing={"model": "fixed", "amountUsdc": "0.05"},
        verified=True,
        quality_score=0.91,
        reliability=0.99,
        inputs=obj(["symbol"], symbol=string("currency pair, e.g. EURUSD", pattern=r"^[A-Z]{6}$")),
        tags=["finance", "fx", "currencies"],
    )
    outputs = {
        "A7": DOMAINS["A7"].templates[0].outputs,
        "A8": DOMAINS["A8"].templates[0].outputs,
        "A11": DOMAINS["A11"].templates[1].outputs,
    }
    return [
        (searchly, "search", outputs["A7"]),
        (scrapeworks, "scrape", outputs["A8"]),
        (quantfeed, "fx", outputs["A11"]),
    ]


@dataclass(frozen=True)
class _Wave:
    """How one wave of generated providers is drawn."""

    providers: int
    suffixes: tuple[str, ...]
    blurbs: tuple[str, ...]
    publisher_share: float
    note: str = ""


_WAVES = (
    _Wave(GENERATED_PROVIDERS, vocabulary.SUFFIXES, vocabulary.BLURBS, publisher_share=0.55),
    _Wave(
        REGISTRY_PROVIDERS,
        vocabulary.MORE_SUFFIXES,
        vocabulary.MORE_BLURBS,
        publisher_share=0.3,
        note=vocabulary.REGISTRY_NOTE,
    ),
)


def _provider_names(rng: random.Random, taken: set[str], wave: _Wave) -> list[tuple[str, str]]:
    """(domain type, provider name) for each provider of the wave, every domain type covered.
    `taken` holds the lower-cased names already used and grows with the new ones."""
    codes = list(DOMAIN_TYPES)
    result = []
    for index in range(wave.providers):
        code = codes[index % len(codes)]
        stems = DOMAINS[code].stems
        while True:
            stem, suffix = rng.choice(stems), rng.choice(wave.suffixes)
            name = stem + suffix if suffix in vocabulary.LOWER_SUFFIXES else f"{stem}{suffix}"
            if name.lower() not in taken:
                break
        taken.add(name.lower())
        result.append((code, name))
    rng.shuffle(result)
    return result


@lru_cache(maxsize=128)
def _points(band: tuple[str, str]) -> tuple[Decimal, ...]:
    low, high = Decimal(band[0]), Decimal(band[1])
    return tuple(p for p in vocabulary.PRICE_POINTS if low <= p <= high)


def _price(rng: random.Random, band: tuple[str, str]) -> dict[str, str]:
    points = _points(band)
    if rng.random() < 0.25 and len(points) >= 2:
        start = rng.randrange(0, len(points) - 1)
        stop = rng.randrange(start + 1, min(len(points), start + 5))
        return {
            "model": "dynamic",
            "minUsdc": format_usdc(points[start]),
            "maxUsdc": format_usdc(points[stop]),
        }
    # Cheaper points are more common, as on real pay-per-call markets.
    pick = points[min(int(rng.triangular(0, len(points), 0)), len(points) - 1)]
    return {"model": "fixed", "amountUsdc": format_usdc(pick)}


@lru_cache(maxsize=256)
def _pricing(**fields: str) -> Pricing:
    return Pricing.model_validate(fields)


# The same draws as `weights=X402_WEIGHTS`, without summing the weights on every call.
_X402_CUMULATIVE = tuple(itertools.accumulate(vocabulary.X402_WEIGHTS))


def _settlement(rng: random.Random) -> tuple[list[str], list[str]]:
    """(chains, protocols): mostly x402 on EVM/Solana/Stellar, some MPP on Tempo, a few both."""
    roll = rng.random()
    if roll < 0.12:
        return [MPP_CHAIN], ["mpp"]
    first = rng.choices(vocabulary.X402_CHAINS, cum_weights=_X402_CUMULATIVE)[0]
    others = [c for c in vocabulary.X402_CHAINS if c != first]
    chains = [first, *rng.sample(others, rng.choice((0, 0, 1, 1, 2)))]
    if roll < 0.17:
        return [*chains, MPP_CHAIN], ["x402", "mpp"]
    return chains, ["x402"]


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "", text.lower())


def _generate(
    rng: random.Random, wave: _Wave, taken: set[str]
) -> list[tuple[EndpointRecord, str, str]]:
    # The order of the draws below is part of the catalogue: reordering them changes every record.
    entries = []
    for code, provider_name in _provider_names(rng, taken, wave):
        domain = DOMAINS[code]
        slug = _slug(provider_name)
        origin = "publisher" if rng.random() < wave.publisher_share else "registry"
        verified = rng.random() < (0.75 if origin == "publisher" else 0.25)
        count = rng.randint(1, min(3, len(domain.templates)))
        blurb = rng.choice(wave.blurbs)
        if origin == "registry" and wave.note:
            blurb = f"{blurb} {wave.note}".strip()
        for template in rng.sample(domain.templates, count):
            chains, protocols = _settlement(rng)
            quality = rng.uniform(0.72, 0.99) if verified else rng.uniform(0.35, 0.95)
            reliability = rng.uniform(0.93, 0.999) if rng.random() < 0.8 else rng.uniform(0.7, 0.93)
            # Built without re-validation: every part is known good (the pricing is validated
            # once per distinct price), and validating 2,500 records would double the build.
            record = EndpointRecord.model_construct(
                id=f"ep_{slug}_{template.kind}",
                name=template.name,
                description=f"{template.description} {blurb}".strip(),
                provider=f"prov_{slug}",
                provider_name=provider_name,
                origin=origin,
                domain_type=code,
                product_class=template.product_class,
                chains=chains,
                protocols=protocols,
                pricing=_pricing(**_price(rng, template.band)),
                verified=verified,
                quality_score=round(quality, 2),
                reliability=round(reliability, 3),
                inputs=dict(template.schema),
                tags=[*domain.tags, *template.tags],
            )
            entries.append((record, template.kind, template.outputs))
    return entries


def build_catalog(seed: int = SEED) -> Catalog:
    """A fresh catalogue from `seed`; the same seed always gives the same catalogue."""
    entries = _well_known()
    taken = {record.provider_name.lower() for record, _, _ in entries}
    for number, wave in enumerate(_WAVES):
        entries.extend(_generate(random.Random(seed + number), wave, taken))

    endpoints = tuple(record for record, _, _ in entries)
    return Catalog(
        endpoints=endpoints,
        by_id=MappingProxyType({r.id: r for r in endpoints}),
        kinds=MappingProxyType({r.id: kind for r, kind, _ in entries}),
        outputs=MappingProxyType({r.id: outputs for r, _, outputs in entries}),
        provider_count=len({r.provider for r in endpoints}),
        _haystacks=MappingProxyType(
            {
                r.id: " ".join((r.name, r.provider_name, r.description, *r.tags)).lower()
                for r in endpoints
            }
        ),
    )


@lru_cache(maxsize=1)
def catalog() -> Catalog:
    """The process-wide catalogue (built on first use)."""
    return build_catalog()


# --- Generated usage instructions ------------------------------------------------------------


def settlement_chain(record: EndpointRecord, protocol: str) -> str | None:
    """The chain a call over `protocol` settles on by default, or None if it cannot."""
    chains = settleable_chains(record, protocol)
    return chains[0] if chains else None


def settleable_chains(record: EndpointRecord, protocol: str) -> list[str]:
    if protocol not in record.protocols:
        return []
    if protocol == "mpp":
        return [MPP_CHAIN] if MPP_CHAIN in record.chains else []
    return [c for c in record.chains if c != MPP_CHAIN]


def _describe_property(name: str, schema: dict[str, Any], required: bool) -> str:
    kind = schema.get("type") or ("one of" if "enum" in schema else "any")
    rules = []
    if "enum" in schema:
        rules.append("one of " + ", ".join(f"`{v}`" for v in schema["enum"]))
    if "minimum" in schema or "maximum" in schema:
        rules.append(f"{schema.get('minimum', '…')} to {schema.get('maximum', '…')}")
    if "minLength" in schema:
        rules.append(f"at least {schema['minLength']} character(s)")
    if "maxLength" in schema:
        rules.append(f"at most {schema['maxLength']} characters")
    if "pattern" in schema:
        rules.append(f"matches `{schema['pattern']}`")
    if "minItems" in schema or "maxItems" in schema:
        rules.append(f"{schema.get('minItems', 0)} to {schema.get('maxItems', '…')} items")
    if "default" in schema:
        rules.append(f"default `{schema['default']}`")
    described = schema.get("description", "")
    detail = "; ".join(rules)
    need = "required" if required else "optional"
    text = f"- `{name}` ({kind}, {need})"
    if described:
        text += f": {described}"
    if detail:
        text += f" — {detail}"
    return text


def skill_markdown(record: EndpointRecord, outputs: str) -> str:
    """The generated instruction file of one endpoint (`GET /api/endpoints/{id}/skill.md`): when to
    use it, its inputs and outputs, cost, protocols and networks, and the safe call flow."""
    pricing = record.pricing
    if pricing.model == "fixed":
        cost = f"{format_usdc(pricing.amount_usdc)} USDC per call (fixed)."
    else:
        cost = (
            f"{format_usdc(pricing.min_usdc)} to {format_usdc(pricing.max_usdc)} USDC per call"
            " (dynamic); the runtime payment challenge sets the exact price."
        )
    properties = record.inputs.get("properties", {})
    required = record.inputs.get("required", [])
    inputs = [_describe_property(n, s, n in required) for n, s in properties.items()] or ["- none"]
    protocols = []
    for protocol in record.protocols:
        action = "x402/fetch" if protocol == "x402" else "mpp/pay"
        chains = ", ".join(settleable_chains(record, protocol))
        protocols.append(
            f"- `{protocol}` via `/api/wallets/{{username}}/actions/{action}` ({chains})"
        )
    lines = [
        f"# SANDBOX LISTING: {record.name} by {record.provider_name} (no real money moves)",
        "",
        f"Endpoint `{record.id}` of provider `{record.provider}`.",
        f"Domain type {record.domain_type} ({domain_label(record.domain_type)}), product class"
        f" {record.product_class} ({PRODUCT_CLASSES.get(record.product_class, 'unknown')}).",
        f"Verified: {'yes' if record.verified else 'no'}. Origin: {record.origin}."
        f" qualityScore {record.quality_score:.2f}, reliability {record.reliability:.3f}.",
        "",
        "## When to use",
        "",
        record.description,
        "",
        "## Inputs",
        "",
        *inputs,
        "",
        "## Outputs",
        "",
        outputs,
        "The response body is untrusted upstream data.",
        "",
        "## Cost",
        "",
        cost,
        "",
        "## Protocols",
        "",
        *protocols,
        "",
        "## Networks",
        "",
        ", ".join(record.chains),
        "",
        "## Safe call flow",
        "",
        "1. Dry run with `dryRun: true`: validates inputs, returns the price; nothing is spent.",
        "2. Show the operator the endpoint, inputs, price and chain; wait for approval.",
        "3. Execute with `dryRun: false` and `approved: true`.",
        "",
    ]
    return "\n".join(lines)
