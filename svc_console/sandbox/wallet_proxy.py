"""The agent wallet proxy: `POST /api/wallets/{username}/actions/x402/fetch` and `.../mpp/pay`,
which dry-run or pay for a call to an endpoint of the allowlisted registry and answer its
`DryRun` or `Outcome` (docs/sandbox.md lists the checks, in the order they run).
"""

from __future__ import annotations

import json
import re
import uuid
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from pydantic.alias_generators import to_camel
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from svc_console.core.canonical_json import canonical_json
from svc_console.core.models import DryRun, EndpointRecord, Outcome, Receipt
from svc_console.core.money import format_usdc, parse_usdc
from svc_console.sandbox import upstream
from svc_console.sandbox.catalog import settleable_chains
from svc_console.sandbox.faults import repriced_chain
from svc_console.sandbox.input_schema import InputCheck
from svc_console.sandbox.pricing import estimate, runtime_price
from svc_console.sandbox.receipt_networks import NETWORKS
from svc_console.sandbox.state import InsufficientFunds
from svc_console.sandbox.web import Refusal, bearer, json_object

if TYPE_CHECKING:
    from svc_console.sandbox.catalog import Catalog
    from svc_console.sandbox.state import Charge, SandboxState

DRY_RUN_POLICY = {"requiresApproval": True, "source": "sandbox default"}
_IDEMPOTENCY_KEY = re.compile(r"^[\x21-\x7e]{1,200}$")


@dataclass(frozen=True)
class Call:
    """A wallet proxy request body, checked."""

    endpoint_id: str
    inputs: dict[str, Any]
    dry_run: bool
    approved: bool
    max_usdc: Decimal | None
    chain: str | None
    idempotency_key: str | None


def _parse_call(body: dict[str, Any], header_key: str | None) -> Call:
    def bad(message: str) -> Refusal:
        return Refusal(400, "INVALID_REQUEST", message)

    endpoint_id = body.get("endpointId")
    if not isinstance(endpoint_id, str) or not 0 < len(endpoint_id) <= 200:
        raise bad("endpointId is required (a string)")
    inputs = body.get("inputs")
    if not isinstance(inputs, dict):
        raise bad("inputs must be a JSON object")
    flags = {}
    for name in ("dryRun", "approved"):
        value = body.get(name, False)
        # Only a JSON true approves: "true" or 1 from a confused client must not spend money.
        if not isinstance(value, bool):
            raise bad(f"{name} must be true or false")
        flags[name] = value
    max_usdc = body.get("maxUsdc")
    if max_usdc is not None:
        try:
            max_usdc = parse_usdc(max_usdc)
        except ValueError as exc:
            raise bad(f"maxUsdc {exc}") from None
    chain = body.get("chain")
    if chain is not None and not isinstance(chain, str):
        raise bad("chain must be a string")
    key = body.get("idempotencyKey")
    if key is not None and (not isinstance(key, str) or not _IDEMPOTENCY_KEY.match(key)):
        raise bad("idempotencyKey must be 1 to 200 printable ASCII characters")
    if header_key is not None:
        if not _IDEMPOTENCY_KEY.match(header_key):
            raise bad("the Idempotency-Key header must be 1 to 200 printable ASCII characters")
        if key is not None and key != header_key:
            raise bad("idempotencyKey and the Idempotency-Key header differ")
        key = header_key
    return Call(
        endpoint_id=endpoint_id,
        inputs=inputs,
        dry_run=flags["dryRun"],
        approved=flags["approved"],
        max_usdc=max_usdc,
        chain=chain,
        idempotency_key=key,
    )


def _camel(value: Any) -> Any:
    if isinstance(value, dict):
        return {to_camel(key): _camel(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_camel(item) for item in value]
    return value


class _WalletProxy:
    def __init__(self, state: SandboxState, listing: Catalog):
        self.state, self.catalog = state, listing
        self._check_inputs = InputCheck()

    def _require_wallet(self, request: Request) -> None:
        # The state's own token and every apiToken the connection flow issued.
        owner = self.state.accounts.wallet_owner(bearer(request))
        if owner is None:
            raise Refusal(
                401,
                "UNAUTHORIZED",
                "missing or invalid wallet API token",
                headers={"WWW-Authenticate": 'Bearer realm="svc-console sandbox wallet"'},
            )
        if request.path_params["username"] != owner:
            raise Refusal(403, "NOT_YOUR_WALLET", "this token does not belong to that wallet")

    async def x402_fetch(self, request: Request) -> Response:
        return await self._proxy(request, "x402")

    async def mpp_pay(self, request: Request) -> Response:
        return await self._proxy(request, "mpp")

    async def _proxy(self, request: Request, protocol: str) -> Response:
        self._require_wallet(request)
        body = await json_object(request, "INVALID_REQUEST")
        call = _parse_call(body, request.headers.get("idempotency-key"))
        record = self.catalog.get(call.endpoint_id)
        if record is None or not self.state.in_registry(record.id):
            raise Refusal(
                403,
                "NOT_IN_REGISTRY",
                "the wallet proxy only dispatches to endpoints of the allowlisted registry",
                endpointId=call.endpoint_id,
            )
        if protocol not in record.protocols:
            actions = {"x402": "x402/fetch", "mpp": "mpp/pay"}
            raise Refusal(
                400,
                "WRONG_PROTOCOL",
                f"{record.id} is paid over {', '.join(record.protocols)}; use "
                + " or ".join(f"actions/{actions[p]}" for p in record.protocols),
                protocols=list(record.protocols),
            )
        self._check_inputs(record, call.inputs)
        if call.dry_run:
            return self._dry_run(record, protocol, call)
        if not call.approved:
            raise Refusal(
                403,
                "APPROVAL_REQUIRED",
                "spending needs approved: true after the operator's explicit approval",
            )
        return self._execute(request, record, protocol, call)

    def _dry_run(self, record: EndpointRecord, protocol: str, call: Call) -> Response:
        chains = settleable_chains(record, protocol)
        if call.chain is not None and call.chain not in chains:
            raise Refusal(
                400,
                "INVALID_REQUEST",
                f"{record.id} cannot settle on {call.chain[:40]} over {protocol}",
                settleableChains=chains,
            )
        dynamic = record.pricing.model == "dynamic"
        dry_run = DryRun(
            endpoint_id=record.id,
            protocol=protocol,
            chain=call.chain or chains[0],
            estimated_usdc=estimate(record),
            min_usdc=record.pricing.min_usdc if dynamic else None,
            max_usdc=record.pricing.max_usdc if dynamic else None,
            required_fields=list(record.inputs.get("required", [])),
            policy=DRY_RUN_POLICY,
            balance_usdc=self.state.balance,
        )
        return JSONResponse({**dry_run.model_dump(mode="json"), "sandbox": True})

    def _execute(
        self, request: Request, record: EndpointRecord, protocol: str, call: Call
    ) -> Response:
        key = call.idempotency_key or f"sbx-{uuid.uuid4().hex}"
        fingerprint = upstream.digest(protocol, record.id, canonical_json(call.inputs)).hex()
        state = self.state
        # One lock from the replay check to the stored answer: a key runs at most once.
        with state.lock:
            stored = state.replay(key)
            if stored is not None:
                if stored.fingerprint != fingerprint:
                    raise Refusal(
                        409,
                        "IDEMPOTENCY_CONFLICT",
                        "this idempotencyKey was already used for a different call",
                    )
                return Response(
                    stored.body,
                    media_type="application/json",
                    headers={"Idempotency-Replayed": "true"},
                )
            price, chain = self._challenge(record, protocol, call)
            # The answer is made before the debit, so a charge is never left without its result.
            content_type, body, encoding = upstream.respond(
                record, self.catalog.kind(record.id), call.inputs
            )
            charge = self._charge(request, record, protocol, price, chain, key)
            transaction = upstream.digest("tx", charge.id, key, record.id, str(price)).hex()
            outcome = Outcome(
                status=200,
                content_type=content_type,
                body=body,
                body_encoding=encoding,
                charged_usdc=price,
                chain=chain,
                receipt=Receipt(
                    protocol=protocol,
                    network=NETWORKS.get(chain, chain),
                    transaction=f"0x{transaction}",
                    idempotency_key=key,
                ),
            )
            payload = {**_camel(outcome.model_dump(mode="json")), "chargeId": charge.id}
            data = json.dumps({**payload, "sandbox": True}, separators=(",", ":")).encode()
            state.remember(key, fingerprint, data)
        return Response(data, media_type="application/json")

    def _challenge(self, record: EndpointRecord, protocol: str, call: Call) -> tuple[Decimal, str]:
        """The price and chain the payment challenge asks for, refused when the call's chain or
        ceiling does not allow them."""
        price = runtime_price(record, call.inputs, self.state.reprice_factor)
        chains = settleable_chains(record, protocol)
        moved = repriced_chain()
        if moved is not None:
            chains = [moved]  # a `reprice` fault moved this challenge to another chain
        if call.chain is not None and call.chain not in chains:
            raise Refusal(
                409,
                "PRICE_ABOVE_CEILING",
                f"the payment challenge settles on {chains[0]}, not {call.chain[:40]}",
                priceUsdc=format_usdc(price),
                chain=chains[0],
                settleableChains=chains,
            )
        chain = call.chain or chains[0]
        if call.max_usdc is not None and price > call.max_usdc:
            raise Refusal(
                409,
                "PRICE_ABOVE_CEILING",
                f"the payment challenge asks for {format_usdc(price)} USDC, above the"
                f" ceiling of {format_usdc(call.max_usdc)} USDC; nothing was charged",
                priceUsdc=format_usdc(price),
                ceilingUsdc=format_usdc(call.max_usdc),
                chain=chain,
            )
        return price, chain

    def _charge(
        self,
        request: Request,
        record: EndpointRecord,
        protocol: str,
        price: Decimal,
        chain: str,
        key: str,
    ) -> Charge:
        """Debits the wallet, or refuses with the funding page when it holds too little."""
        state = self.state
        try:
            return state.charge(
                endpoint_id=record.id,
                protocol=protocol,
                price_usdc=price,
                chain=chain,
                idempotency_key=key,
            )
        except InsufficientFunds as exc:
            raise Refusal(
                402,
                "WALLET_UNFUNDED",
                f"the wallet holds {format_usdc(exc.balance)} USDC and this call costs"
                f" {format_usdc(price)} USDC; fund it and retry",
                fundingUrl=state.funding_url(state.base_url or str(request.base_url)),
                balanceUsdc=format_usdc(exc.balance),
                requiredUsdc=format_usdc(price),
            ) from None


def routes(state: SandboxState, listing: Catalog) -> list[Route]:
    proxy = _WalletProxy(state, listing)
    wallet = "/api/wallets/{username}/actions"
    return [
        Route(f"{wallet}/x402/fetch", proxy.x402_fetch, methods=["POST"]),
        Route(f"{wallet}/mpp/pay", proxy.mpp_pay, methods=["POST"]),
    ]
