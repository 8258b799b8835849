"""The one place HTTP answers become typed results or `market.errors` exceptions."""

import asyncio
import base64
import binascii
import functools
import json
import ssl
import weakref
from collections.abc import Callable
from decimal import Decimal
from typing import Any, TypeVar

import certifi
import httpx
from pydantic import ValidationError

from svc_console.market import errors

T = TypeVar("T")

# Connection errors before a byte was sent: nothing can have been spent.
_NOT_SENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.UnsupportedProtocol)
# Of those, the ones worth a second try (a busy server's accept queue, a dropped handshake).
_NOT_CONNECTED = (httpx.ConnectError, httpx.ConnectTimeout)
RECONNECT_PAUSE_S = 0.25


# At most this many requests of one client are in httpx at a time; the others wait their turn here.
# httpcore finds a connection for a waiting request by checking every waiting request against every
# connection, each time a request starts or ends: with hundreds waiting in one pool (a burst of
# submissions from many agents) that work grows with the square of the queue, holds the event loop
# for seconds and sends waiting requests past their pool timeout (the intake then rejects them).
# Below httpx's default pool of 100 connections, no request ever waits inside httpcore.
MAX_IN_FLIGHT = 64
_in_flight: weakref.WeakKeyDictionary[httpx.AsyncClient, asyncio.Semaphore] = (
    weakref.WeakKeyDictionary()
)


@functools.cache
def tls() -> ssl.SSLContext:
    """One TLS context for every client, verifying against the CA bundle httpx uses by default:
    each client would otherwise load the bundle again (tens of milliseconds at start-up each)."""
    return ssl.create_default_context(cafile=certifi.where())


class LazyClient:
    """A client of the marketplace whose httpx client is made at its first request: the first
    one imports httpcore's transports and builds the TLS context (about a tenth of a second),
    which a console starting up does not need yet. `_options` are httpx.AsyncClient's."""

    _options: dict[str, Any]

    @functools.cached_property
    def _client(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(verify=tls(), **self._options)

    async def aclose(self) -> None:
        client = self.__dict__.pop("_client", None)
        if client is not None:
            await client.aclose()


def timeout(total_s: float = 30.0) -> httpx.Timeout:
    return httpx.Timeout(total_s, connect=5.0)


# An idle connection is let go well before common servers close theirs (uvicorn after 5 s; httpx
# would keep it 5 s too): a paying request sent on a connection the server closed under it cannot
# be known unsent, so it would end `unknown` instead of being paid.
KEEPALIVE_S = 2.0


def limits() -> httpx.Limits:
    return httpx.Limits(
        max_connections=100, max_keepalive_connections=20, keepalive_expiry=KEEPALIVE_S
    )


def _slots(client: httpx.AsyncClient) -> asyncio.Semaphore:
    slots = _in_flight.get(client)
    if slots is None:
        slots = _in_flight[client] = asyncio.Semaphore(MAX_IN_FLIGHT)
    return slots


# A pooled connection the server closed while it sat idle (its keep-alive timeout) fails the next
# request sent on it in one of these ways, before any answer.
_STALE_CONNECTION = (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError)


async def send(
    client: httpx.AsyncClient,
    method: str,
    url: str,
    *,
    spends_nothing: bool | None = None,
    **kwargs: Any,
) -> httpx.Response:
    """One request. Any request is tried once more when no connection could be made (nothing
    was sent). A request that spends nothing (every GET; a dry run, said by its caller) is also
    sent once more, on a fresh connection, when its connection turns out to have been closed
    under it; anything else that fails on the way is `OutcomeUnknown`, never sent twice."""
    if spends_nothing is None:
        spends_nothing = method in ("GET", "HEAD")
    async with _slots(client):
        for attempt in (1, 2):
            try:
                return await client.request(method, url, **kwargs)
            except _NOT_SENT as exc:
                if attempt == 1 and isinstance(exc, _NOT_CONNECTED):
                    await asyncio.sleep(RECONNECT_PAUSE_S)
                    continue
                raise errors.ServiceUnreachable(
                    f"cannot reach {client.base_url.host}: {exc}"
                ) from None
            except _STALE_CONNECTION as exc:
                if spends_nothing and attempt == 1:
                    continue
                failure: httpx.TransportError = exc
            except httpx.TransportError as exc:
                failure = exc
            raise errors.OutcomeUnknown(
                f"{client.base_url.host} did not answer ({type(failure).__name__})"
            ) from None
    raise AssertionError("unreachable")


def _error_body(response: httpx.Response) -> dict[str, Any]:
    try:
        body = response.json()
    except ValueError:
        return {}
    error = body.get("error") if isinstance(body, dict) else None
    return error if isinstance(error, dict) else {}


def _decimal(value: Any) -> Decimal | None:
    try:
        return Decimal(str(value)) if value is not None else None
    except ArithmeticError:
        return None


def _payment_required(response: httpx.Response, error: dict[str, Any]) -> dict[str, Any]:
    """The x402 challenge of a 402: the `PAYMENT-REQUIRED` header (base64 JSON), else the copy
    in the error body."""
    header = response.headers.get("payment-required")
    if header:
        try:
            decoded = json.loads(base64.b64decode(header.strip(), validate=True))
        except (ValueError, binascii.Error):
            decoded = None
        if isinstance(decoded, dict):
            return decoded
    body = error.get("paymentRequired")
    if isinstance(body, dict):
        return body
    raise errors.MalformedResponse("a 402 answer without readable payment requirements")


def raise_for_error(response: httpx.Response) -> None:
    if response.is_success:
        return
    error = _error_body(response)
    code = str(error.get("code") or f"HTTP_{response.status_code}")
    message = str(error.get("message") or response.reason_phrase or "request failed")
    status = response.status_code
    if status == 401:
        raise errors.Unauthorized("the service refused the credentials (401)")
    if code == "WALLET_UNFUNDED":
        raise errors.WalletUnfunded(
            message,
            funding_url=str(error.get("fundingUrl") or ""),
            balance=_decimal(error.get("balanceUsdc")),
            required=_decimal(error.get("requiredUsdc")) or Decimal(0),
        )
    if code == "NOT_IN_REGISTRY":
        raise errors.NotInRegistry(message)
    if code == "INVALID_INPUTS":
        fields = error.get("fields")
        raise errors.InvalidInputs(message, fields if isinstance(fields, list) else [])
    if status == 402 and code in ("PAYMENT_REQUIRED", "PAYMENT_INVALID"):
        required = _payment_required(response, error)
        if code == "PAYMENT_INVALID":
            raise errors.PaymentInvalid(message, required, str(error.get("reason") or ""))
        raise errors.PaymentRequired(message, required)
    if code == "INVALID_PARAMS":
        fields = error.get("fields")
        raise errors.InvalidParams(
            f"{message} ({status})", fields if isinstance(fields, list) else []
        )
    if code == "PUBLISH_IN_PROGRESS":
        raise errors.PublishInProgress(message)
    if code == "PRICE_ABOVE_CEILING":
        raise errors.PriceAboveCeiling(
            message,
            price=_decimal(error.get("priceUsdc")) or Decimal(0),
            chain=str(error.get("chain") or ""),
        )
    if status == 404 and "datasetId" in error:
        raise errors.DatasetNotFound(message)
    if status == 404:
        raise errors.EndpointNotFound(message)
    raise errors.UpstreamError(f"{message} ({status})", code=code)


def parse(response: httpx.Response, build: Callable[[Any], T]) -> T:
    raise_for_error(response)
    try:
        return build(response.json())
    except (ValueError, ValidationError, TypeError, KeyError) as exc:
        raise errors.MalformedResponse(
            f"unexpected answer from {response.url.path}: {type(exc).__name__}"
        ) from None
