"""Requests for the marketplace's charged MCP tools: `get_dataset` (paid tiers), `svc_breed_agent`
(exactly 10 USDC) and `merge_models` (exactly 15 USDC). The console, not the agent, pays them: the
signer (market/signer.py) signs the x402 challenge with the account wallet's key, within the
approval's mandate.

Quoting calls the tool without a payment: the service validates the arguments and answers with
its payment challenge, which is the authoritative price and pins where the money goes (the
recipient, asset, network and scheme of the first option the console could sign); a free dataset
is quoted from its listing instead, so nothing is delivered before the operator has seen the
request. Paying asks again for a fresh challenge and hands it with the mandate to the signer,
which compares every term before it signs, then calls once more with `payment_signature`.

The purchase is described as an `EndpointRecord`, so risk, policy and the screens treat it like any
market endpoint; the dataset listing travels beside it for the policy's tier, category and format.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from svc_console.core.datasets import DatasetListing
from svc_console.core.mandate import FIXED_PRICES
from svc_console.core.models import EndpointRecord, Estimate, Kind, Outcome, Pricing, Receipt
from svc_console.core.money import format_usdc, parse_usdc
from svc_console.core.networks import CHAIN_OF
from svc_console.core.sanitize import inert_line
from svc_console.market import challenges, errors
from svc_console.market.mcp import McpClient, PaymentRefused, PaymentRequiredError, ToolError
from svc_console.market.payer import Order
from svc_console.market.rest import MarketClient

if TYPE_CHECKING:
    from svc_console.market.signer import Signer

TOOL_OF = {
    Kind.dataset: "get_dataset",
    Kind.breed_agent: "svc_breed_agent",
    Kind.merge_models: "merge_models",
}
# Arguments that carry a payment: only the console signs, so an agent may never supply one.
PAYMENT_ARGUMENTS = {"payment_signature", "payment_proof", "x_payment"}
MARKETPLACE = "marketplace"
_DESCRIPTIONS = {
    Kind.breed_agent: (
        "Breed agent: GPU fine-tuning job",
        "Starts a GPU fine-tuning job on the marketplace and charges 10 USDC at once.",
    ),
    Kind.merge_models: (
        "Merge models: model-fusion job",
        "Starts a model-merge job on the marketplace and charges 15 USDC at once.",
    ),
}


class ToolRefused(errors.MarketError):
    """The request cannot be quoted or paid as asked; `message` says why, for people."""

    code = "TOOL_REFUSED"


@dataclass(frozen=True)
class Quote:
    endpoint: EndpointRecord
    estimate: Estimate
    skill: str
    dataset: DatasetListing | None = None


def arguments(kind: Kind, dataset_id: str | None, inputs: dict[str, Any]) -> dict[str, Any]:
    """The tool's arguments from an agent's request, payments refused."""
    given = sorted(PAYMENT_ARGUMENTS & set(inputs))
    if given:
        raise ToolRefused(
            f"inputs may not carry {', '.join(given)}: the console signs payments itself"
        )
    if kind == Kind.dataset:
        if not dataset_id:
            raise ToolRefused("a dataset request needs dataset_id")
        extra = sorted(set(inputs) - {"dataset_id"})
        if extra:
            raise ToolRefused(f"get_dataset takes no {', '.join(extra)}")
        if inputs.get("dataset_id", dataset_id) != dataset_id:
            raise ToolRefused("inputs.dataset_id differs from dataset_id")
        return {"dataset_id": dataset_id}
    return dict(inputs)


class PaidTools:
    """Quotes and pays charged MCP tools for the broker (a `market.payer.Payer`)."""

    def __init__(self, mcp: McpClient, rest: MarketClient, signer: Signer):
        self.mcp, self.rest, self.signer = mcp, rest, signer
        self._schemas: dict[str, dict[str, Any]] | None = None

    async def _check_schema(self, tool: str, args: dict[str, Any]) -> None:
        """Validates against the service's own input schema (tools/list), so a request the
        service would refuse is rejected before the operator is asked."""
        if self._schemas is None:
            self._schemas = {t.name: t.input_schema for t in await self.mcp.list_tools()}
        schema = self._schemas.get(tool)
        if schema is None:
            raise ToolRefused(f"the marketplace does not offer {tool}")
        # Imported at the first dataset call, not with the broker the TUI's first frame needs.
        from jsonschema import Draft202012Validator

        problems = sorted(
            Draft202012Validator(schema).iter_errors(args), key=lambda e: list(e.absolute_path)
        )
        if problems:
            first = problems[0]
            where = ".".join(str(p) for p in first.absolute_path) or "inputs"
            raise ToolRefused(f"invalid inputs: {inert_line(where, 40)}: {first.message[:160]}")

    async def quote(self, kind: Kind, dataset_id: str | None, inputs: dict[str, Any]) -> Quote:
        if not self.signer.can_sign:
            raise ToolRefused(
                "no account wallet key to pay with: run svc-console login (its first login"
                " saves the wallet)"
            )
        tool = TOOL_OF[kind]
        args = arguments(kind, dataset_id, inputs)
        await self._check_schema(tool, args)
        listing = None
        if kind == Kind.dataset:
            listing = await self._listing(args["dataset_id"])
            if listing.price_usdc == 0:
                free = Estimate(amount_usdc=Decimal(0), chain="base", protocol="x402")
                return _quote(kind, listing, free)
        estimate = _pinned(await self._challenge(tool, args))
        fixed = FIXED_PRICES.get(kind)
        if fixed is not None and estimate.amount_usdc != fixed:
            raise ToolRefused(
                f"{tool} costs exactly {format_usdc(fixed)} USDC but the service asked"
                f" {format_usdc(estimate.amount_usdc)} USDC"
            )
        return _quote(kind, listing, estimate)

    async def _listing(self, dataset_id: str) -> DatasetListing:
        try:
            return await self.rest.dataset(dataset_id)
        except errors.MarketError as exc:
            raise ToolRefused(
                f"no dataset {inert_line(dataset_id, 80)}: {inert_line(exc.message, 200)}"
            ) from None

    async def _challenge(self, tool: str, args: dict[str, Any]) -> dict[str, Any]:
        try:
            result = await self.mcp.call_tool(tool, args)
        except PaymentRequiredError as exc:
            if exc.payment_required is None:
                raise ToolRefused(f"{tool} asked for payment without a challenge") from None
            return exc.payment_required
        except ToolError as exc:
            raise ToolRefused(f"{tool}: {inert_line(exc.message, 200)}") from None
        raise ToolRefused(
            f"{tool} answered without asking for payment ({len(json.dumps(result.data()))} bytes)"
        )

    async def pay(self, order: Order) -> Outcome:
        """Calls the tool, paying what its mandate covers (a `market.payer.Payer`). A challenge
        outside the mandate raises `OutsideMandate` from the signer, nothing signed."""
        mandate = order.mandate
        tool = TOOL_OF[mandate.kind]
        args = arguments(mandate.kind, mandate.dataset_id, order.inputs)
        if order.free:
            return _outcome(await self._call(tool, args), mandate.chain, order, Decimal(0))
        challenge = await self._challenge(tool, args)
        signed = self.signer.x402(mandate, challenge)
        result = await self._call(tool, {**args, "payment_signature": signed.header})
        return _outcome(result, mandate.chain, order, signed.amount_usdc)

    async def _call(self, tool: str, args: dict[str, Any]) -> dict[str, Any]:
        try:
            return (await self.mcp.call_tool(tool, args)).data()
        except PaymentRefused as exc:
            reason = inert_line(exc.reason or exc.code, 40)
            message = inert_line(exc.message, 200)
            raise ToolRefused(
                f"the marketplace refused the payment ({reason}): {message}"
            ) from None
        except errors.WalletUnfunded:
            raise
        except ToolError as exc:
            raise ToolRefused(f"{tool}: {inert_line(exc.message, 200)}") from None


def _pinned(challenge: dict[str, Any]) -> Estimate:
    """The operator's estimate from a challenge: the price, chain, recipient, asset and network
    of its first option the console could sign (USDC on an EVM network, `exact`)."""
    try:
        required = challenges.decode(challenge)
    except errors.OutsideMandate as exc:
        raise ToolRefused(exc.message) from None
    offers = [challenges.offer_of(option, 0) for option in challenges.options(required)]
    offer = next((o for o in offers if challenges.signable(o, "exact", 0)), None)
    if offer is None:
        raise ToolRefused(
            "the payment challenge offers no USDC payment on an EVM network that the console signs"
        )
    chain = CHAIN_OF.get(offer.network or "")
    if chain is None or offer.amount_usdc is None:
        raise ToolRefused(
            f"the payment challenge names an unknown network {inert_line(offer.network)}"
        )
    return Estimate(
        amount_usdc=offer.amount_usdc,
        chain=chain,
        protocol="x402",
        pay_to=offer.recipient,
        asset=offer.asset,
        network=offer.network,
        scheme=offer.scheme,
    )


def _quote(kind: Kind, listing: DatasetListing | None, estimate: Estimate) -> Quote:
    amount, chain = estimate.amount_usdc, estimate.chain
    if listing is not None:
        quality = listing.quality_signals
        record = EndpointRecord(
            id=listing.id,
            name=listing.title,
            description=listing.description,
            provider=listing.publisher,
            providerName=listing.publisher,
            origin="publisher",
            domain_type="A22",
            product_class="B2",
            chains=[chain],
            protocols=["x402"],
            pricing=Pricing(model="fixed", amountUsdc=amount),
            verified=quality.verified_publisher,
            qualityScore=quality.score,
            reliability=quality.schema_accuracy,
            tags=listing.tags[:20],
        )
        skill = (
            f"Dataset purchase through get_dataset: {listing.tier} tier, {listing.category},"
            f" {listing.format}, {format_usdc(amount)} USDC per access."
        )
        return Quote(record, estimate, skill, dataset=listing)
    name, purpose = _DESCRIPTIONS[kind]
    record = EndpointRecord(
        id=TOOL_OF[kind],
        name=name,
        description=purpose,
        provider=MARKETPLACE,
        providerName="Agent Data and API Marketplace",
        origin="publisher",
        domain_type="A4",
        product_class="B3",
        chains=[chain],
        protocols=["x402"],
        pricing=Pricing(model="fixed", amountUsdc=amount),
        verified=True,
        qualityScore=1.0,
        reliability=1.0,
    )
    return Quote(record, estimate, f"{name}. {purpose}")


def _outcome(data: dict[str, Any], chain: str, order: Order, signed_usdc: Decimal) -> Outcome:
    payment = data.get("payment") if isinstance(data.get("payment"), dict) else {}
    charged_text = data.get("chargedUsdc")
    try:
        charged = parse_usdc(charged_text) if charged_text is not None else signed_usdc
    except ValueError:
        charged = signed_usdc
    receipt = Receipt(
        protocol="x402",
        network=str(payment.get("network") or chain),
        transaction=str(payment.get("transaction") or "none: nothing was charged"),
        idempotency_key=order.idempotency_key,
    )
    return Outcome(
        status=200,
        content_type="application/json",
        body=json.dumps(data, ensure_ascii=False),
        charged_usdc=charged,
        chain=CHAIN_OF.get(str(payment.get("network")), chain),
        receipt=receipt,
    )
