"""`/sandbox/faults`: the switch that arms, lists and clears the faults of `sandbox.faults`,
authenticated with the sandbox's own API key.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from svc_console.sandbox.faults import ADMIN_PATH
from svc_console.sandbox.web import Refusal, bearer, json_object, same_secret

if TYPE_CHECKING:
    from svc_console.sandbox.catalog import Catalog
    from svc_console.sandbox.state import SandboxState

# The switch's JSON spells three options in camelCase; `Faults.add` takes them in snake_case.
_WIRE_NAMES = {"delayMs": "delay_ms", "endpointId": "endpoint_id", "dryRun": "dry_run"}


def require_admin_key(state: SandboxState, request: Request) -> None:
    """The sandbox's switchboard answers its own API key alone, not the keys logins issued."""
    if not same_secret(bearer(request), state.api_key):
        raise Refusal(
            401,
            "UNAUTHORIZED",
            "missing or invalid API key",
            headers={"WWW-Authenticate": 'Bearer realm="svc-console sandbox"'},
        )


_ALLOWED = {
    "kind",
    "routes",
    "count",
    "rate",
    "seed",
    "status",
    "delayMs",
    "factor",
    "chain",
    "endpointId",
    "provider",
    "dryRun",
}


def routes(state: SandboxState, listing: Catalog) -> list[Route]:
    """`/sandbox/faults`: arm, list and clear faults."""

    async def arm(request: Request) -> Response:
        require_admin_key(state, request)
        body = await json_object(request, "INVALID_PARAMS")
        unknown = sorted(str(key)[:40] for key in body if key not in _ALLOWED)
        if unknown:
            raise Refusal(400, "INVALID_PARAMS", f"unknown option(s): {', '.join(unknown)}")
        options = {_WIRE_NAMES.get(key, key): value for key, value in body.items()}
        kind = options.pop("kind", None)
        try:
            fault = state.faults.add(str(kind) if kind is not None else "", **options)
        except ValueError as exc:
            raise Refusal(400, "INVALID_PARAMS", str(exc)) from None
        return JSONResponse({"fault": fault.as_json(), "sandbox": True}, status_code=201)

    async def show(request: Request) -> Response:
        require_admin_key(state, request)
        return JSONResponse(
            {"faults": state.faults.list(), "delisted": state.faults.delisted, "sandbox": True}
        )

    async def clear(request: Request) -> Response:
        require_admin_key(state, request)
        cleared = len(state.faults.list())
        restored = state.faults.clear()
        return JSONResponse({"cleared": cleared, "restored": restored, "sandbox": True})

    async def remove(request: Request) -> Response:
        require_admin_key(state, request)
        fault_id = request.path_params["fault_id"]
        if not state.faults.remove(fault_id):
            raise Refusal(404, "NOT_FOUND", "no fault with that id", faultId=fault_id[:40])
        return JSONResponse({"removed": fault_id, "sandbox": True})

    return [
        Route(ADMIN_PATH, arm, methods=["POST"]),
        Route(ADMIN_PATH, show, methods=["GET"]),
        Route(ADMIN_PATH, clear, methods=["DELETE"]),
        Route(ADMIN_PATH + "/{fault_id}", remove, methods=["DELETE"]),
    ]
