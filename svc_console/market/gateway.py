"""The marketplace as the broker sees it: the REST client and the wallet proxy client together."""

from dataclasses import dataclass

import httpx

from svc_console.market.rest import MarketClient
from svc_console.market.wallet import WalletClient


@dataclass
class Marketplace:
    base_url: str
    wallet_api_base: str
    sandbox: bool
    rest: MarketClient
    wallet: WalletClient

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
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> "Marketplace":
        return cls(
            base_url=base_url,
            wallet_api_base=wallet_api_base,
            sandbox=sandbox,
            rest=MarketClient(base_url, api_key, transport=transport),
            wallet=WalletClient(wallet_api_base, username, api_token, transport=transport),
        )

    async def aclose(self) -> None:
        await self.rest.aclose()
        await self.wallet.aclose()
