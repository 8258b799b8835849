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
- `overbill`: the call is paid as priced, but the account's usage history (and balance) bills
  `factor` times that (default 2): a billing error of the service's, which the console's
  reconciliation of usage against its approvals must flag. It fires when a charge is made (not on
  a dry run or a 402 challenge), so `count: 1` overbills exactly one paid call.
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
until cleared.

Dry runs and payments: on the wallet proxy a call is a dry run (`dryRun: true`, the console's
intake) or a payment. A fault with a `count` is aimed at payments: a dry run neither fires it nor
spends its count, so `{"kind": "error", "count": 1}` armed before a request is submitted fails
that request's payment, not its dry run. `dryRun: true` aims a fault at dry runs instead (only
them), `dryRun: false` at payments whatever its count; a fault with neither a count nor `dryRun`
meets both (weather). Off the wallet proxy no request is a dry run.

The switch, authenticated with the sandbox's API key (`Authorization: Bearer sk_live_...`):
`POST /sandbox/faults` with `{"kind", "routes"?, "count"?, "rate"?, "seed"?, "dryRun"?, "status"?,
"delayMs"?, "factor"?, "chain"?, "endpointId"?, "provider"?}` (201, `{"fault": {...}}`); `GET
/sandbox/faults` (`{"faults": [...], "delisted": [...]}`, each fault with `fired` and
`remaining`); `DELETE /sandbox/faults` (clears all, `{"cleared", "restored"}`); `DELETE
/sandbox/faults/{id}` (served by `sandbox.fault_routes`; `sandbox.fault_injector` applies the faults
to each request). From Python: `state.faults.add(kind, ...)`, `state.faults.set(kind, ...)`
(clear, then add), `state.faults.remove(id)`, `state.faults.clear()`, `state.faults.list()`.
"""

from __future__ import annotations

import contextlib
import contextvars
import fnmatch
import itertools
import random
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any

from svc_console.core.taxonomy import CHAINS

ADMIN_PATH = "/sandbox/faults"
# Every route under it is the sandbox's own switchboard (faults, balance): never faulted itself.
ADMIN_PREFIX = "/sandbox/"
KINDS = ("error", "latency", "drop", "malformed", "reprice", "overbill", "delist")
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
# Kind-specific options, so an option given to the wrong kind is refused rather than ignored.
_OPTIONS = {
    "error": {"status", "dry_run"},
    "latency": {"delay_ms", "dry_run"},
    "reprice": {"factor", "chain"},  # never a dry run's: the runtime price is what it changes
    "overbill": {"factor"},  # at the charge, which no dry run makes
    "delist": {"endpoint_id", "provider", "dry_run"},
    "drop": {"dry_run"},
    "malformed": {"dry_run"},
}

# The extra price factor of the request being handled (1 outside a repriced request). Read by
# `SandboxState.reprice_factor`, so a fault reprices exactly the requests it fired on.
_reprice: contextvars.ContextVar[Decimal] = contextvars.ContextVar(
    "svc_sandbox_reprice", default=Decimal(1)
)


# The chain a repriced challenge of the request being handled settles on instead (None: unmoved).
_rechain: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "svc_sandbox_rechain", default=None
)


# The path of the request being handled, for the faults that fire later than on arrival.
_handling: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "svc_sandbox_handling", default=None
)


def reprice_factor() -> Decimal:
    return _reprice.get()


@contextlib.contextmanager
def handling(path: str) -> Iterator[None]:
    """Within it, the request being handled is one to `path`."""
    token = _handling.set(path)
    try:
        yield
    finally:
        _handling.reset(token)


def repriced_chain() -> str | None:
    return _rechain.get()


@contextlib.contextmanager
def repriced(factor: Decimal, chain: str | None) -> Iterator[None]:
    """Within it, the request being handled costs `factor` times its price and, given `chain`,
    settles there (what `reprice_factor` and `repriced_chain` answer)."""
    token = _reprice.set(_reprice.get() * factor) if factor != 1 else None
    chain_token = _rechain.set(chain) if chain else None
    try:
        yield
    finally:
        if token is not None:
            _reprice.reset(token)
        if chain_token is not None:
            _rechain.reset(chain_token)


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
    dry_run: bool | None = None  # aimed at dry runs (True) or payments (False); None: see `aim`
    fired: int = 0
    _rng: random.Random | None = field(default=None, repr=False)

    @property
    def remaining(self) -> int | None:
        return None if self.count is None else self.count - self.fired

    @property
    def aim(self) -> bool | None:
        """The calls it meets: dry runs (True), payments (False) or both (None). A count is
        spent on payments unless told otherwise: a dry run never uses up a payment's fault."""
        if self.dry_run is not None:
            return self.dry_run
        return False if self.count is not None else None

    def meets(self, dry_run: bool) -> bool:
        if self.kind == "reprice" and dry_run:
            return False
        return self.aim is None or self.aim == dry_run

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
            "dryRun": self.aim,
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


def _refuse_stray_options(kind: str, **options: Any) -> None:
    """An option given to a kind it does not apply to is refused rather than ignored."""
    given = {name for name, value in options.items() if value is not None}
    stray = sorted(given - _OPTIONS[kind])
    if stray:
        raise ValueError(f"{stray[0]} does not apply to {kind} faults")


def _how_often(
    count: int | None, rate: float | None, seed: int | None
) -> tuple[int | None, float | None, int | None]:
    """`count`, `rate` and `seed` checked; a rate without a seed draws from seed 0."""
    if count is not None:
        count = _int("count", count, 1, 1_000_000)
    if rate is not None:
        if isinstance(rate, bool) or not isinstance(rate, int | float) or not 0 < rate <= 1:
            raise ValueError("rate must be a number above 0 and at most 1")
        rate = float(rate)
        seed = 0 if seed is None else _int("seed", seed, 0, 2**63 - 1)
    elif seed is not None:
        raise ValueError("seed applies only with a rate")
    return count, rate, seed


def _reprice_factor(factor: Decimal | str | int | float | None, chain: str | None) -> Decimal:
    """A reprice fault's factor, checked (with its chain)."""
    if chain is not None and chain not in CHAINS:
        raise ValueError(f"chain must be one of {', '.join(CHAINS)}")
    # A moved chain alone keeps the price; a bare reprice doubles it.
    default = Decimal(1) if chain is not None else DEFAULT_FACTOR
    try:
        value = default if factor is None else Decimal(str(factor))
    except InvalidOperation:
        raise ValueError("factor must be a number") from None
    if not value.is_finite() or not 0 < value <= 1000:
        raise ValueError("factor must be above 0 and at most 1000")
    return value


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
        dry_run: bool | None = None,
    ) -> Fault:
        """Arms a fault; raises ValueError naming the option at fault."""
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {', '.join(KINDS)}")
        _refuse_stray_options(
            kind,
            status=status,
            delay_ms=delay_ms,
            factor=factor,
            chain=chain,
            endpoint_id=endpoint_id,
            provider=provider,
            dry_run=dry_run,
        )
        if dry_run is not None and not isinstance(dry_run, bool):
            raise ValueError("dry_run must be true or false")
        count, rate, seed = _how_often(count, rate, seed)
        if kind == "error":
            status = DEFAULT_STATUS if status is None else _int("status", status, 500, 599)
        if kind == "latency":
            delay_ms = (
                DEFAULT_DELAY_MS
                if delay_ms is None
                else _int("delay_ms", delay_ms, 0, MAX_DELAY_MS)
            )
        if kind in ("reprice", "overbill"):
            factor = _reprice_factor(factor, chain)
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
                dry_run=dry_run,
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

    def armed(self, kind: str | None = None) -> bool:
        """Whether a fault (of `kind`, or of any kind) may still fire."""
        with self._lock:
            return any(kind in (None, f.kind) and f.remaining != 0 for f in self._faults)

    def fire(self, path: str, *, dry_run: bool = False) -> list[Fault]:
        """The faults that fire on a request to `path`, in the order they were armed; counts and
        random draws are consumed here, once per matching request the fault meets (`meets`: a
        dry run spends nothing of a fault aimed at payments, nor of a reprice, which changes
        the runtime price alone). An overbill fires at the charge instead (`bill_factor`)."""
        with self._lock:
            return [
                fault
                for fault in self._faults
                if fault.kind != "overbill" and fault.meets(dry_run) and _takes(fault, path)
            ]

    def bill_factor(self) -> Decimal:
        """What a charge being made is billed, times what it paid: the product of the overbill
        faults that fire on it (1 with none); counts are consumed here, once per charge."""
        path = _handling.get()
        factor = Decimal(1)
        if path is None:
            return factor
        with self._lock:
            for fault in self._faults:
                if fault.kind == "overbill" and _takes(fault, path):
                    factor *= fault.factor or DEFAULT_FACTOR
        return factor


def _takes(fault: Fault, path: str) -> bool:
    """Whether `fault` fires on a request to `path`: it matches, has count left and its draw
    says so; the count and the draw are consumed. Called under `Faults`' lock."""
    if not fault.matches(path) or fault.remaining == 0:
        return False
    if fault._rng is not None and fault._rng.random() >= fault.rate:  # type: ignore[operator]
        return False
    fault.fired += 1
    return True
