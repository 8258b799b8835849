"""The two ways the console makes money move, behind one interface.

A market call is paid by the agent wallet proxy (`WalletClient.pay`: the proxy is told the
approved ceiling and chain and refuses to pay more); a charged MCP tool (`get_dataset`,
`svc_breed_agent`, `merge_models`) by a payment the console signs itself (`PaidTools.pay`: the
challenge is checked against the approval before it is signed). Both take an `Order` and either
return the `Outcome` or raise a `market.errors` exception the executor reads alike:

- `WalletUnfunded`: nothing was paid; the wallet needs funds;
- `PriceAboveCeiling`: the price or the chain asked is not the approved one; nothing was paid;
- `ServiceUnreachable`: nothing reached the service, nothing was charged;
- `OutcomeUnknown`, `MalformedResponse`: the call may have been charged;
- any other `MarketError`: refused, nothing was charged.

Quoting is not part of it: a market call is priced by the proxy's dry run of an endpoint the REST
API describes, a tool by its own payment challenge, and the two share no shape before a price.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Literal, Protocol

from svc_console.core.models import Kind, Outcome


@dataclass(frozen=True)
class Order:
    """One approved purchase, as a payer carries it out."""

    kind: Kind
    endpoint_id: str | None  # a market call's endpoint, as inspected
    dataset_id: str | None  # get_dataset's dataset
    inputs: dict[str, Any]
    protocol: Literal["x402", "mpp"]  # the protocol the estimate was priced in
    chain: str  # the approved chain
    ceiling_usdc: Decimal  # the most the approval lets be paid
    free: bool  # priced at nothing: no payment to sign
    idempotency_key: str  # one per attempt: never paid twice


class Payer(Protocol):
    async def pay(self, order: Order) -> Outcome:
        """Carry out the order, paying at most its ceiling on its chain, or raise why not."""
        ...
