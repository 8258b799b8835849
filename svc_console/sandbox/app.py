"""The sandbox marketplace as an ASGI application: the REST catalogue, the agent wallet proxy and
the funding page, answering exactly the wire contract the clients in `svc_console.market` speak.

Answers are built with the domain models of `svc_console.core.models`, so what the sandbox sends is
what the console parses. docs/sandbox.md lists the choices made where SPEC.md is silent.
"""

from __future__ import annotations

import html
import json
import re
import uuid
from dataclasses import dataclass
from decimal import Decimal
from typing import Any
from urllib.parse import parse_qs

from jsonschema import Draft202012Validator
from pydantic.alias_generators import to_camel
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp

from svc_console.core.models import DryRun, EndpointRecord, Outcome, Receipt
from svc_console.core.money import format_usdc, parse_usdc
from svc_console.sandbox import (
    account_routes,
    catalogue_routes,
    compute_routes,
    fault_injector,
    fault_routes,
    market_routes,
    mcp,
    upstream,
)
from svc_console.sandbox.catalog import Catalog, catalog, settleable_chains, skill_markdown
from svc_console.sandbox.faults import repriced_chain
from svc_console.sandbox.input_schema import input_problems
from svc_console.sandbox.pricing import estimate, runtime_price
from svc_console.sandbox.queries import (
    MARKET_DEFAULT_LIMIT,
    MARKET_MAX_LIMIT,
    InvalidArguments,
    MarketQuery,
    parse_arguments,
    search_market,
)
from svc_console.sandbox.receipt_networks import NETWORKS
from svc_console.sandbox.state import InsufficientFunds, SandboxState
from svc_console.sandbox.web import (
    Quiet,
    Refusal,
    bearer,
    json_object,
    on_crash,
    on_http_error,
    on_refusal,
    page,
    read_body,
    same_secret,
)

SEARCH_DEFAULT_LIMIT = MARKET_DEFAULT_LIMIT  # POST /api/search: sandbox.queries.MarketQuery
SEARCH_MAX_LIMIT = MARKET_MAX_LIMIT
FUNDING_DEFAULT = Decimal(10)
FUNDING_MAX = Decimal(10_000)

HEALTH = {"sandbox": True, "service": "svc-console sandbox", "realMoney": False}
DRY_RUN_POLICY = {"requiresApproval": True, "source": "sandbox default"}
_IDEMPOTENCY_KEY = re.compile(r"^[\x21-\x7e]{1,200}$")


# --- request parsing -------------------------------------------------------------------------


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


# --- the application -------------------------------------------------------------------------


class _Sandbox:
    def __init__(self, state: SandboxState, listing: Catalog):
        self.state, self.catalog = state, listing
        self._validators: dict[str, Draft202012Validator] = {}

    # authentication

    def _require_key(self, request: Request) -> None:
        # The state's own key and every key the login flow issued (sandbox.accounts).
        if self.state.accounts.api_key_agent(bearer(request)) is None:
            raise Refusal(
                401,
                "UNAUTHORIZED",
                "missing or invalid API key",
                headers={"WWW-Authenticate": 'Bearer realm="svc-console sandbox"'},
            )

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

    # REST catalogue

    async def health(self, request: Request) -> Response:
        return JSONResponse(HEALTH)

    def _record(self, endpoint_id: str) -> EndpointRecord:
        record = self.catalog.get(endpoint_id)
        if record is None:
            raise Refusal(
                404, "NOT_FOUND", "no endpoint with that id", endpointId=endpoint_id[:200]
            )
        return record

    async def endpoint(self, request: Request) -> Response:
        self._require_key(request)
        record = self._record(request.path_params["endpoint_id"])
        return JSONResponse({**record.model_dump(mode="json"), "sandbox": True})

    async def skill(self, request: Request) -> Response:
        self._require_key(request)
        record = self._record(request.path_params["endpoint_id"])
        text = skill_markdown(record, self.catalog.outputs[record.id])
        return Response(text, media_type="text/markdown")

    async def search(self, request: Request) -> Response:
        self._require_key(request)
        body = await json_object(request, "INVALID_PARAMS", empty_ok=True)
        try:
            # A misspelt filter is refused, not ignored: ignoring it would widen the results.
            query = parse_arguments(MarketQuery, body)
        except InvalidArguments as exc:
            raise Refusal(400, "INVALID_PARAMS", exc.message, fields=exc.as_json()) from None
        found, total = search_market(self.catalog, query)
        results = [record.model_dump(mode="json") for record in found]
        return JSONResponse({"results": results, "total": total, "sandbox": True})

    # wallet proxy

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

    def _check_inputs(self, record: EndpointRecord, inputs: dict[str, Any]) -> None:
        validator = self._validators.get(record.id)
        if validator is None:
            validator = self._validators[record.id] = Draft202012Validator(record.inputs)
        problems = input_problems(validator, inputs)
        if problems:
            summary = "; ".join(f"{p['field']} {p['problem']}" for p in problems)
            raise Refusal(422, "INVALID_INPUTS", f"invalid inputs: {summary}", fields=problems)

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
        fingerprint = upstream.digest(protocol, record.id, upstream.canonical(call.inputs)).hex()
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
            price = runtime_price(record, call.inputs, state.reprice_factor)
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
            # The answer is made before the debit, so a charge is never left without its result.
            content_type, body, encoding = upstream.respond(
                record, self.catalog.kind(record.id), call.inputs
            )
            try:
                charge = state.charge(
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

    # funding page

    def _known_wallet(self, request: Request) -> HTMLResponse | None:
        if self.state.accounts.has_wallet(request.path_params["username"]):
            return None
        return page("Unknown wallet", "<p>This sandbox has no wallet by that name.</p>", 404)

    def _form(self, balance: Decimal, note: str = "", amount: str = "10") -> str:
        username = html.escape(self.state.username)
        return (
            f"{note}<p>Wallet <strong>{username}</strong> holds"
            f" <strong>{html.escape(format_usdc(balance))} USDC</strong> (sandbox).</p>\n"
            '<form method="post">\n'
            f'<input type="hidden" name="token" value="{html.escape(self.state.funding_token)}">\n'
            f'<label>Amount (USDC) <input name="amount" value="{html.escape(amount)}"'
            ' inputmode="decimal"></label>\n'
            '<button type="submit">Add sandbox funds</button>\n</form>'
        )

    async def fund_page(self, request: Request) -> Response:
        unknown = self._known_wallet(request)
        if unknown is not None:
            return unknown
        # A funding checkout (POST /api/funding/checkout) links here with the amount filled in.
        asked = request.query_params.get("amount", "")
        try:
            amount = parse_usdc(asked) if asked else FUNDING_DEFAULT
        except ValueError:
            amount = FUNDING_DEFAULT
        if not 0 < amount <= FUNDING_MAX:
            amount = FUNDING_DEFAULT
        shown = format_usdc(amount) if asked and amount != FUNDING_DEFAULT else str(FUNDING_DEFAULT)
        return page("Fund the sandbox wallet", self._form(self.state.balance, amount=shown))

    async def fund(self, request: Request) -> Response:
        unknown = self._known_wallet(request)
        if unknown is not None:
            return unknown
        form = parse_qs(
            (await read_body(request)).decode("utf-8", "replace"), keep_blank_values=True
        )
        token = (form.get("token") or [""])[0]
        if not same_secret(token, self.state.funding_token):
            return page("Form expired", "<p>Reload the funding page and try again.</p>", 403)
        text = (form.get("amount") or [""])[0].strip() or str(FUNDING_DEFAULT)
        try:
            amount = parse_usdc(text)
        except ValueError:
            amount = Decimal(0)
        if not 0 < amount <= FUNDING_MAX:
            note = (
                f"<p><strong>Enter an amount above 0 and at most {FUNDING_MAX} USDC,"
                " with at most 6 decimals.</strong></p>\n"
            )
            return page("Fund the sandbox wallet", self._form(self.state.balance, note), 400)
        balance = self.state.credit(amount)
        note = (
            f"<p><strong>Added {html.escape(format_usdc(amount))} USDC.</strong>"
            f" New balance: {html.escape(format_usdc(balance))} USDC.</p>\n"
        )
        return page("Sandbox wallet funded", self._form(balance, note))


def create_app(state: SandboxState, listing: Catalog | None = None) -> ASGIApp:
    """The sandbox marketplace for `state`, listing `listing` (default: the seeded catalogue)."""
    sandbox = _Sandbox(state, listing or catalog())
    wallet = "/api/wallets/{username}/actions"
    routes = [
        Route("/", sandbox.health, methods=["GET"]),
        Route("/api/health", sandbox.health, methods=["GET"]),
        Route("/api/endpoints/{endpoint_id}", sandbox.endpoint, methods=["GET"]),
        Route("/api/endpoints/{endpoint_id}/skill.md", sandbox.skill, methods=["GET"]),
        Route("/api/search", sandbox.search, methods=["POST"]),
        Route(f"{wallet}/x402/fetch", sandbox.x402_fetch, methods=["POST"]),
        Route(f"{wallet}/mpp/pay", sandbox.mpp_pay, methods=["POST"]),
        Route("/fund/{username}", sandbox.fund_page, methods=["GET"]),
        Route("/fund/{username}", sandbox.fund, methods=["POST"]),
        *account_routes.routes(state, sandbox.catalog),
        *compute_routes.routes(state, sandbox.catalog),
        *mcp.routes(state, sandbox.catalog),
        *catalogue_routes.routes(state, sandbox.catalog),
        *market_routes.routes(state, sandbox.catalog),
        *fault_routes.routes(state, sandbox.catalog),
    ]
    app = Starlette(
        routes=routes,
        exception_handlers={
            Refusal: on_refusal,
            HTTPException: on_http_error,
            Exception: on_crash,
        },
    )
    # Outermost, so a fault can fail, delay, cut or garble any answer (see sandbox.faults).
    return fault_injector.FaultInjector(Quiet(app), state, sandbox.catalog)
