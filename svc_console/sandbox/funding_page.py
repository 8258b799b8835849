"""Funding the sandbox wallet: `GET`/`POST /fund/{username}`, the funding page, an HTML form that
credits the make-believe balance (no real money moves), and the funding checkout that links to it.

`POST /api/funding/checkout` (the API key, or a wallet `apiToken`; body optional:
`{"amountUsdc"?: "10", "username"?}`) starts a funding checkout: `{"checkoutUrl", "fundingUrl",
"username", "amountUsdc", "balanceUsdc", "sandbox": true}`. The checkout address is the
sandbox's funding page for that wallet with the amount filled in; its form credits the balance,
after which calls refused with `WALLET_UNFUNDED` go through.
"""

from __future__ import annotations

import html
from decimal import Decimal
from typing import TYPE_CHECKING
from urllib.parse import parse_qs, quote

from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route

from svc_console.core.models import FundingCheckout
from svc_console.core.money import format_usdc, parse_usdc
from svc_console.sandbox.web import Refusal, bearer, json_object, page, read_body, same_secret

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
        note = ""
        top_up = self.state.top_up
        if top_up is not None and amount < top_up:
            note = (
                f"<p>The request waiting lacks {html.escape(shown)} USDC; this sandbox offers"
                f" {html.escape(format_usdc(top_up))} so the requests after it are paid too.</p>\n"
            )
            shown = format_usdc(top_up)
        return page("Fund the sandbox wallet", self._form(self.state.balance, note, amount=shown))

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

    async def checkout(self, request: Request) -> Response:
        state, token = self.state, bearer(request)
        owner = state.accounts.wallet_owner(token)
        if owner is None and state.accounts.api_key_agent(token) is None:
            raise Refusal(
                401,
                "UNAUTHORIZED",
                "missing or invalid API key or wallet API token",
                headers={"WWW-Authenticate": 'Bearer realm="svc-console sandbox"'},
            )
        body = await json_object(request, "INVALID_REQUEST", empty_ok=True)
        unknown = sorted(str(key)[:40] for key in body if key not in ("amountUsdc", "username"))
        if unknown:
            raise Refusal(400, "INVALID_REQUEST", f"unknown field(s): {', '.join(unknown)}")
        username = body.get("username", owner or state.username)
        if not isinstance(username, str) or not state.accounts.has_wallet(username):
            raise Refusal(404, "NOT_FOUND", "this sandbox has no wallet by that name")
        if owner is not None and username != owner:
            raise Refusal(403, "NOT_YOUR_WALLET", "this token does not belong to that wallet")
        amount = FUNDING_DEFAULT
        if body.get("amountUsdc") is not None:
            try:
                amount = parse_usdc(body["amountUsdc"])
            except ValueError as exc:
                raise Refusal(400, "INVALID_REQUEST", f"amountUsdc {exc}") from None
            if not 0 < amount <= FUNDING_MAX:
                raise Refusal(
                    400, "INVALID_REQUEST", f"amountUsdc must be above 0 and at most {FUNDING_MAX}"
                )
        base = (state.base_url or str(request.base_url)).rstrip("/")
        funding_url = f"{base}/fund/{quote(username, safe='')}"
        checkout = FundingCheckout(
            checkout_url=f"{funding_url}?amount={format_usdc(amount)}",
            funding_url=funding_url,
            username=username,
            amount_usdc=amount,
            balance_usdc=state.balance,
        )
        return JSONResponse({**checkout.model_dump(mode="json"), "sandbox": True}, status_code=201)


def routes(state: SandboxState) -> list[Route]:
    funding = _FundingPage(state)
    return [
        Route("/fund/{username}", funding.fund_page, methods=["GET"]),
        Route("/fund/{username}", funding.fund, methods=["POST"]),
        Route("/api/funding/checkout", funding.checkout, methods=["POST"]),
    ]
