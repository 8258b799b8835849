"""The two ways the console makes money move, behind one interface, each within the approval's
mandate (core/mandate.py) and through the one signer (market/signer.py).

A market call is paid by the agent wallet proxy (`ProxyPayer`: the endpoint's record is read
again, the signer makes the `approved: true` body with the mandate's ceiling and chain, and the
proxy refuses to pay more); a charged MCP tool (`get_dataset`, `svc_breed_agent`, `merge_models`)
by a payment the signer makes itself (`PaidTools.pay`: the challenge is compared with the mandate
before it is signed). Both take an `Order` and either return the `Outcome` or raise a
`market.errors` exception the executor reads alike:

- `WalletUnfunded`: nothing was paid; the wallet needs funds;
- `OutsideMandate`: what is asked now is not what was approved; nothing was signed;
- `PriceAboveCeiling`: the proxy was asked more, or on another chain; nothing was paid;
- `ServiceUnreachable`: nothing reached the service, nothing was charged;
- `OutcomeUnknown`, `MalformedResponse`: the call may have been charged;
- any other `MarketError`: refused, nothing was charged.

Quoting is not part of it: a market call is priced by the proxy's dry run of an endpoint the REST
API describes, a tool by its own payment challenge, and the two share no shape before a price.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from svc_console.core.mandate import Mandate
from svc_console.core.models import Outcome


@dataclass(frozen=True)
class Order:
    """One approved purchase, as a payer carries it out: what, to whom and how much are the
    mandate's."""

    mandate: Mandate
    inputs: dict[str, Any]  # the request's, which the mandate names by their digest
    free: bool  # priced at nothing: no payment to sign
    idempotency_key: str  # one per attempt: never paid twice


class Payer(Protocol):
    async def pay(self, order: Order) -> Outcome:
        """Carry out the order within its mandate, or raise why not."""
        ...
