"""Client of the agent wallet proxy at {wallet_api_base} (bearer apiToken).

The proxy is the only thing that makes money move for market calls. `dry_run` spends nothing;
`pay` sends a body the signer made (`market.signer.ApprovedBody`, the only `approved: true`), only
for the broker's executor after a decision is committed (`market.proxy_payer`), always with the
mandate's ceiling and chain and an idempotency key.
"""

from __future__ import annotations

from decimal import Decimal
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import quote

from svc_console.core.models import DryRun, FundingCheckout, Outcome
from svc_console.core.money import format_usdc
from svc_console.market import http
from svc_console.market.client import HttpClient

if TYPE_CHECKING:
    from svc_console.market.signer import ApprovedBody

Protocol = Literal["x402", "mpp"]
_ACTIONS: dict[str, str] = {"x402": "x402/fetch", "mpp": "mpp/pay"}


class WalletClient:
    def __init__(
        self,
        api_base: str,
        username: str,
        api_token: str,
        *,
        timeout_s: float = 30.0,
    ):
        self._prefix = f"/api/wallets/{quote(username, safe='')}/actions"
        # On every request's path (a dry run per decision): the lighter client (market.client).
        self._client = HttpClient(
            api_base, headers={"Authorization": f"Bearer {api_token}"}, timeout_s=timeout_s
        )

    async def aclose(self) -> None:
        await self._client.aclose()

    async def dry_run(self, protocol: Protocol, endpoint_id: str, inputs: dict[str, Any]) -> DryRun:
        body = {"endpointId": endpoint_id, "inputs": inputs, "dryRun": True, "approved": False}
        response = await self._client.send(
            "POST", self._action(protocol), json_body=body, spends_nothing=True
        )
        return http.parse(response, DryRun.model_validate)

    async def pay(self, approved: ApprovedBody) -> Outcome:
        """Send what the signer approved (its ceiling and chain within the mandate); the proxy
        refuses (PriceAboveCeiling) rather than pay above the ceiling or on another chain."""
        response = await self._client.send(
            "POST",
            self._action(approved.protocol),
            json_body=approved.body,
            headers={"Idempotency-Key": approved.idempotency_key},
        )
        return http.parse(response, Outcome.model_validate)

    async def funding_checkout(self, amount_usdc: Decimal | None = None) -> FundingCheckout:
        """`POST /api/funding/checkout`: a checkout address the operator opens to top the wallet
        up (after a `WALLET_UNFUNDED`). Spends nothing."""
        body = {"amountUsdc": format_usdc(amount_usdc)} if amount_usdc is not None else {}
        response = await self._client.send("POST", "/api/funding/checkout", json_body=body)
        return http.parse(response, FundingCheckout.model_validate)

    def _action(self, protocol: str) -> str:
        return f"{self._prefix}/{_ACTIONS[protocol]}"
