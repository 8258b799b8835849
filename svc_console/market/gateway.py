"""The marketplace as the broker sees it: the REST client, the wallet proxy client, the MCP
client, and the account wallet's key for the charged MCP tools (see broker.paid_tools)."""

from __future__ import annotations

from dataclasses import dataclass, field

import httpx

from svc_console.market.account import AccountClient
from svc_console.market.mcp import McpClient
from svc_console.market.rest import MarketClient
from svc_console.market.wallet import WalletClient


@dataclass
class Marketplace:
    base_url: str
    wallet_api_base: str
    sandbox: bool
    rest: MarketClient
    wallet: WalletClient
    mcp: McpClient
    # The agent's wallets and balance (the wallet screen) and the onboarding flows.
    account: AccountClient
    payer_key: str | None = field(default=None, repr=False)

    @classmethod
    def connect(
        cls,
        *,
        base_url: str,
        wallet_api_base: str,
        api_key: str,
        username: str,
        api_token: str,
        sandbox: bool,
        payer_key: str | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> Marketplace:
        """`payer_key`: the account wallet's EVM key, which signs the charged MCP tools'
        payments; without one those requests are refused with a reason."""
        return cls(
            base_url=base_url,
            wallet_api_base=wallet_api_base,
            sandbox=sandbox,
            rest=MarketClient(base_url, api_key, transport=transport),
            wallet=WalletClient(wallet_api_base, username, api_token, transport=transport),
            mcp=McpClient(f"{base_url}/api/mcp", credential=api_key, transport=transport),
            account=AccountClient(base_url, api_key=api_key, transport=transport),
            payer_key=payer_key,
        )

    async def aclose(self) -> None:
        await self.rest.aclose()
        await self.wallet.aclose()
        await self.account.aclose()
        await self.mcp.aclose()
