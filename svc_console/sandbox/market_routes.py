"""Paid calls straight to a market provider.

`POST /api/market/{provider}/{path}` calls one endpoint of a registered provider directly, paid
per call over the provider's protocol, as an agent without the wallet proxy would:

- `{provider}` is the provider id (`prov_searchly`) or its slug (`searchly`); `{path}` is the
  endpoint's kind (`search`) or its id (`ep_websearch_basic`). Unknown: 404 `NOT_FOUND`; known
  but out of the allowlisted registry: 403 `NOT_IN_REGISTRY`, as on the wallet proxy.
- The body is the provider's inputs (a JSON object, empty for none), checked against the
  endpoint's schema before any payment is asked for (422 `INVALID_INPUTS`).
- No API key: the payment is the credential (an `Authorization: Payment` credential could not
  share its header with a bearer key).
- Without payment: 402 `PAYMENT_REQUIRED` with, for x402 providers, a `PAYMENT-REQUIRED` header
  (and the same object as `paymentRequired` in the body; one `accepts` entry per settlement chain
  of the endpoint, EVM chains first, paid to the provider's own address), and for MPP providers a
  `WWW-Authenticate: Payment` challenge on Tempo. Providers on both get both.
- The price is the runtime price the wallet proxy charges (fixed, or a point of the dynamic range
  picked by the inputs, times any repricing), so the challenge can ask more than a dry run said.
- x402: `PAYMENT-SIGNATURE` (v2) or the legacy v1 `X-PAYMENT` header, settled by
  `sandbox.x402.X402Gate`. Refused: 402 `PAYMENT_INVALID` with `reason` and the challenge again.
  A `payment_proof` is not accepted here: a call's result depends on its inputs, so an earlier
  settlement proves nothing about this one.
- MPP: `Authorization: Payment ...`, settled by `sandbox.mpp.MppGate`. Refused: 402
  `PAYMENT_INVALID` with a fresh challenge (403 for a credential already used).
- Balance too low: 402 `WALLET_UNFUNDED` with `fundingUrl`, `balanceUsdc`, `requiredUsdc` and the
  challenge, so the same call can be paid once the wallet is funded.
- Paid: the provider's answer itself (JSON, Markdown, or the bytes of an image or a sound), with
  `PAYMENT-RESPONSE` (v1: `X-PAYMENT-RESPONSE`) or `Payment-Receipt`, `X-Sandbox: true` and
  `Cache-Control: private`.
"""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass
from decimal import Decimal
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from svc_console.core.models import EndpointRecord
from svc_console.core.money import format_usdc
from svc_console.core.networks import NETWORKS, USDC_ASSETS, evm_chain_id
from svc_console.sandbox import upstream
from svc_console.sandbox.catalog import settleable_chains
from svc_console.sandbox.input_schema import InputCheck
from svc_console.sandbox.pricing import runtime_price
from svc_console.sandbox.state import InsufficientFunds
from svc_console.sandbox.web import Refusal, error_response, json_object
from svc_console.sandbox.x402 import PaymentInvalid, X402Gate

if TYPE_CHECKING:
    from svc_console.sandbox.catalog import Catalog
    from svc_console.sandbox.mpp import MppGate
    from svc_console.sandbox.state import SandboxState

SANDBOX_HEADERS = {"X-Sandbox": "true"}


@lru_cache(maxsize=4096)
def provider_pay_to(provider: str) -> str:
    """The address a provider is paid at in the sandbox: derived from its id, so stable, and
    belonging to no known key."""
    from eth_utils import to_checksum_address

    digest = hashlib.sha256(f"svc-console sandbox payTo|{provider}".encode()).hexdigest()
    return to_checksum_address("0x" + digest[:40])


def _x402_networks(record: EndpointRecord) -> list[str]:
    """The CAIP-2 networks an x402 endpoint's challenge offers, EVM ones first."""
    networks = [
        NETWORKS[chain]
        for chain in settleable_chains(record, "x402")
        if NETWORKS.get(chain) in USDC_ASSETS
    ]
    return sorted(networks, key=lambda n: evm_chain_id(n) is None)


@dataclass
class _Call:
    """One market call being priced and paid."""

    request: Request
    record: EndpointRecord
    inputs: dict[str, Any]
    price: Decimal
    pay_to: str
    description: str
    required: dict[str, Any] | None = None


class _Market:
    def __init__(self, state: SandboxState, listing: Catalog):
        self.state, self.catalog = state, listing
        self.gate = X402Gate(state)
        self._mpp: MppGate | None = None
        self._check_inputs = InputCheck()

    @property
    def mpp(self) -> MppGate:
        # Built on first use: pympp and eth-account cost an import a sandbox may never need.
        if self._mpp is None:
            from svc_console.sandbox.mpp import MppGate

            self._mpp = MppGate(self.state)
        return self._mpp

    # --- the call ---------------------------------------------------------------------------

    def _record(self, provider: str, path: str) -> EndpointRecord:
        endpoints = self.catalog.provider_endpoints
        candidates = endpoints.get(provider) or endpoints.get(f"prov_{provider}") or ()
        wanted = path.strip("/")
        for record in candidates:
            if wanted in (record.id, self.catalog.kind(record.id)):
                if not self.state.in_registry(record.id):
                    raise Refusal(
                        403,
                        "NOT_IN_REGISTRY",
                        "only endpoints of the allowlisted registry can be called",
                        endpointId=record.id,
                    )
                return record
        raise Refusal(
            404,
            "NOT_FOUND",
            "no such endpoint at that provider",
            provider=provider[:200],
            path=wanted[:200],
        )

    async def call(self, request: Request) -> Response:
        record = self._record(request.path_params["provider"], request.path_params["path"])
        inputs = await json_object(request, "INVALID_INPUTS", empty_ok=True)
        self._check_inputs(record, inputs)
        price = runtime_price(record, inputs, self.state.reprice_factor)
        call = _Call(
            request=request,
            record=record,
            inputs=inputs,
            price=price,
            pay_to=provider_pay_to(record.provider),
            description=f"{record.provider_name}: {record.name}"[:200],
        )
        if "x402" in record.protocols and _x402_networks(record):
            call.required = self.gate.required(
                str(request.url),
                price,
                call.description,
                networks=_x402_networks(record),
                pay_to=call.pay_to,
            )
        headers = request.headers
        signature, legacy = headers.get("payment-signature"), headers.get("x-payment")
        if call.required is not None and (signature or legacy):
            return self._pay_x402(call, signature, legacy)
        credential = headers.get("authorization", "")
        if "mpp" in record.protocols and credential[:8].lower() == "payment ":
            return await self._pay_mpp(call)
        return await self._ask(call)

    def _pay_x402(self, call: _Call, signature: str | None, legacy: str | None) -> Response:
        assert call.required is not None
        try:
            settlement = self.gate.settle(
                call.required,
                payment_signature=signature,
                x_payment=legacy,
                charge_for=call.record.id,
            )
        except PaymentInvalid as exc:
            retry = {**call.required, "error": exc.message}
            challenge = {"PAYMENT-REQUIRED": X402Gate.encode(retry)}
            if exc.reason == "insufficient_funds":
                return self._unfunded(call, challenge, paymentRequired=retry)
            return error_response(
                402,
                "PAYMENT_INVALID",
                exc.message,
                {**challenge, "Cache-Control": "no-store"},
                reason=exc.reason,
                paymentRequired=retry,
            )
        name = "PAYMENT-RESPONSE" if settlement.x402_version == 2 else "X-PAYMENT-RESPONSE"
        return self._answer(call, {name: settlement.response_header()})

    async def _pay_mpp(self, call: _Call) -> Response:
        from svc_console.sandbox.mpp import MppPayment

        request = call.request
        try:
            outcome = await self.mpp.charge(
                method=request.method,
                url=str(request.url),
                headers=request.headers.items(),
                # Challenges bind the route and the price, not the body (no digest is asked).
                body=None,
                amount_usdc=call.price,
                description=call.description,
                pay_to=call.pay_to,
                charge_for=call.record.id,
            )
        except InsufficientFunds:
            headers, details = await self._challenges(call)
            return self._unfunded(call, headers, **details)
        if isinstance(outcome, MppPayment):
            return self._answer(call, {"Payment-Receipt": outcome.receipt_header})
        headers = {}
        if outcome.www_authenticate:
            headers["WWW-Authenticate"] = outcome.www_authenticate[0]
        if call.required is not None:
            headers["PAYMENT-REQUIRED"] = X402Gate.encode(call.required)
        return error_response(
            outcome.status,
            "PAYMENT_INVALID",
            str(outcome.problem.get("detail") or "the MPP credential was refused"),
            {**headers, "Cache-Control": "no-store"},
            reason=outcome.reason or "refused",
            mpp=outcome.problem,
        )

    async def _challenges(self, call: _Call) -> tuple[dict[str, str], dict[str, Any]]:
        """The headers and body details that ask for payment over every protocol offered."""
        from svc_console.sandbox.mpp import MppChallenge

        headers: dict[str, str] = {}
        details: dict[str, Any] = {}
        if call.required is not None:
            headers["PAYMENT-REQUIRED"] = X402Gate.encode(call.required)
            details["paymentRequired"] = call.required
        if "mpp" in call.record.protocols:
            # No credential: pympp answers with a fresh challenge bound to this route.
            outcome = await self.mpp.charge(
                method=call.request.method,
                url=str(call.request.url),
                headers=[],
                body=None,
                amount_usdc=call.price,
                description=call.description,
                pay_to=call.pay_to,
                charge_for=call.record.id,
            )
            if isinstance(outcome, MppChallenge) and outcome.www_authenticate:
                headers["WWW-Authenticate"] = outcome.www_authenticate[0]
                details["mpp"] = outcome.problem
        return headers, details

    async def _ask(self, call: _Call) -> Response:
        headers, details = await self._challenges(call)
        if not headers:
            raise Refusal(
                409,
                "NOT_PAYABLE",
                f"{call.record.id} settles on no network the sandbox takes payments on",
            )
        protocols = [p for p in call.record.protocols if p != "x402" or call.required is not None]
        return error_response(
            402,
            "PAYMENT_REQUIRED",
            f"this call costs {format_usdc(call.price)} USDC; pay it over {' or '.join(protocols)}",
            {**headers, "Cache-Control": "no-store"},
            priceUsdc=format_usdc(call.price),
            protocols=protocols,
            **details,
        )

    def _unfunded(self, call: _Call, headers: dict[str, str], **details: Any) -> Response:
        state = self.state
        balance = state.balance
        return error_response(
            402,
            "WALLET_UNFUNDED",
            f"the wallet holds {format_usdc(balance)} USDC and this call costs"
            f" {format_usdc(call.price)} USDC; fund it and retry",
            {**headers, "Cache-Control": "no-store"},
            fundingUrl=state.funding_url(state.base_url or str(call.request.base_url)),
            balanceUsdc=format_usdc(balance),
            requiredUsdc=format_usdc(call.price),
            **details,
        )

    def _answer(self, call: _Call, headers: dict[str, str]) -> Response:
        content_type, body, encoding = upstream.respond(
            call.record, self.catalog.kind(call.record.id), call.inputs
        )
        content = base64.b64decode(body) if encoding == "base64" else body.encode("utf-8")
        return Response(
            content,
            media_type=content_type,
            headers={**headers, **SANDBOX_HEADERS, "Cache-Control": "private, no-store"},
        )


def routes(state: SandboxState, listing: Catalog) -> list[Route]:
    market = _Market(state, listing)
    return [
        Route("/api/market/{provider}/{path:path}", market.call, methods=["POST"]),
    ]
