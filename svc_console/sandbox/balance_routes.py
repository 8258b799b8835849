"""`/sandbox/balance`: reads and sets the fake wallet's balance, authenticated with the sandbox's
own API key. The marketplace has no such route; the demo and tests fill or empty the wallet of a
sandbox served by another process this way.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from svc_console.core.money import parse_usdc
from svc_console.sandbox.fault_routes import require_admin_key
from svc_console.sandbox.web import Refusal, json_object

if TYPE_CHECKING:
    from svc_console.sandbox.state import SandboxState

BALANCE_PATH = "/sandbox/balance"


def routes(state: SandboxState) -> list[Route]:
    """`GET` answers `{balanceUsdc}`; `PUT {balanceUsdc, topUpUsdc?}` sets it (and the least
    the funding page offers to add) and answers the same."""

    async def show(request: Request) -> Response:
        require_admin_key(state, request)
        return JSONResponse({"balanceUsdc": str(state.balance), "sandbox": True})

    async def set_balance(request: Request) -> Response:
        require_admin_key(state, request)
        body = await json_object(request, "INVALID_PARAMS")
        try:
            amount = parse_usdc(body.get("balanceUsdc"))
        except ValueError as exc:
            raise Refusal(400, "INVALID_PARAMS", f"balanceUsdc {exc}") from None
        top_up = body.get("topUpUsdc")
        try:
            top_up = None if top_up is None else parse_usdc(top_up)
        except ValueError as exc:
            raise Refusal(400, "INVALID_PARAMS", f"topUpUsdc {exc}") from None
        state.set_balance(amount)
        state.top_up = top_up
        return JSONResponse({"balanceUsdc": str(state.balance), "sandbox": True})

    return [
        Route(BALANCE_PATH, show, methods=["GET"]),
        Route(BALANCE_PATH, set_balance, methods=["PUT"]),
    ]
