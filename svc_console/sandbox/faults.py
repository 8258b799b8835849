"""The sandbox's fault switch: failures injected on chosen routes, on purpose and on demand, so the
console's handling of a misbehaving marketplace can be tested (and shown) deterministically.

Kinds of fault:

- `error`: answers a 5xx (`status`, default 503) before the route runs: nothing is executed or
  charged. Body: the usual error shape with `code` (`SERVICE_UNAVAILABLE`, `BAD_GATEWAY`...) and
  `fault` (the fault's id).
- `latency`: waits `delayMs` (default 500) before the route runs.
- `drop`: runs the route (it executes and charges), sends the headers and half of the body, then
  closes the connection: the client cannot know whether it was charged.
- `malformed`: runs the route, then replaces the body with a truncated, invalid one (status and
  headers kept).
- `reprice`: multiplies the runtime price of that request by `factor` (default 2, or 1 when
  `chain` is given), as `SandboxState.reprice_factor` does for every request, and with `chain`
  makes the challenge settle on that chain instead: the payment challenge asks more than the
  dry run estimated, or elsewhere (the wallet proxy answers `PRICE_ABOVE_CEILING`, a market
  route's or an MCP tool's 402 asks for more). Dry runs are never affected.
- `delist`: the provider leaves the allowlisted registry before the route runs: `endpointId`
  removes one endpoint, `provider` all of a provider's; with neither, the endpoint the request
  names (a market route's provider, the proxy body's `endpointId`). Clearing the faults puts them
  back.

Which requests: `routes`, a list of groups (`proxy`: the wallet proxy actions, `market`:
`/api/market/...`, `mcp`, `datasets`, `rest`: endpoints and search, `funding`, `all`) or path
globs starting with `/`; default `["proxy", "market"]`. The switch's own route is never affected.

How often: `count` fires on the next N matching requests then stops; `rate` fires on each matching
request with that probability, drawn from a generator seeded with `seed` (default 0), so a run is
repeatable; both together fire at most `count` times; neither fires on every matching request
until cleared. Several faults may fire on one request: latency, delisting and repricing combine;
an `error` then answers; otherwise the first `drop` or `malformed` mangles the answer.

The switch, authenticated with the sandbox's API key (`Authorization: Bearer sk_live_...`):
`POST /sandbox/faults` with `{"kind", "routes"?, "count"?, "rate"?, "seed"?, "status"?,
"delayMs"?, "factor"?, "chain"?, "endpointId"?, "provider"?}` (201, `{"fault": {...}}`); `GET
/sandbox/faults` (`{"faults": [...], "delisted": [...]}`, each fault with `fired` and
`remaining`); `DELETE /sandbox/faults` (clears all, `{"cleared", "restored"}`); `DELETE
/sandbox/faults/{id}`. From Python: `state.faults.add(kind, ...)`, `state.faults.set(kind, ...)`
(clear, then add), `state.faults.remove(id)`, `state.faults.clear()`, `state.faults.list()`.
"""

from __future__ import annotations

import asyncio
import contextvars
import fnmatch
import itertools
import json
import random
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from svc_console.core.taxonomy import CHAINS
from svc_console.sandbox.web import (
    MAX_BODY_BYTES,
    Refusal,
    bearer,
    error_response,
    json_object,
    same_secret,
)

if TYPE_CHECKING:
    from svc_console.sandbox.catalog import Catalog
    from svc_console.sandbox.state import SandboxState

ADMIN_PATH = "/sandbox/faults"
KINDS = ("error", "latency", "drop", "malformed", "reprice", "delist")
ROUTE_GROUPS: dict[str, tuple[str, ...]] = {
    "proxy": ("/api/wallets/*/actions/*",),
    "market": ("/api/market/*",),
    "mcp": ("/api/mcp", "/api/mcp/*"),
    "datasets": ("/api/datasets", "/api/datasets/*"),
    "rest": ("/api/endpoints/*", "/api/search"),
    "funding": ("/api/funding/*", "/fund/*"),
    "all": ("/*",),
}
DEFAULT_ROUTES = ("proxy", "market")
DEFAULT_STATUS = 503
DEFAULT_DELAY_MS = 500
MAX_DELAY_MS = 60_000
DEFAULT_FACTOR = Decimal(2)
_STATUS_CODES = {
    500: "INTERNAL",
    502: "BAD_GATEWAY",
    503: "SERVICE_UNAVAILABLE",
    504: "GATEWAY_TIMEOUT",
}
# Kind-specific options, so an option given to the wrong kind is refused rather than ignored.
_OPTIONS = {
    "error": {"status"},
    "latency": {"delay_ms"},
    "reprice": {"factor", "chain"},
    "delist": {"endpoint_id", "provider"},
    "drop": set(),
    "malformed": set(),
}
_WIRE_NAMES = {"delayMs": "delay_ms", "endpointId": "endpoint_id"}

# The extra price factor of the request being handled (1 outside a repriced request). Read by
# `SandboxState.reprice_factor`, so a fault reprices exactly the requests it fired on.
_reprice: contextvars.ContextVar[Decimal] = contextvars.ContextVar(
    "svc_sandbox_reprice", default=Decimal(1)
)


# The chain a repriced challenge of the request being handled settles on instead (None: unmoved).
_rechain: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "svc_sandbox_rechain", default=None
)


def reprice_factor() -> Decimal:
    return _reprice.get()


def repriced_chain() -> str | None:
    return _rechain.get()


@dataclass
class Fault:
    """One injected failure and how often it fires. Mutated only under `Faults`' lock."""

    id: str
    kind: str
    routes: tuple[str, ...]
    count: int | None = None
    rate: float | None = None
    seed: int | None = None
    status: int | None = None
    delay_ms: int | None = None
    factor: Decimal | None = None
    chain: str | None = None
    endpoint_id: str | None = None
    provider: str | None = None
    fired: int = 0
    _rng: random.Random | None = field(default=None, repr=False)

    @property
    def remaining(self) -> int | None:
        return None if self.count is None else self.count - self.fired

    def matches(self, path: str) -> bool:
        for route in self.routes:
            patterns = ROUTE_GROUPS.get(route, (route,))
            if any(fnmatch.fnmatchcase(path, pattern) for pattern in patterns):
                return True
        return False

    def as_json(self) -> dict[str, Any]:
        view: dict[str, Any] = {
            "id": self.id,
            "kind": self.kind,
            "routes": list(self.routes),
            "count": self.count,
            "rate": self.rate,
            "seed": self.seed,
            "fired": self.fired,
            "remaining": self.remaining,
        }
        for name, wire in (
            ("status", "status"),
            ("delay_ms", "delayMs"),
            ("factor", "factor"),
            ("chain", "chain"),
            ("endpoint_id", "endpointId"),
            ("provider", "provider"),
        ):
            value = getattr(self, name)
            if value is not None:
                view[wire] = str(value) if isinstance(value, Decimal) else value
        return view


def _int(name: str, value: Any, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{name} must be an integer")
    if isinstance(value, float):
        if not value.is_integer():
            raise ValueError(f"{name} must be an integer")
        value = int(value)
    if not low <= value <= high:
        raise ValueError(f"{name} must be between {low} and {high}")
    return value


def _routes(routes: Iterable[str] | str | None) -> tuple[str, ...]:
    if routes is None:
        return DEFAULT_ROUTES
    if isinstance(routes, str):
        routes = [routes]
    result = []
    for route in routes:
        if not isinstance(route, str) or not (route in ROUTE_GROUPS or route.startswith("/")):
            raise ValueError(
                f"routes must be groups ({', '.join(ROUTE_GROUPS)}) or path globs starting with /"
            )
        result.append(route[:200])
    if not result:
        raise ValueError("routes must not be empty")
    return tuple(result)


class Faults:
    """The faults armed on one sandbox. Thread-safe: the server and a test change it at once."""

    def __init__(self, restore: Callable[[str], None] | None = None):
        self._lock = threading.Lock()
        self._faults: list[Fault] = []
        self._ids = itertools.count(1)
        self._delisted: list[str] = []
        self._restore = restore

    def add(
        self,
        kind: str,
        *,
        routes: Iterable[str] | str | None = None,
        count: int | None = None,
        rate: float | None = None,
        seed: int | None = None,
        status: int | None = None,
        delay_ms: int | None = None,
        factor: Decimal | str | int | float | None = None,
        chain: str | None = None,
        endpoint_id: str | None = None,
        provider: str | None = None,
    ) -> Fault:
        """Arms a fault; raises ValueError naming the option at fault."""
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {', '.join(KINDS)}")
        given = {
            name
            for name, value in (
                ("status", status),
                ("delay_ms", delay_ms),
                ("factor", factor),
                ("chain", chain),
                ("endpoint_id", endpoint_id),
                ("provider", provider),
            )
            if value is not None
        }
        stray = sorted(given - _OPTIONS[kind])
        if stray:
            raise ValueError(f"{stray[0]} does not apply to {kind} faults")
        if count is not None:
            count = _int("count", count, 1, 1_000_000)
        if rate is not None:
            if isinstance(rate, bool) or not isinstance(rate, int | float) or not 0 < rate <= 1:
                raise ValueError("rate must be a number above 0 and at most 1")
            rate = float(rate)
            seed = 0 if seed is None else _int("seed", seed, 0, 2**63 - 1)
        elif seed is not None:
            raise ValueError("seed applies only with a rate")
        if kind == "error":
            status = DEFAULT_STATUS if status is None else _int("status", status, 500, 599)
        if kind == "latency":
            delay_ms = (
                DEFAULT_DELAY_MS
                if delay_ms is None
                else _int("delay_ms", delay_ms, 0, MAX_DELAY_MS)
            )
        if kind == "reprice":
            if chain is not None and chain not in CHAINS:
                raise ValueError(f"chain must be one of {', '.join(CHAINS)}")
            # A moved chain alone keeps the price; a bare reprice doubles it.
            default = Decimal(1) if chain is not None else DEFAULT_FACTOR
            try:
                factor = default if factor is None else Decimal(str(factor))
            except InvalidOperation:
                raise ValueError("factor must be a number") from None
            if not factor.is_finite() or not 0 < factor <= 1000:
                raise ValueError("factor must be above 0 and at most 1000")
        for name, value in (("endpoint_id", endpoint_id), ("provider", provider)):
            if value is not None and (not isinstance(value, str) or not 0 < len(value) <= 200):
                raise ValueError(f"{name} must be a non-empty string")
        with self._lock:
            fault = Fault(
                id=f"flt_{next(self._ids):04d}",
                kind=kind,
                routes=_routes(routes),
                count=count,
                rate=rate,
                seed=seed,
                status=status,
                delay_ms=delay_ms,
                factor=factor,  # type: ignore[arg-type]
                chain=chain,
                endpoint_id=endpoint_id,
                provider=provider,
                _rng=random.Random(seed) if rate is not None else None,
            )
            self._faults.append(fault)
            return fault

    def set(self, kind: str, **options: Any) -> Fault:
        """Clears every fault, then arms this one."""
        self.clear()
        return self.add(kind, **options)

    def remove(self, fault_id: str) -> bool:
        with self._lock:
            before = len(self._faults)
            self._faults = [f for f in self._faults if f.id != fault_id]
            return len(self._faults) != before

    def clear(self) -> list[str]:
        """Disarms every fault and puts back the endpoints delist faults removed."""
        with self._lock:
            self._faults.clear()
            restored, self._delisted = self._delisted, []
        if self._restore is not None:
            for endpoint_id in restored:
                self._restore(endpoint_id)
        return restored

    def list(self) -> list[dict[str, Any]]:
        with self._lock:
            return [fault.as_json() for fault in self._faults]

    @property
    def delisted(self) -> list[str]:
        with self._lock:
            return list(self._delisted)

    def note_delisted(self, endpoint_ids: Iterable[str]) -> None:
        with self._lock:
            for endpoint_id in endpoint_ids:
                if endpoint_id not in self._delisted:
                    self._delisted.append(endpoint_id)

    def fire(self, path: str) -> list[Fault]:
        """The faults that fire on a request to `path`, in the order they were armed; counts and
        random draws are consumed here, once per matching request."""
        fired = []
        with self._lock:
            for fault in self._faults:
                if not fault.matches(path) or fault.remaining == 0:
                    continue
                if fault._rng is not None and fault._rng.random() >= fault.rate:  # type: ignore[operator]
                    continue
                fault.fired += 1
                fired.append(fault)
        return fired


# --- the middleware --------------------------------------------------------------------------


async def _buffered(receive: Receive) -> tuple[bytes | None, Receive]:
    """Reads the request body (when it fits) and returns a `receive` that replays it."""
    chunks, size = [], 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return None, receive
        chunk = message.get("body", b"")
        size += len(chunk)
        chunks.append(chunk)
        if size > MAX_BODY_BYTES:
            return None, receive
        if not message.get("more_body", False):
            break
    body, replayed = b"".join(chunks), False

    async def replay() -> Message:
        nonlocal replayed
        if not replayed:
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return body, replay


def _with_length(headers: list[tuple[bytes, bytes]], length: int) -> list[tuple[bytes, bytes]]:
    kept = [(k, v) for k, v in headers if k.lower() != b"content-length"]
    return [*kept, (b"content-length", str(length).encode())]


class FaultInjector:
    """ASGI middleware that applies `state.faults` to each request."""

    def __init__(self, app: ASGIApp, state: SandboxState, listing: Catalog):
        self.app, self.state, self.catalog = app, state, listing

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if scope["type"] != "http" or path == ADMIN_PATH or path.startswith(ADMIN_PATH + "/"):
            await self.app(scope, receive, send)
            return
        fired = self.state.faults.fire(path)
        if not fired:
            await self.app(scope, receive, send)
            return
        delay = sum(f.delay_ms or 0 for f in fired if f.kind == "latency")
        if delay:
            await asyncio.sleep(delay / 1000)
        for fault in (f for f in fired if f.kind == "delist"):
            receive = await self._delist(fault, scope, receive)
        error = next((f for f in fired if f.kind == "error"), None)
        if error is not None:
            status = error.status or DEFAULT_STATUS
            response = error_response(
                status,
                _STATUS_CODES.get(status, f"HTTP_{status}"),
                f"the sandbox injected this failure (fault {error.id}); nothing was executed",
                fault=error.id,
            )
            await response(scope, receive, send)
            return
        factor = Decimal(1)
        for fault in (f for f in fired if f.kind == "reprice"):
            factor *= fault.factor or DEFAULT_FACTOR
        token = _reprice.set(_reprice.get() * factor) if factor != 1 else None
        moved = next((f.chain for f in fired if f.kind == "reprice" and f.chain), None)
        chain_token = _rechain.set(moved) if moved else None
        try:
            mangle = next((f for f in fired if f.kind in ("drop", "malformed")), None)
            if mangle is None:
                await self.app(scope, receive, send)
            else:
                await self._mangled(mangle.kind, scope, receive, send)
        finally:
            if token is not None:
                _reprice.reset(token)
            if chain_token is not None:
                _rechain.reset(chain_token)

    async def _delist(self, fault: Fault, scope: Scope, receive: Receive) -> Receive:
        if fault.endpoint_id is not None:
            targets = [fault.endpoint_id]
        elif fault.provider is not None:
            targets = self._provider_endpoints(fault.provider)
        else:
            targets, receive = await self._named_by_request(scope, receive)
        for endpoint_id in targets:
            if self.state.in_registry(endpoint_id):
                self.state.remove_from_registry(endpoint_id)
                self.state.faults.note_delisted([endpoint_id])
        return receive

    def _provider_endpoints(self, provider: str) -> list[str]:
        wanted = {provider, f"prov_{provider}"}
        return [r.id for r in self.catalog.endpoints if r.provider in wanted]

    async def _named_by_request(self, scope: Scope, receive: Receive) -> tuple[list[str], Receive]:
        parts = scope["path"].split("/")
        if scope["path"].startswith("/api/market/") and len(parts) > 3 and parts[3]:
            return self._provider_endpoints(parts[3]), receive
        if fnmatch.fnmatchcase(scope["path"], ROUTE_GROUPS["proxy"][0]):
            body, receive = await _buffered(receive)
            try:
                endpoint_id = json.loads(body or b"{}").get("endpointId")
            except (ValueError, AttributeError):
                endpoint_id = None
            return ([endpoint_id] if isinstance(endpoint_id, str) else []), receive
        return [], receive

    async def _mangled(self, kind: str, scope: Scope, receive: Receive, send: Send) -> None:
        start: Message | None = None
        parts: list[bytes] = []

        async def capture(message: Message) -> None:
            nonlocal start
            if message["type"] == "http.response.start":
                start = message
            elif message["type"] == "http.response.body":
                parts.append(message.get("body", b""))

        await self.app(scope, receive, capture)
        if start is None:
            return
        body = b"".join(parts)
        headers = list(start.get("headers", []))
        if kind == "drop":
            # Promise the whole body, send half, and return: the server closes the connection on
            # an answer left incomplete, as a crashed proxy or a cut network would.
            await send({**start, "headers": _with_length(headers, max(len(body), 1))})
            await send(
                {"type": "http.response.body", "body": body[: len(body) // 2], "more_body": True}
            )
            return
        garbled = body[: len(body) // 2] + b'\x00\xff"<sandbox: malformed body>'
        await send({**start, "headers": _with_length(headers, len(garbled))})
        await send({"type": "http.response.body", "body": garbled})


# --- the switch ------------------------------------------------------------------------------


def _require_key(state: SandboxState, request: Request) -> None:
    if not same_secret(bearer(request), state.api_key):
        raise Refusal(
            401,
            "UNAUTHORIZED",
            "missing or invalid API key",
            headers={"WWW-Authenticate": 'Bearer realm="svc-console sandbox"'},
        )


_ALLOWED = {
    "kind",
    "routes",
    "count",
    "rate",
    "seed",
    "status",
    "delayMs",
    "factor",
    "chain",
    "endpointId",
    "provider",
}


def routes(state: SandboxState, listing: Catalog) -> list[Route]:
    """`/sandbox/faults`: arm, list and clear faults."""

    async def arm(request: Request) -> Response:
        _require_key(state, request)
        body = await json_object(request, "INVALID_PARAMS")
        unknown = sorted(str(key)[:40] for key in body if key not in _ALLOWED)
        if unknown:
            raise Refusal(400, "INVALID_PARAMS", f"unknown option(s): {', '.join(unknown)}")
        options = {_WIRE_NAMES.get(key, key): value for key, value in body.items()}
        kind = options.pop("kind", None)
        try:
            fault = state.faults.add(str(kind) if kind is not None else "", **options)
        except ValueError as exc:
            raise Refusal(400, "INVALID_PARAMS", str(exc)) from None
        return JSONResponse({"fault": fault.as_json(), "sandbox": True}, status_code=201)

    async def show(request: Request) -> Response:
        _require_key(state, request)
        return JSONResponse(
            {"faults": state.faults.list(), "delisted": state.faults.delisted, "sandbox": True}
        )

    async def clear(request: Request) -> Response:
        _require_key(state, request)
        cleared = len(state.faults.list())
        restored = state.faults.clear()
        return JSONResponse({"cleared": cleared, "restored": restored, "sandbox": True})

    async def remove(request: Request) -> Response:
        _require_key(state, request)
        fault_id = request.path_params["fault_id"]
        if not state.faults.remove(fault_id):
            raise Refusal(404, "NOT_FOUND", "no fault with that id", faultId=fault_id[:40])
        return JSONResponse({"removed": fault_id, "sandbox": True})

    return [
        Route(ADMIN_PATH, arm, methods=["POST"]),
        Route(ADMIN_PATH, show, methods=["GET"]),
        Route(ADMIN_PATH, clear, methods=["DELETE"]),
        Route(ADMIN_PATH + "/{fault_id}", remove, methods=["DELETE"]),
    ]
