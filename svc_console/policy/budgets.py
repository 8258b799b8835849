"""Rolling budget totals in memory: spend reserved and settled in the last hour, day, week and
month, per bucket (an agent, a provider, a domain type, overall; and what each auto-approve rule
approved).

Evaluation must not scan the ledger, so each window of a bucket keeps a queue of cells and their
running sum: reading a total drops the cells that have left the window and returns the sum, O(1)
amortised. Each window counts cells of its own grain, the grains the ledger keeps
(`ledger/budgets.py`): the hour and day windows count minutes, the week hours, the month days.
A cell is stamped with the end of its minute, hour or day, so spend leaves the hour and day
windows at most a minute late, the week at most an hour late, the month at most a day late, and
never early: the rounding can make a budget stricter, never wider. A bucket holds at most a
day of minutes, a week of hours and a month of days, however long the console runs.

Totals are loaded once at start from the ledger and then follow its commits (reservations,
settlements, releases) through `apply`. One owner: the broker's event loop; the check and the
reservation it leads to happen without a pause in between (see broker/intake.py).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable

from svc_console.core.buckets import Bucket, Change, slot_of
from svc_console.policy.rules import WINDOWS

WINDOW_NAMES = tuple(WINDOWS)  # hour, day, week, month
WINDOW_INDEX = {name: index for index, name in enumerate(WINDOW_NAMES)}
_SECONDS = WINDOW_SECONDS = tuple(WINDOWS.values())
LONGEST = _SECONDS[-1]
_NEVER = float("inf")
# The grains (seconds) of the cells, and the windows that count each: minutes for the hour and
# the day, hours for the week, days for the month. The last window of each grain is the longest.
GRAINS: tuple[tuple[int, tuple[int, ...]], ...] = ((60, (0, 1)), (3600, (2,)), (86_400, (3,)))
_STORE_OF_GRAIN = {grain: store for store, (grain, _) in enumerate(GRAINS)}
# Where a cell that leaves a window is forgotten: when it leaves the longest window of its grain.
_FORGETS = {windows[-1]: store for store, (_, windows) in enumerate(GRAINS)}

__all__ = ["GRAINS", "WINDOW_INDEX", "WINDOW_NAMES", "Change", "RollingTotals", "slot_of"]


def stamp(slot: int, grain: int) -> int:
    """The end of the minute, hour or day a slot falls in."""
    return -(-slot // grain) * grain


class _Bucket:
    __slots__ = ("cells", "due", "queues", "sums")

    def __init__(self) -> None:
        self.cells: tuple[dict[int, list[int]], ...] = tuple({} for _ in GRAINS)
        self.queues: tuple[deque[tuple[int, list[int]]], ...] = tuple(deque() for _ in _SECONDS)
        self.sums = [0] * len(_SECONDS)
        # When the first cell leaves any window (never sooner): until then every sum is current,
        # so a reader of several windows checks one time instead of each window's queue.
        self.due = _NEVER

    def total(self, index: int, now: float) -> int:
        self.expire(index, now)
        return self.sums[index]

    def current(self, now: float) -> list[int]:
        """Every window's sum at `now` (the list itself: read it before anything is added)."""
        if now >= self.due:
            for index in range(len(_SECONDS)):
                self._drop(index, now)
            self._reschedule()
        return self.sums

    def expire(self, index: int, now: float) -> None:
        if now >= self.due:
            self._drop(index, now)
            self._reschedule()

    def _drop(self, index: int, now: float) -> None:
        queue, cutoff = self.queues[index], now - _SECONDS[index]
        forget = _FORGETS.get(index)
        while queue and queue[0][0] <= cutoff:
            at, cell = queue.popleft()
            self.sums[index] -= cell[0]
            if forget is not None:
                self.cells[forget].pop(at, None)

    def _reschedule(self) -> None:
        self.due = min(
            (
                queue[0][0] + seconds
                for queue, seconds in zip(self.queues, _SECONDS, strict=True)
                if queue
            ),
            default=_NEVER,
        )

    def add(self, slot: int, delta: int, now: float) -> None:
        """Count `delta` at minute `slot`: in its minute, its hour and its day."""
        for store, (grain, windows) in enumerate(GRAINS):
            self._add(store, windows, stamp(slot, grain), delta, now)

    def _add(self, store: int, windows: tuple[int, ...], at: int, delta: int, now: float) -> None:
        for index in windows:
            self.expire(index, now)
        if at <= now - _SECONDS[windows[-1]]:
            return  # out of every window this grain serves
        cells = self.cells[store]
        cell = cells.get(at)
        fresh = cell is None
        if fresh:
            cell = cells[at] = [0]
        cell[0] += delta
        for index in windows:
            # After expiring, a cell is in a window's queue exactly when it is inside the window.
            if at > now - _SECONDS[index]:
                if fresh:
                    _insert(self.queues[index], at, cell)
                    self.due = min(self.due, at + _SECONDS[index])
                self.sums[index] += delta


def _insert(queue: deque[tuple[int, list[int]]], at: int, cell: list[int]) -> None:
    """Keep the queue in time order; cells almost always arrive in order, so look from the end."""
    if not queue or queue[-1][0] <= at:
        queue.append((at, cell))
        return
    position = len(queue)
    while position and queue[position - 1][0] > at:
        position -= 1
    queue.insert(position, (at, cell))


class RollingTotals:
    def __init__(self) -> None:
        self.buckets: dict[Bucket, _Bucket] = {}  # read directly by the generated hot path
        self.now = 0.0

    def used(self, bucket: Bucket, window: int, now: float) -> int:
        """Atomic USDC reserved and settled in `bucket` within window number `window` (see
        WINDOW_INDEX) ending at `now`."""
        found = self.buckets.get(bucket)
        if found is None:
            return 0
        if now < self.now:
            now = self.now
        found.expire(window, now)
        return found.sums[window]

    def bucket(self, bucket: Bucket) -> _Bucket | None:
        """A bucket's windows, for reading several totals of it at once (`total(index, now)`)."""
        return self.buckets.get(bucket)

    def apply(self, changes: Iterable[Change], now: float | None = None) -> None:
        """Follow committed changes of the ledger's totals."""
        if now is not None and now > self.now:
            self.now = now
        for buckets, slot, delta in changes:
            for bucket in buckets:
                found = self.buckets.get(bucket)
                if found is None:
                    found = self.buckets[bucket] = _Bucket()
                found.add(slot, delta, self.now)

    def load(self, rows: Iterable[tuple[int, str, str, int, int]], now: float) -> None:
        """Start (empty) from the ledger's totals: (grain, scope, key, end of the minute, hour or
        day, atomic USDC), each grain's rows in time order. Built directly, without the
        per-change bookkeeping of `apply`."""
        self.now = max(self.now, now)
        cutoffs = [self.now - seconds for seconds in _SECONDS]
        buckets = self.buckets
        for grain, scope, key, at, amount in rows:
            store = _STORE_OF_GRAIN[grain]
            windows = GRAINS[store][1]
            if at <= cutoffs[windows[-1]]:
                continue
            found = buckets.get((scope, key))
            if found is None:
                found = buckets[(scope, key)] = _Bucket()
            cells = found.cells[store]
            cell = cells.get(at)
            fresh = cell is None
            if fresh:
                cell = cells[at] = [0]
            cell[0] += amount
            for index in windows:
                if at > cutoffs[index]:
                    if fresh:
                        _insert(found.queues[index], at, cell)
                        found.due = min(found.due, at + _SECONDS[index])
                    found.sums[index] += amount
