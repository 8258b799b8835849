"""The sandbox marketplace as an ASGI application: the REST catalogue (health, endpoints, skill.md,
search) served here, and every other route module of the sandbox assembled behind the fault
middleware, answering exactly the wire contract the clients in `svc_console.market` speak.

Answers are built with the domain models of `svc_console.core.models`, so what the sandbox sends is
what the console parses. docs/sandbox.md lists the choices made where SPEC.md is silent.
"""

from __future__ import annotations

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp

from svc_console.core.models import EndpointRecord
from svc_console.sandbox import (
    account_routes,
    balance_routes,
    catalogue_routes,
    compute_routes,
    fault_injector,
    fault_routes,
    funding_page,
    market_routes,
    mcp,
    wallet_proxy,
)
from svc_console.sandbox.catalog import Catalog, catalog, skill_markdown
from svc_console.sandbox.queries import (
    MARKET_DEFAULT_LIMIT,
    MARKET_MAX_LIMIT,
    InvalidArguments,
    MarketQuery,
    parse_arguments,
    search_market,
)
from svc_console.sandbox.state import SandboxState
from svc_console.sandbox.web import (
    Quiet,
    Refusal,
    bearer,
    json_object,
    on_crash,
    on_http_error,
    on_refusal,
)

SEARCH_DEFAULT_LIMIT = MARKET_DEFAULT_LIMIT  # POST /api/search: sandbox.queries.MarketQuery
SEARCH_MAX_LIMIT = MARKET_MAX_LIMIT

HEALTH = {"sandbox": True, "service": "svc-console sandbox", "realMoney": False}


class _Sandbox:
    def __init__(self, state: SandboxState, listing: Catalog):
        self.state, self.catalog = state, listing

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


def create_app(state: SandboxState, listing: Catalog | None = None) -> ASGIApp:
    """The sandbox marketplace for `state`, listing `listing` (default: the seeded catalogue)."""
    sandbox = _Sandbox(state, listing or catalog())
    routes = [
        Route("/", sandbox.health, methods=["GET"]),
        Route("/api/health", sandbox.health, methods=["GET"]),
        Route("/api/endpoints/{endpoint_id}", sandbox.endpoint, methods=["GET"]),
        Route("/api/endpoints/{endpoint_id}/skill.md", sandbox.skill, methods=["GET"]),
        Route("/api/search", sandbox.search, methods=["POST"]),
        *wallet_proxy.routes(state, sandbox.catalog),
        *funding_page.routes(state),
        *account_routes.routes(state, sandbox.catalog),
        *compute_routes.routes(state, sandbox.catalog),
        *mcp.routes(state, sandbox.catalog),
        *catalogue_routes.routes(state, sandbox.catalog),
        *market_routes.routes(state, sandbox.catalog),
        *fault_routes.routes(state, sandbox.catalog),
        *balance_routes.routes(state),
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
