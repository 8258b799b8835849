"""The mandate: what one approval lets be paid, as one canonical record.

Every approval (the operator's in the TUI, over the operator socket or in the web console, a
grant's, a policy rule's, the two-person rule's second) produces one. It names the request, the
agent and whether it proved its name, what is bought and from whom, where the money may go (the
recipient, asset, network and scheme the quote pinned), the most that may be paid (exactly, for
the compute tools), until when, and who decided with what evidence. The signer (market/signer.py)
signs nothing a mandate does not cover.

Its canonical JSON (sorted keys, no spaces) is what its sha256 digest is taken over; the digest is
in the decision's audit event and the mandate itself is kept with the decision, so a copy of it
can be checked against the chain (`svc-console mandate verify`).
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from decimal import Decimal
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, PlainSerializer

from svc_console.core.canonical_json import canonical_json
from svc_console.core.models import EndpointRecord, Estimate, Evidence, Kind, SpendRequest
from svc_console.core.money import Usdc
from svc_console.core.networks import USDC_ASSETS, caip2
from svc_console.core.sanitize import inert_line

VERSION = 1
# How long an approval may be paid on: an execution, and the one funding retry, start within it;
# later, the operator approves again.
LIFETIME_S = 3600
# The compute tools' prices (SPEC.md, Limits): a payment covers exactly these.
FIXED_PRICES: dict[Kind, Decimal] = {Kind.breed_agent: Decimal(10), Kind.merge_models: Decimal(15)}
# The payment scheme of the wallet proxy's two actions: the proxy signs, the console never does.
PROXY_SCHEMES = {"x402": "x402/fetch", "mpp": "mpp/pay"}
_TIME = "%Y-%m-%dT%H:%M:%SZ"


def _utc_seconds(value: object) -> int:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return int(value)
    if isinstance(value, str):
        try:
            return int(datetime.strptime(value, _TIME).replace(tzinfo=UTC).timestamp())
        except ValueError:
            pass
    raise ValueError(f"must be a UTC time written {_TIME.replace('%', '')}")


def utc_text(seconds: float) -> str:
    return datetime.fromtimestamp(int(seconds), UTC).strftime(_TIME)


# Whole seconds since the epoch, written as an ISO-8601 UTC time.
UtcTime = Annotated[int, BeforeValidator(_utc_seconds), PlainSerializer(utc_text, return_type=str)]


def sha256_of(value: Any) -> str:
    return hashlib.sha256(canonical_json(value).encode()).hexdigest()


class MandateDecider(BaseModel):
    """One who approved, as the console recorded it (for a rule: the rule and the policy)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    by: str
    evidence: Evidence | None = None


class Mandate(BaseModel):
    """What may be paid for one request, and no more."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    version: Literal[1] = VERSION
    request_id: str
    agent: str
    agent_verified: bool
    kind: Kind
    endpoint_id: str | None = None
    dataset_id: str | None = None
    inputs_sha256: str  # the inputs approved: the signer pays for no others
    provider: str
    provider_name: str
    # Where the money goes (`payTo`); None where the wallet proxy signs and the console never
    # sees the recipient (it pays the provider the endpoint record names).
    recipient: str | None = None
    asset: str | None = None  # the token's contract (USDC)
    network: str  # CAIP-2
    chain: str
    # What may be signed: x402's `exact`, MPP's `evm/charge`, or (the proxy signing) its action.
    scheme: str
    signed_by: Literal["console", "wallet_proxy"]
    max_usdc: Usdc
    exact: bool = False  # the amount is exactly `max_usdc` (the compute tools)
    approved_at: UtcTime
    valid_until: UtcTime
    deciders: list[MandateDecider]
    policy_sha256: str | None = None  # the policy in force, where a rule decided

    def canonical(self) -> str:
        return canonical_json(self.model_dump(mode="json"))

    @property
    def digest(self) -> str:
        """The sha256 of the canonical JSON, hex: what the decision's audit event holds."""
        return hashlib.sha256(self.canonical().encode()).hexdigest()

    def printed(self) -> str:
        """As `approvals show --mandate` prints it: indented, every character not ASCII
        escaped (an agent's or a provider's text cannot act on the terminal)."""
        return json.dumps(self.model_dump(mode="json"), sort_keys=True, indent=2)

    @classmethod
    def parse(cls, text: str) -> Mandate:
        return cls.model_validate_json(text)


def inputs_digest(inputs: dict[str, Any]) -> str:
    return sha256_of(inputs)


def mandate_for(
    request: SpendRequest,
    endpoint: EndpointRecord,
    estimate: Estimate,
    *,
    ceiling: Decimal,
    deciders: list[MandateDecider],
    at: float,
    policy_sha256: str | None = None,
) -> Mandate:
    """The mandate an approval of `request`, as quoted (`endpoint`, `estimate`), up to
    `ceiling`, produces. A compute tool's is its fixed price, exactly, whatever was quoted."""
    network = estimate.network or caip2(estimate.chain)
    by_proxy = request.kind == Kind.market_call
    fixed = FIXED_PRICES.get(request.kind)
    return Mandate(
        request_id=request.id,
        agent=request.agent,
        agent_verified=request.agent_verified,
        kind=request.kind,
        endpoint_id=request.endpoint_id,
        dataset_id=request.dataset_id,
        inputs_sha256=inputs_digest(request.inputs),
        provider=endpoint.provider,
        provider_name=endpoint.provider_name,
        recipient=None if by_proxy else estimate.pay_to,
        asset=estimate.asset or USDC_ASSETS.get(network),
        network=network,
        chain=estimate.chain,
        scheme=PROXY_SCHEMES[estimate.protocol] if by_proxy else estimate.scheme or "exact",
        signed_by="wallet_proxy" if by_proxy else "console",
        max_usdc=fixed if fixed is not None else ceiling,
        exact=fixed is not None,
        approved_at=int(at),
        valid_until=int(at) + LIFETIME_S,
        deciders=deciders,
        policy_sha256=policy_sha256,
    )


def short_address(address: str | None) -> str:
    """`0x5A9d…A9D0`: an address as the operator compares it at a glance, its start and end
    (a look-alike address rarely matches both)."""
    if not address:
        return "none"
    return address if len(address) <= 14 else f"{address[:6]}…{address[-4:]}"


def pays_to(kind: Kind, estimate: Estimate | None, endpoint: EndpointRecord | None) -> str:
    """Where approving sends the money, as the console's own fact: the recipient the quote
    pinned, shortened, with the provider's name; or that the wallet proxy pays the provider
    itself and the console never sees the address."""
    provider = inert_line(endpoint.provider_name, 50) if endpoint is not None else "the provider"
    if kind == Kind.market_call:
        return f"none in the quote: the wallet proxy pays {provider} itself"
    if estimate is None or not estimate.pay_to:
        return "nothing to pay" if estimate is not None and not estimate.amount_usdc else "unknown"
    return f"{inert_line(short_address(estimate.pay_to), 20)} ({provider})"
