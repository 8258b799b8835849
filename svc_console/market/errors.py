"""What can go wrong talking to the marketplace, one exception per thing a caller acts on.

Messages may quote the service; they are untrusted text and are shown through `core.sanitize`.
None of them ever carries a credential: requests are never included in an exception.
"""

from decimal import Decimal


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


class UpstreamError(MarketError):
    """The service or the provider failed (5xx, or a refusal not listed above)."""


class MalformedResponse(MarketError):
    code = "MALFORMED"
