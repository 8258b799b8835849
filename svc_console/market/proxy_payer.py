"""A market call paid through the agent wallet proxy, within its mandate (a `market.payer.Payer`).

The proxy signs the provider's payment itself and does not know what the operator was quoted, so
the console looks: the endpoint's record is read again (never from a cache) and the signer
compares its provider, chains, protocol and price with the mandate before it makes the one
`approved: true` body there is; the body carries the mandate's ceiling and chain, above or off
which the proxy refuses to pay.
"""

from __future__ import annotations

from svc_console.core.models import Outcome
from svc_console.market.payer import Order
from svc_console.market.rest import MarketClient
from svc_console.market.signer import Signer
from svc_console.market.wallet import WalletClient


class ProxyPayer:
    def __init__(self, wallet: WalletClient, rest: MarketClient, signer: Signer):
        self.wallet, self.rest, self.signer = wallet, rest, signer

    async def pay(self, order: Order) -> Outcome:
        mandate = order.mandate
        record = await self.rest.endpoint(mandate.endpoint_id or "")
        approved = self.signer.proxy_body(mandate, record, order.inputs, order.idempotency_key)
        return await self.wallet.pay(approved)
