"""The account side of the sandbox over REST: the e-mail login (`/api/agent/auth/...`), the wallet
connection (`/api/connect/...`), OAuth client credentials (`/oauth/token` and its metadata) and the
agent's wallets, usage and policies (`/api/agent/...`).

The flows themselves live in `sandbox.accounts`; this module only reads requests and shapes answers.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import json
from datetime import UTC, datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, quote

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from svc_console.core.money import format_usdc
from svc_console.sandbox import skills
from svc_console.sandbox.accounts import (
    SCOPES,
    AccountError,
    Caller,
    check_code,
    check_username,
    normal_email,
)
from svc_console.sandbox.datasets import dataset_catalog
from svc_console.sandbox.receipt_networks import NETWORKS
from svc_console.sandbox.web import Refusal, bearer, json_object, read_body

if TYPE_CHECKING:
    from svc_console.sandbox.catalog import Catalog
    from svc_console.sandbox.state import Charge, SandboxState

USAGE_DEFAULT_LIMIT = 50
USAGE_MAX_LIMIT = 200
_NO_STORE = {"Cache-Control": "no-store", "Pragma": "no-cache"}


def base_of(state: SandboxState, request: Request) -> str:
    return (state.base_url or str(request.base_url)).rstrip("/")


def refusal(error: AccountError) -> Refusal:
    return Refusal(error.status, error.code, error.message, **error.details)


def _fields(body: dict[str, Any], required: tuple[str, ...], optional: tuple[str, ...] = ()):
    unknown = sorted(str(k)[:40] for k in body if k not in required + optional)
    if unknown:
        raise Refusal(400, "INVALID_PARAMS", f"unknown field(s): {', '.join(unknown)}")
    missing = [name for name in required if body.get(name) is None]
    if missing:
        raise Refusal(400, "INVALID_PARAMS", f"{missing[0]} is required", field=missing[0])


def _checked(name: str, check: Any, value: Any) -> Any:
    try:
        return check(value)
    except ValueError as exc:
        raise Refusal(400, "INVALID_PARAMS", f"{name} {exc}", field=name) from None


def _unauthorized(message: str) -> Refusal:
    return Refusal(
        401,
        "UNAUTHORIZED",
        message,
        headers={"WWW-Authenticate": 'Bearer realm="svc-console sandbox"'},
    )


def _iso(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).isoformat().replace("+00:00", "Z")


def _since(text: str) -> datetime:
    try:
        return datetime.fromtimestamp(float(text), UTC)
    except (ValueError, OverflowError, OSError):
        pass
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise Refusal(
            400,
            "INVALID_PARAMS",
            "since must be Unix seconds or an ISO 8601 time",
            field="since",
        ) from None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


class _AccountRoutes:
    def __init__(self, state: SandboxState, listing: Catalog):
        self.state, self.listing, self.networks = state, listing, NETWORKS

    @property
    def accounts(self):  # type: ignore[no-untyped-def]
        return self.state.accounts

    def _reader(self, request: Request) -> Caller:
        """An API key, or an OAuth token with scope account:read."""
        caller = self.accounts.caller(bearer(request))
        if caller is None or "account:read" not in caller.scopes:
            raise _unauthorized("missing or invalid API key (or account:read token)")
        return caller

    # --- e-mail login ------------------------------------------------------------------------

    async def send_otp(self, request: Request) -> Response:
        return await self._send(request, "login")

    async def connect_start(self, request: Request) -> Response:
        return await self._send(request, "connect")

    async def _send(self, request: Request, purpose: str) -> Response:
        body = await json_object(request, "INVALID_PARAMS")
        _fields(body, ("email",))
        email = _checked("email", normal_email, body["email"])
        try:
            sent = self.accounts.send_code(email, purpose)  # type: ignore[arg-type]
        except AccountError as exc:
            raise refusal(exc) from None
        return JSONResponse(
            {
                "sent": True,
                "email": sent.email,
                "expiresInSeconds": sent.expires_in_s,
                "delivery": "sandbox outbox (no e-mail leaves this machine)",
                "sandbox": True,
            }
        )

    async def verify_otp(self, request: Request) -> Response:
        body = await json_object(request, "INVALID_PARAMS")
        # `otp_code` as the MCP tool names it; `otp` as the connection flow does.
        name = "otp" if "otp" in body and "otp_code" not in body else "otp_code"
        _fields(body, ("email", name))
        email = _checked("email", normal_email, body["email"])
        code = _checked(name, check_code, body[name])
        try:
            login = self.accounts.login(email, code)
        except AccountError as exc:
            raise refusal(exc) from None
        answer: dict[str, Any] = {
            "apiKey": login.api_key,
            "agentId": login.agent_id,
            "mcpServerUrl": base_of(self.state, request) + "/api/mcp",
            "firstLogin": login.wallet_config is not None,
        }
        if login.wallet_config is not None:
            answer["walletConfig"] = login.wallet_config
        return JSONResponse({**answer, "sandbox": True}, headers=_NO_STORE)

    async def connect_complete(self, request: Request) -> Response:
        body = await json_object(request, "INVALID_PARAMS")
        _fields(body, ("email", "username", "otp"))
        email = _checked("email", normal_email, body["email"])
        username = _checked("username", check_username, body["username"])
        code = _checked("otp", check_code, body["otp"])
        try:
            connection = self.accounts.connect(email, username, code)
        except AccountError as exc:
            raise refusal(exc) from None
        base = base_of(self.state, request)
        api_base = (self.state.wallet_api_base or base).rstrip("/")
        return JSONResponse(
            {
                "username": connection.username,
                "apiToken": connection.api_token,
                "apiBase": api_base,
                "fundingUrl": f"{base}/fund/{quote(connection.username, safe='')}",
                "wallets": connection.addresses,
                "agentId": connection.agent_id,
                "sandbox": True,
            },
            headers=_NO_STORE,
        )

    # --- OAuth 2.0 ---------------------------------------------------------------------------

    async def token(self, request: Request) -> Response:
        """RFC 6749 client credentials: client_secret = an API key, by HTTP Basic (client_id:
        client_secret) or in the form body; `scope` defaults to mcp:tools."""

        def oauth_error(status: int, error: str, description: str) -> Response:
            headers = dict(_NO_STORE)
            if status == 401:
                headers["WWW-Authenticate"] = 'Basic realm="svc-console sandbox"'
            return JSONResponse(
                {"error": error, "error_description": description, "sandbox": True},
                status_code=status,
                headers=headers,
            )

        raw = (await read_body(request)).decode("utf-8", "replace")
        form = {k: v for k, v in parse_qs(raw, keep_blank_values=True).items()}
        if any(len(values) > 1 for values in form.values()):
            return oauth_error(400, "invalid_request", "a parameter is repeated")
        params = {k: v[0] for k, v in form.items()}
        secret = params.get("client_secret")
        scheme, _, credentials = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() == "basic":
            try:
                decoded = base64.b64decode(credentials.strip(), validate=True).decode("utf-8")
            except (binascii.Error, UnicodeDecodeError):
                return oauth_error(401, "invalid_client", "the Basic credentials are malformed")
            _, _, basic_secret = decoded.partition(":")
            if secret is not None and secret != basic_secret:
                return oauth_error(400, "invalid_request", "two different client secrets")
            secret = basic_secret
        grant = params.get("grant_type")
        if grant is None:
            return oauth_error(400, "invalid_request", "grant_type is required")
        if grant != "client_credentials":
            return oauth_error(
                400, "unsupported_grant_type", "only grant_type=client_credentials is supported"
            )
        try:
            issued = self.accounts.issue_token(secret, params.get("scope"))
        except AccountError as exc:
            return oauth_error(exc.status, exc.code, exc.message)
        return JSONResponse(
            {
                "access_token": issued.access_token,
                "token_type": issued.token_type,
                "scope": issued.scope,
                "expires_in": issued.expires_in,
            },
            headers=_NO_STORE,
        )

    async def authorization_server(self, request: Request) -> Response:
        base = base_of(self.state, request)
        return JSONResponse(
            {
                "issuer": base,
                "token_endpoint": f"{base}/oauth/token",
                "grant_types_supported": ["client_credentials"],
                "token_endpoint_auth_methods_supported": [
                    "client_secret_basic",
                    "client_secret_post",
                ],
                "scopes_supported": sorted(SCOPES),
                "sandbox": True,
            }
        )

    async def protected_resource(self, request: Request) -> Response:
        base = base_of(self.state, request)
        return JSONResponse(
            {
                "resource": f"{base}/api/mcp",
                "authorization_servers": [base],
                "scopes_supported": ["mcp:tools"],
                "bearer_methods_supported": ["header"],
                "sandbox": True,
            }
        )

    # --- what the agent can read --------------------------------------------------------------

    async def wallets(self, request: Request) -> Response:
        caller = self._reader(request)
        agent = self.accounts.agent(caller.agent_id)
        balance = self.state.balance
        wallets = [
            {
                "chain": chain,
                "network": self.networks.get(chain, chain),
                "address": address,
                "asset": "USDC",
            }
            for chain, address in agent["addresses"].items()
        ]
        return JSONResponse(
            {
                "agentId": agent["agentId"],
                "usernames": agent["usernames"],
                "wallets": wallets,
                # One make-believe balance backs every chain: it is not a sum per chain.
                "balanceUsdc": format_usdc(balance),
                "pooled": True,
                "sandbox": True,
            }
        )

    def _transactions(self) -> dict[str, str]:
        """Charge id -> transaction of the x402 settlements (sandbox.x402 keeps them)."""
        with self.state.lock:
            settlements = list(getattr(self.state, "settlements", {}).items())
        return {
            charge_id: transaction
            for transaction, settlement in settlements
            if (charge_id := getattr(settlement, "charge_id", None)) is not None
        }

    def _charge(self, charge: Charge, transactions: dict[str, str]) -> dict[str, Any]:
        """One usage entry, in the shape `core.usage.UsageCharge` reads."""
        resource = charge.endpoint_id
        record = self.listing.get(resource)
        domain = record.domain_type if record is not None else None
        if record is not None:
            kind, provider = "market_call", record.provider
        elif resource in ("svc_breed_agent", "merge_models"):
            kind, provider = resource.removeprefix("svc_"), "svc"
        elif resource.startswith("dataset:") or dataset_catalog().find(resource) is not None:
            # Dataset charges are recorded as `dataset:<id>`; the entry names the bare id.
            kind, provider, resource = "dataset", "svc", resource.removeprefix("dataset:")
        else:
            kind, provider = "other", None
        transaction = transactions.get(charge.id)
        replay = self.state.replay(charge.idempotency_key) if transaction is None else None
        if replay is not None:
            # A wallet proxy execution: its stored answer holds the receipt.
            with contextlib.suppress(ValueError, KeyError, TypeError):
                transaction = json.loads(replay.body)["receipt"]["transaction"]
        return {
            "id": charge.id,
            "createdAt": _iso(charge.at),
            "kind": kind,
            "resourceId": resource,
            "provider": provider,
            "domainType": domain,
            "amountUsdc": format_usdc(charge.billed_usdc),
            "chain": charge.chain,
            "network": self.networks.get(charge.chain, charge.chain),
            "protocol": charge.protocol,
            "idempotencyKey": charge.idempotency_key,
            "receipt": transaction,
        }

    async def usage(self, request: Request) -> Response:
        """Oldest first. `since` (Unix seconds or ISO 8601), `cursor` (a previous nextCursor),
        `limit` (1..200, default 50)."""
        self._reader(request)
        query = request.query_params
        unknown = sorted(k[:40] for k in query if k not in ("since", "cursor", "limit"))
        if unknown:
            raise Refusal(400, "INVALID_PARAMS", f"unknown parameter(s): {', '.join(unknown)}")
        limit_text = query.get("limit")
        limit = USAGE_DEFAULT_LIMIT
        if limit_text is not None:
            if not limit_text.isdigit() or not 1 <= int(limit_text) <= USAGE_MAX_LIMIT:
                raise Refusal(
                    400,
                    "INVALID_PARAMS",
                    f"limit must be a whole number from 1 to {USAGE_MAX_LIMIT}",
                    field="limit",
                )
            limit = int(limit_text)
        charges = self.state.charges
        since = query.get("since")
        if since is not None:
            # Compared as the times `createdAt` shows, so a time copied from an entry selects it.
            moment = _since(since)
            charges = [c for c in charges if datetime.fromtimestamp(c.at, UTC) >= moment]
        total = len(charges)
        spent = sum((c.billed_usdc for c in charges), Decimal(0))
        cursor = query.get("cursor")
        if cursor is not None:
            ids = [c.id for c in charges]
            if cursor not in ids:
                raise Refusal(
                    400, "INVALID_PARAMS", "cursor is not one this sandbox gave", field="cursor"
                )
            charges = charges[ids.index(cursor) + 1 :]
        page = charges[:limit]
        more = len(charges) > limit
        transactions = self._transactions() if page else {}
        return JSONResponse(
            {
                "charges": [self._charge(c, transactions) for c in page],
                "total": total,
                "totalSpentUsdc": format_usdc(spent),
                "nextCursor": page[-1].id if more and page else None,
                "balanceUsdc": format_usdc(self.state.balance),
                "serviceId": self.state.service_id,
                "sandbox": True,
            }
        )

    async def policies(self, request: Request) -> Response:
        self._reader(request)
        return JSONResponse(skills.active_policy(self.accounts.skills_md))


def routes(state: SandboxState, listing: Catalog) -> list[Route]:
    r = _AccountRoutes(state, listing)
    return [
        Route("/api/agent/auth/send-otp", r.send_otp, methods=["POST"]),
        Route("/api/agent/auth/verify-otp", r.verify_otp, methods=["POST"]),
        Route("/api/connect/start", r.connect_start, methods=["POST"]),
        Route("/api/connect/complete", r.connect_complete, methods=["POST"]),
        Route("/oauth/token", r.token, methods=["POST"]),
        Route("/.well-known/oauth-authorization-server", r.authorization_server, methods=["GET"]),
        Route("/.well-known/oauth-protected-resource", r.protected_resource, methods=["GET"]),
        Route(
            "/.well-known/oauth-protected-resource/api/mcp", r.protected_resource, methods=["GET"]
        ),
        Route("/api/agent/wallets", r.wallets, methods=["GET"]),
        Route("/api/agent/usage", r.usage, methods=["GET"]),
        Route("/api/agent/policies", r.policies, methods=["GET"]),
    ]
