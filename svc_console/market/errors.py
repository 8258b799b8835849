"""What can go wrong talking to the marketplace, one exception per thing a caller acts on.

Messages may quote the service; they are untrusted text and are shown through `core.sanitize`.
None of them ever carries a credential: requests are never included in an exception.
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from svc_console.core.mandate_check import Offer
    from svc_console.core.models import EndpointRecord


class MarketError(Exception):
    """Base: the call did not give a usable answer."""

    code = "MARKET_ERROR"

    def __init__(self, message: str, *, code: str | None = None):
        super().__init__(message)
        self.message = message
        if code:
            self.code = code


class ServiceUnreachable(MarketError):
    """Nothing reached the service (connection refused, DNS): safe to say nothing was spent."""

    code = "UNREACHABLE"


class OutcomeUnknown(MarketError):
    """The request was sent but no answer came back: it may or may not have been charged."""

    code = "NO_ANSWER"


class Unauthorized(MarketError):
    code = "UNAUTHORIZED"


class EndpointNotFound(MarketError):
    code = "NOT_FOUND"


class NotInRegistry(MarketError):
    """The wallet proxy only dispatches to endpoints of its allowlisted registry."""

    code = "NOT_IN_REGISTRY"


class InvalidInputs(MarketError):
    code = "INVALID_INPUTS"

    def __init__(self, message: str, fields: list[dict[str, str]]):
        super().__init__(message)
        self.fields = fields


class WalletUnfunded(MarketError):
    code = "WALLET_UNFUNDED"

    def __init__(self, message: str, funding_url: str, balance: Decimal | None, required: Decimal):
        super().__init__(message)
        self.funding_url, self.balance, self.required = funding_url, balance, required


class PriceAboveCeiling(MarketError):
    """The runtime challenge asked for more than the approved ceiling (or another chain)."""

    code = "PRICE_ABOVE_CEILING"

    def __init__(self, message: str, price: Decimal, chain: str):
        super().__init__(message)
        self.price, self.chain = price, chain


class OutsideMandate(MarketError):
    """The signer refused a payment its mandate does not cover; nothing was signed.
    `differences` say how, in words; `offer` is what was asked (the figures the operator would
    approve again; None when the challenge could not be read); `final`: no approval could cover
    it (a compute tool asked other than its fixed price); `endpoint`: the endpoint's record as it
    reads now, when that is what moved (the wallet proxy's path)."""

    code = "OUTSIDE_MANDATE"

    def __init__(
        self,
        differences: Sequence[str],
        offer: Offer | None = None,
        *,
        final: bool = False,
        endpoint: EndpointRecord | None = None,
    ):
        super().__init__("; ".join(differences) or "outside the mandate")
        self.differences, self.offer, self.final = list(differences), offer, final
        self.endpoint = endpoint


class UpstreamError(MarketError):
    """The service or the provider failed (5xx, or a refusal not listed above)."""


class MalformedResponse(MarketError):
    code = "MALFORMED"


class InvalidParams(UpstreamError):
    """The service refused the arguments of a catalogue call (400 `INVALID_PARAMS`); `fields`
    pairs each argument with what is wrong (`[{"argument", "problem"}]`)."""

    code = "INVALID_PARAMS"

    def __init__(self, message: str, fields: list[dict[str, str]]):
        super().__init__(message)
        self.fields = fields


class DatasetNotFound(MarketError):
    """No published dataset has that id."""

    code = "NOT_FOUND"


class PublishInProgress(MarketError):
    """The listing is already being processed; poll its publish status."""

    code = "PUBLISH_IN_PROGRESS"


class PaymentRequired(MarketError):
    """A paid resource answered 402 with an x402 challenge. `required` is the decoded
    `PAYMENT-REQUIRED` object (`x402Version`, `resource`, `accepts`): sign one of `accepts` and
    retry with a `PAYMENT-SIGNATURE`. Nothing was charged."""

    code = "PAYMENT_REQUIRED"

    def __init__(self, message: str, required: dict):
        super().__init__(message)
        self.required = required

    @property
    def accepts(self) -> list[dict]:
        accepts = self.required.get("accepts")
        return [a for a in accepts if isinstance(a, dict)] if isinstance(accepts, list) else []

    @property
    def resource(self) -> str | None:
        resource = self.required.get("resource")
        return resource.get("url") if isinstance(resource, dict) else None

    @property
    def amount_usdc(self) -> Decimal | None:
        """The first offer's amount in USDC (the challenge states atomic units, 6 decimals)."""
        for offer in self.accepts:
            amount = offer.get("amount", offer.get("maxAmountRequired"))
            if isinstance(amount, str) and amount.isdigit():
                return Decimal(amount).scaleb(-6)
        return None

    @property
    def network(self) -> str | None:
        return next((str(a["network"]) for a in self.accepts if "network" in a), None)


class PaymentInvalid(PaymentRequired):
    """A payment was sent and refused; `reason` is the service's one-word cause
    (`invalid_signature`, `wrong_amount`, `expired`, `nonce_reused`...). Nothing was charged."""

    code = "PAYMENT_INVALID"

    def __init__(self, message: str, required: dict, reason: str):
        super().__init__(message, required)
        self.reason = reason
