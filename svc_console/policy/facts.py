"""The facts of one request that rules are judged on, flattened once per evaluation.

Built from what the pipeline learned (the request, its endpoint record, the dry run's estimate), or
from a dataset listing, or written by hand for `svc-console policy explain`. A fact a request does
not have (the tier of a market call, the provider quality of a compute job) is None, and rules
about it do not apply to that request.

An agent that did not prove its name is, to every rule, list, budget, brake and grant, the one agent
`(unverified)` (`core/names.py`): it matches nothing written for a registered agent, and inventing
names multiplies no per-agent limit. Only deny lists also read the name it gave (`claimed`): a
deny never needs proof.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from svc_console.core.models import EndpointRecord, Estimate, SpendRequest
from svc_console.core.money import to_atomic
from svc_console.core.names import counted_as

# What the two compute tools cost (SPEC.md), when no estimate says otherwise.
COMPUTE_PRICES = {"breed_agent": Decimal(10), "merge_models": Decimal(15)}


@dataclass(slots=True)
class Facts:
    agent: str  # who the request counts as: its agent, or `(unverified)`
    kind: str
    amount: int  # atomic USDC: the most this request may cost once approved
    endpoint: str | None = None
    provider: str | None = None
    provider_name: str | None = None
    domain_type: str | None = None
    product_class: str | None = None
    chain: str | None = None
    protocol: str | None = None
    tier: str | None = None
    category: str | None = None
    format: str | None = None
    verified: bool | None = None
    quality: float | None = None
    reliability: float | None = None
    dynamic: bool = False
    inputs: Any = None
    agent_verified: bool = False  # the agent proved its name (a token, or its registered uid)
    claimed: str | None = None  # the name an unverified agent gave (deny lists read it)
    schema: Any = None  # the JSON Schema of the endpoint's inputs, when known (repeats read it)


def ceiling(request: SpendRequest, estimate: Estimate | None) -> Decimal:
    """The most an approval of this request lets the console pay: the estimate's upper bound,
    never above the agent's own max_usdc (the same figure the broker approves)."""
    if estimate is not None:
        amount = estimate.ceiling
    else:
        amount = COMPUTE_PRICES.get(str(request.kind), request.max_usdc or Decimal(0))
    if request.max_usdc is not None:
        amount = min(amount, request.max_usdc)
    return amount


def facts_of(
    request: SpendRequest,
    endpoint: EndpointRecord | None,
    estimate: Estimate | None,
    dataset: Any = None,
) -> Facts:
    """`dataset`: the listing of a dataset request (attributes or keys tier, category, format).

    Domain types and product classes describe market endpoints: the records the console makes for
    datasets and compute tools carry placeholders (A22, A4), which rules about domain types must
    not read, so those facts stay None for other kinds."""
    verified = request.agent_verified
    facts = Facts(
        agent=counted_as(request.agent, verified),
        kind=str(request.kind),
        amount=to_atomic(ceiling(request, estimate)),
        endpoint=request.endpoint_id or request.dataset_id,
        inputs=request.inputs,
        agent_verified=verified,
        claimed=None if verified else request.agent,
    )
    if endpoint is not None:
        facts.schema = endpoint.inputs
        facts.endpoint = endpoint.id
        facts.provider = endpoint.provider
        facts.provider_name = endpoint.provider_name
        if facts.kind == "market_call":
            facts.domain_type = endpoint.domain_type.upper()
            facts.product_class = endpoint.product_class.upper()
        facts.verified = endpoint.verified
        facts.quality = endpoint.quality_score
        facts.reliability = endpoint.reliability
        facts.dynamic = endpoint.pricing.model == "dynamic"
    if estimate is not None:
        facts.chain = estimate.chain.lower()
        facts.protocol = estimate.protocol.lower()
        facts.dynamic = facts.dynamic or estimate.dynamic
    if dataset is not None:
        facts.tier = _field(dataset, "tier")
        facts.category = _field(dataset, "category")
        facts.format = _field(dataset, "format")
    return facts


def _field(record: Any, name: str) -> str | None:
    value = record.get(name) if isinstance(record, Mapping) else getattr(record, name, None)
    return str(value).lower() if value is not None else None


def facts_of_record(record: Any) -> Facts:
    """Facts of a past request as the ledger stored it (plain JSON: the endpoint record in the
    marketplace's spelling, the estimate in the console's), without building models: a
    simulation replays many. `record` has the attributes of `ledger.replay.PastRequest`."""
    endpoint, estimate = record.endpoint, record.estimate
    top = estimate.get("max_usdc") or estimate.get("amount_usdc") or "0"
    amount = to_atomic(Decimal(str(top)))
    if record.max_usdc is not None:
        amount = min(amount, record.max_usdc)
    kind = str(record.kind)
    pricing = endpoint.get("pricing") or {}
    dynamic = pricing.get("model") == "dynamic" or (
        estimate.get("max_usdc") is not None
        and estimate.get("max_usdc") != estimate.get("min_usdc")
    )
    market = kind == "market_call"
    return Facts(
        agent=counted_as(record.agent, record.agent_verified),
        agent_verified=record.agent_verified,
        claimed=None if record.agent_verified else record.agent,
        schema=endpoint.get("inputs"),
        kind=kind,
        amount=amount,
        endpoint=endpoint.get("id") or record.endpoint_id or record.dataset_id,
        provider=endpoint.get("provider"),
        provider_name=endpoint.get("providerName") or endpoint.get("provider_name"),
        domain_type=str(endpoint.get("domain_type", "")).upper() or None if market else None,
        product_class=str(endpoint.get("product_class", "")).upper() or None if market else None,
        chain=_lower(estimate.get("chain")),
        protocol=_lower(estimate.get("protocol")),
        verified=endpoint.get("verified"),
        quality=endpoint.get("qualityScore", endpoint.get("quality_score")),
        reliability=endpoint.get("reliability"),
        dynamic=dynamic,
        inputs=record.inputs,
    )


def _lower(value: Any) -> str | None:
    return str(value).lower() if value is not None else None
