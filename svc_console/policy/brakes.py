"""Brakes for a runaway agent: rate limits, repeated calls, a circuit breaker and spend velocity
(SKILLS.md `rate_limits`, `repeats`, `circuit_breaker`, `velocity`).

Budgets count money; brakes count behaviour. What each counts:

- a rate limit counts the requests it let go on: every request that reached the policy and was
  not denied (a request it denies does not count against the next ones);
- `repeats` counts every request that reached the policy, by agent, kind, endpoint (or dataset,
  or tool) and inputs as the service will see them (`core/same_inputs.py`: defaults filled,
  text normalised), so key order, spacing, a default spelt out, invisible characters or another
  case of a case-insensitive field do not make a call new;
- the circuit breaker follows outcomes: failed, unknown, rejected and denied are failures, a
  success ends the run, expired and cancelled are neither; an operator's resume starts afresh;
- velocity reads the budget totals (spend reserved and settled) and keeps no count of its own.

Every unverified agent counts as one, `(unverified)` (`core/names.py`), in every brake.

Counts live in memory, in cells of a sixtieth of their window: a request leaves the count at
most a cell late, never early (rounding makes a brake stricter, never wider), and memory grows
with the keys in the window, not with the requests. They are loaded from the ledger's recent
requests when a policy with brakes comes into force (`broker/policy_link.py`), carried over to a
new version of the policy when its brakes are the same, and follow what the console decides
after. The check, the count and the commit of a request happen on the broker's loop without a
pause between them, so concurrent submissions cannot pass a limit together.
"""

from __future__ import annotations

import hashlib
import statistics
from collections import deque
from collections.abc import Hashable, Iterable
from dataclasses import dataclass
from typing import Any

import orjson

from svc_console.core.canonical_json import canonical_json
from svc_console.core.money import format_usdc, from_atomic
from svc_console.core.names import counted_as
from svc_console.core.same_inputs import comparable
from svc_console.core.wording import plural
from svc_console.policy.budgets import RollingTotals
from svc_console.policy.checks import Cite
from svc_console.policy.facts import Facts
from svc_console.policy.rules import Rules, Velocity
from svc_console.policy.source import SourceMap

FAILURES = frozenset({"failed", "unknown", "rejected", "denied"})
SUCCESS = "succeeded"
CELLS_PER_WINDOW = 60
EARLIER_SHOWN = 3  # earlier identical requests named in a repeat's citation
USUAL_HOURS = 3  # hours with spend in the past week before velocity has a usual to compare
WEEK = 7 * 86_400
# What a request counts in: (count, key) of each rate limit, and its key as a repeat.
Tally = tuple[list[tuple["SlidingCount", Any]], Any]
_VELOCITY_FACT = {"agent": "agent", "provider": "provider", "domain_type": "domain_type"}


@dataclass(frozen=True, slots=True)
class Seen:
    """A request that reached the policy, as the ledger recorded it (to load counts)."""

    request_id: str
    at: float
    agent: str
    agent_verified: bool
    kind: str
    provider: str | None
    endpoint: str | None
    inputs: Any
    denied: bool
    schema: Any = None  # of the endpoint's inputs, as recorded with the request


@dataclass(frozen=True, slots=True)
class Ended:
    """An agent's outcome at `at`: `failed` True or False, or None for an operator's resume.
    `agent` as the request counts (`(unverified)` for an agent that did not prove its name)."""

    agent: str
    at: float
    failed: bool | None


SHORT_INPUTS = 48  # bytes of canonical JSON kept as they are rather than hashed


def canonical_digest(inputs: Any) -> bytes:
    """The same inputs give the same key whatever their key order or spacing: their canonical
    JSON when short, else its BLAKE2b digest (a key's memory stays small however big the
    inputs). orjson writes it in an eighth of json's time, on every request's path; json writes
    what orjson refuses (an integer past 64 bits), so the two never give one key to different
    inputs. A key lives only in memory, made again from the ledger at start: its bytes need
    match nothing written before."""
    try:
        text = orjson.dumps(inputs, option=orjson.OPT_SORT_KEYS)
    except TypeError:
        text = canonical_json(inputs).encode()
    if len(text) <= SHORT_INPUTS:
        return text
    return hashlib.blake2b(text, digest_size=16).digest()


def span(seconds: float) -> str:
    """A window or an interval in words: 45 seconds, 6 minutes, 2 hours, 3 days."""
    for unit, size in (("day", 86_400), ("hour", 3600), ("minute", 60)):
        if seconds >= size:
            return plural(max(1, round(seconds / size)), unit)
    return plural(max(1, round(seconds)), "second")


def unsuccessful(count: int) -> str:
    """What the circuit breaker counts, in words: denials are no failures."""
    return f"{plural(count, 'request')} in a row denied or failed"


def ordinal(number: int) -> str:
    suffix = (
        "th" if 10 <= number % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(number % 10, "th")
    )
    return f"{number}{suffix}"


class SlidingCount:
    """How many times each key was counted in the last `window` seconds, O(1) amortised."""

    __slots__ = (
        "_cells",
        "_expired_at",
        "_newest",
        "_remember",
        "counts",
        "grain",
        "recent",
        "since",
        "window",
    )

    def __init__(self, window: float, *, remember: int = 0):
        self.window = window
        self.grain = max(1.0, window / CELLS_PER_WINDOW)
        self._cells: deque[list] = deque()  # [end of cell, key, count], oldest first
        self._newest: dict[Hashable, list] = {}
        self.counts: dict[Hashable, int] = {}
        self.since: dict[Hashable, float] = {}  # when the key's oldest counted request came
        # The last few (time, request id) of each key, when asked to `remember` them.
        self.recent: dict[Hashable, deque[tuple[float, str]]] | None = {} if remember else None
        self._remember = remember
        self._expired_at = float("-inf")

    def total(self, key: Hashable, now: float) -> int:
        self._expire(now)
        return self.counts.get(key, 0)

    def add(self, key: Hashable, at: float, request_id: str = "") -> None:
        self._expire(at)
        grain = self.grain
        end = -(-at // grain) * grain  # the end of the cell `at` falls in
        cell = self._newest.get(key)
        if cell is not None and cell[0] >= end:  # the key's newest cell (or, clock stepped back,
            cell[2] += 1  # a later one: counted late, never early)
            self.counts[key] += 1
        else:
            cells = self._cells
            if cells and cells[-1][0] > end:
                end = cells[-1][0]  # keep the cells in time order: counted late, not early
            cell = [end, key, 1]
            cells.append(cell)
            self._newest[key] = cell
            if key in self.counts:
                self.counts[key] += 1
            else:
                self.counts[key] = 1
                self.since[key] = at
        if self.recent is not None:
            kept = self.recent.get(key)
            if kept is None:
                kept = self.recent[key] = deque(maxlen=self._remember)
            kept.append((at, request_id))

    def _expire(self, now: float) -> None:
        if now == self._expired_at:  # a check and the count that follows it, at one time
            return
        self._expired_at = now
        cells, cutoff = self._cells, now - self.window
        while cells and cells[0][0] <= cutoff:
            _end, key, count = cells.popleft()
            left = self.counts[key] - count
            if left:
                self.counts[key] = left
                continue
            del self.counts[key], self.since[key]
            self._newest.pop(key, None)
            if self.recent is not None:
                self.recent.pop(key, None)


class _Rate:
    __slots__ = ("attr", "counts", "limit", "most", "path", "then", "where")

    def __init__(self, limit: Any, where: Any, path: str):
        self.limit, self.where, self.path = limit, where, path
        self.attr = None if limit.per == "overall" else limit.per  # the fact counted by
        self.most, self.then = limit.max_requests, limit.then
        self.counts = SlidingCount(limit.window)

    def label(self, key: str) -> str:
        per = self.limit.per
        return self.limit.name or ("overall" if per == "overall" else f"{per} {key}")


class Brakes:
    """The brakes one policy writes, with the counts they keep."""

    def __init__(self, rules: Rules, source: SourceMap):
        self.rates = [
            _Rate(limit, source.value(("rate_limits", i)), f"rate_limits[{i}]")
            for i, limit in enumerate(rules.rate_limits)
        ]
        self.repeats = rules.repeats
        self.breaker = rules.circuit_breaker
        self.velocity: Velocity | None = rules.velocity
        self._where = {
            name: source.key((name,)) for name in ("repeats", "circuit_breaker", "velocity")
        }
        remember = EARLIER_SHOWN if rules.repeats else 0
        self._same = SlidingCount(rules.repeats.window, remember=remember) if self.repeats else None
        self._runs: dict[str, deque[float]] = {}  # each agent's failures in a row (their times)
        self._usual: dict[tuple, tuple[int, float | None]] = {}  # velocity's median, per hour
        # The rules whose counts a new version of the policy may take over as they are.
        self.signature = (tuple(rules.rate_limits), rules.repeats, rules.circuit_breaker)
        windows = [rate.limit.window for rate in self.rates]
        windows += [rule.window for rule in (self.repeats, self.breaker) if rule is not None]
        self.horizon = float(max(windows, default=0))

    @property
    def counting(self) -> bool:
        """Whether these brakes keep counts (and want the ledger's recent requests)."""
        return self.horizon > 0

    def take_over(self, older: Brakes | None) -> bool:
        """Keep counting where `older` (the version of the policy before) was, when its brakes
        are the same; whether it did."""
        if older is None or older.signature != self.signature or not self.counting:
            return False
        # The counts only: where each rule is written may have moved (prose added above it).
        for rate, before in zip(self.rates, older.rates, strict=True):
            rate.counts = before.counts
        self._same, self._runs = older._same, older._runs
        return True

    def load(self, seen: Iterable[Seen], ended: Iterable[Ended]) -> None:
        """Counts from the ledger: requests oldest first, then outcomes oldest first."""
        for request in seen:
            facts = Facts(
                agent=counted_as(request.agent, request.agent_verified),
                kind=request.kind,
                amount=0,
                endpoint=request.endpoint,
                provider=request.provider,
                inputs=request.inputs,
                schema=request.schema,
            )
            tally = self.tally(facts)
            self.count(tally, request.request_id, request.at, denied=request.denied)
        for outcome in ended:
            if outcome.failed is None:
                self.resumed(outcome.agent)
            else:
                self.ended(outcome.agent, outcome.failed, outcome.at)

    # -- before a request is decided ------------------------------------------------------------

    def check(self, facts: Facts, totals: RollingTotals, now: float, cites: list[Cite]) -> Tally:
        """Cite each brake this request would pass (effect deny or ask); returns what it counts
        in, for `count`."""
        rates = []
        for rate in self.rates:
            key = "" if rate.attr is None else getattr(facts, rate.attr)
            if key is None:
                continue
            counts = rate.counts
            used = counts.total(key, now)
            if used >= rate.most:
                cites.append(Cite(rate.then, rate.path, _rate_reason(rate, key, used), rate.where))
            rates.append((counts, key))
        same_key = None
        if self._same is not None and self.repeats is not None:
            same_key = self.same_key(facts)
            earlier = self._same.total(same_key, now)
            if earlier >= self.repeats.max_same:
                reason = _repeat_reason(self._same, same_key, earlier, now)
                cites.append(Cite(self.repeats.then, "repeats", reason, self._where["repeats"]))
        if self.velocity is not None:
            self._check_velocity(facts, totals, now, cites)
        return rates, same_key

    def tally(self, facts: Facts) -> Tally:
        """What a request counts in, without checking it (a request read back from the ledger)."""
        rates = [
            (rate.counts, key)
            for rate in self.rates
            if (key := "" if rate.attr is None else getattr(facts, rate.attr)) is not None
        ]
        return rates, self.same_key(facts) if self._same is not None else None

    def same_key(self, facts: Facts) -> tuple:
        inputs = comparable(facts.inputs, facts.schema)
        return (facts.agent, facts.kind, facts.endpoint, canonical_digest(inputs))

    def _check_velocity(
        self, facts: Facts, totals: RollingTotals, now: float, cites: list[Cite]
    ) -> None:
        rule = self.velocity
        assert rule is not None
        attr = _VELOCITY_FACT.get(rule.per)
        key = "" if attr is None else getattr(facts, attr)
        if key is None:
            return
        bucket = totals.bucket((rule.per, key))
        if bucket is None:
            return
        hour = int(now // 3600)
        cached = self._usual.get((rule.per, key))
        if cached is None or cached[0] != hour:
            if len(self._usual) > 10_000:
                self._usual.clear()
            cached = self._usual[(rule.per, key)] = (hour, _usual_hourly(bucket, now, rule.window))
        usual = cached[1]
        if usual is None:
            return  # too little history to know what is usual
        if rule.window == 3600:
            recent = bucket.total(0, now)
        elif rule.window == 86_400:
            recent = bucket.total(1, now)
        else:
            recent = sum(cell[0] for at, cell in bucket.cells[0].items() if at > now - rule.window)
        expected = usual * rule.window / 3600
        after = recent + facts.amount
        if after > rule.factor * expected:
            label = "overall" if rule.per == "overall" else f"{rule.per} {key}"

            def reason() -> str:
                return (
                    f"{label} would spend {_usdc(after)} USDC in {span(rule.window)},"
                    f" more than {rule.factor:g} times the usual {_usdc(round(expected))} USDC"
                )

            cites.append(Cite("ask", "velocity", reason, self._where["velocity"]))

    # -- after -----------------------------------------------------------------------------------

    def count(self, tally: Tally, request_id: str, at: float, *, denied: bool) -> None:
        """Count a request the policy judged (`denied`: it may not go on) in what `check` or
        `tally` found it counts in."""
        rates, same_key = tally
        if not denied:
            for counts, key in rates:
                counts.add(key, at)
        if same_key is not None and self._same is not None:
            self._same.add(same_key, at, request_id)

    def ended(self, agent: str, failed: bool, at: float) -> str | None:
        """Follow an outcome of `agent`; why to pause it when this failure trips the breaker."""
        rule = self.breaker
        if rule is None:
            return None
        if not failed:
            self._runs.pop(agent, None)
            return None
        run = self._runs.get(agent)
        if run is None:
            run = self._runs[agent] = deque(maxlen=rule.failures)
        run.append(at)
        if len(run) < rule.failures or at - run[0] > rule.window:
            return None
        del self._runs[agent]
        return f"{unsuccessful(rule.failures)} within {span(rule.window)}"

    def resumed(self, agent: str) -> None:
        self._runs.pop(agent, None)

    def where(self, name: str) -> Any:
        return self._where[name]


def _rate_reason(rate: _Rate, key: str, used: int) -> Any:
    limit = rate.limit

    def reason() -> str:
        return (
            f"{rate.label(key)}: {ordinal(used + 1)} request in {span(limit.window)}"
            f" (at most {limit.max_requests})"
        )

    return reason


def _repeat_reason(counts: SlidingCount, key: Hashable, earlier: int, now: float) -> Any:
    since = max(counts.since[key], now - counts.window)
    recent = [request_id for _at, request_id in (counts.recent or {}).get(key, ())]

    def reason() -> str:
        text = f"{ordinal(earlier + 1)} identical call in {span(max(1.0, now - since))}"
        named = [r for r in recent if r]
        if named:
            text += "; earlier: " + ", ".join(named[-EARLIER_SHOWN:])
        return text

    return reason


def _usual_hourly(bucket: Any, now: float, window: float) -> float | None:
    """The median hourly spend of the past week before the window, over the hours with any."""
    hours = [
        cell[0]
        for at, cell in bucket.cells[1].items()
        if now - WEEK < at <= now - window and cell[0] > 0
    ]
    return statistics.median(hours) if len(hours) >= USUAL_HOURS else None


def _usdc(atomic: int) -> str:
    return format_usdc(from_atomic(atomic))
