"""The marketplace as the broker sees it: the REST client, the wallet proxy client, the MCP
client, the charged MCP tools (see market.paid_tools), and the one signer every payment goes
through (market/signer.py); `payer` names which way pays for a kind of request (see
market.payer)."""

from __future__ import annotations

from dataclasses import dataclass, field

import httpx

from svc_console.core.models import Kind
from svc_console.market.account import AccountClient
from svc_console.market.mcp import McpClient
from svc_console.market.paid_tools import PaidTools
from svc_console.market.payer import Payer
from svc_console.market.proxy_payer import ProxyPayer
from svc_console.market.rest import MarketClient
from svc_console.market.signer import Signer
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
    # Quotes and pays the charged MCP tools, through the signer.
    tools: PaidTools
    signer: Signer
    # Every credential this console holds (API key, wallet token; the wallet key by its digest,
    # which the signer alone holds): what no agent's submission may carry, whatever the field.
    secrets: tuple[str, ...] = field(default=(), repr=False)

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
        signer: Signer,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> Marketplace:
        """`signer`: the one that signs every payment (with the account wallet's key, when
        there is one: without, the charged MCP tools are refused with a reason)."""
        rest = MarketClient(base_url, api_key, transport=transport)
        mcp = McpClient(f"{base_url}/api/mcp", credential=api_key, transport=transport)
        known = (api_key, api_token)
        return cls(
            base_url=base_url,
            wallet_api_base=wallet_api_base,
            sandbox=sandbox,
            rest=rest,
            wallet=WalletClient(wallet_api_base, username, api_token),
            mcp=mcp,
            account=AccountClient(base_url, api_key=api_key, transport=transport),
            tools=PaidTools(mcp, rest, signer),
            signer=signer,
            secrets=tuple(secret for secret in known if secret),
        )

    def payer(self, kind: Kind) -> Payer:
        """Who pays for a request of this kind: the wallet proxy for a market call, the
        console's own signature for a charged MCP tool. Looked up at each payment."""
        if kind == Kind.market_call:
            return ProxyPayer(self.wallet, self.rest, self.signer)
        return self.tools

    async def aclose(self) -> None:
        await self.rest.aclose()
        await self.wallet.aclose()
        await self.account.aclose()
        await self.mcp.aclose()
