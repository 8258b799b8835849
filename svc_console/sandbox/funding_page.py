"""`GET`/`POST /fund/{username}`: the sandbox's funding page, an HTML form that credits the
make-believe balance (no real money moves). A funding checkout (`sandbox.market_routes`) links here
with the amount filled in; both keep to the same limits.
"""

from __future__ import annotations

import html
from decimal import Decimal
from typing import TYPE_CHECKING
from urllib.parse import parse_qs

from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route

from svc_console.core.money import format_usdc, parse_usdc
from svc_console.sandbox.web import page, read_body, same_secret

if TYPE_CHECKING:
    from svc_console.sandbox.state import SandboxState

FUNDING_DEFAULT = Decimal(10)
FUNDING_MAX = Decimal(10_000)


class _FundingPage:
    def __init__(self, state: SandboxState):
        self.state = state

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


def routes(state: SandboxState) -> list[Route]:
    funding = _FundingPage(state)
    return [
        Route("/fund/{username}", funding.fund_page, methods=["GET"]),
        Route("/fund/{username}", funding.fund, methods=["POST"]),
    ]
