"""Rolling budget totals in memory: spend reserved and settled in the last hour, day, week and
month, per bucket (an agent, a provider, a domain type, overall; and what each auto-approve rule
approved).

Evaluation must not scan the ledger, so each bucket keeps one-minute slots and, per window, a
queue of the slots inside it and their running sum: reading a total drops the slots that have left
the window and returns the sum, O(1) amortised. Slots are stamped with the minute *after* the
spend (rounded up), so a spend leaves a window at the latest a minute late, never early: a
rounding error may make a budget stricter, never wider.

Totals are loaded once at start from the ledger's slot table and then follow the ledger's commits
(reservations, settlements, releases) through `apply`. One owner: the broker's event loop; the
check and the reservation it leads to happen without a pause in between (see broker/pipeline.py).
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

__all__ = ["WINDOW_INDEX", "WINDOW_NAMES", "Change", "RollingTotals", "slot_of"]


class _Bucket:
    __slots__ = ("cells", "queues", "sums")

    def __init__(self) -> None:
        self.cells: dict[int, list[int]] = {}
        self.queues: tuple[deque[tuple[int, list[int]]], ...] = tuple(deque() for _ in _SECONDS)
        self.sums = [0] * len(_SECONDS)

    def total(self, index: int, now: float) -> int:
        self.expire(index, now)
        return self.sums[index]

    def expire(self, index: int, now: float) -> None:
        queue, cutoff = self.queues[index], now - _SECONDS[index]
        while queue and queue[0][0] <= cutoff:
            slot, cell = queue.popleft()
            self.sums[index] -= cell[0]
            if index == len(_SECONDS) - 1:
                self.cells.pop(slot, None)  # out of the longest window: out of all of them

    def add(self, slot: int, delta: int, now: float) -> None:
        cell = self.cells.get(slot)
        fresh = cell is None
        if fresh:
            if slot <= now - LONGEST:
                return
            cell = self.cells[slot] = [0]
        cell[0] += delta
        for index, seconds in enumerate(_SECONDS):
            self.expire(index, now)
            if slot > now - seconds:
                if fresh:
                    _insert(self.queues[index], slot, cell)
                self.sums[index] += delta


def _insert(queue: deque[tuple[int, list[int]]], slot: int, cell: list[int]) -> None:
    """Keep the queue in slot order; slots almost always arrive in order, so look from the end."""
    if not queue or queue[-1][0] <= slot:
        queue.append((slot, cell))
        return
    position = len(queue)
    while position and queue[position - 1][0] > slot:
        position -= 1
    queue.insert(position, (slot, cell))


class RollingTotals:
    def __init__(self) -> None:
        self._buckets: dict[Bucket, _Bucket] = {}
        self.now = 0.0

    def used(self, bucket: Bucket, window: int, now: float) -> int:
        """Atomic USDC reserved and settled in `bucket` within window number `window` (see
        WINDOW_INDEX) ending at `now`."""
        found = self._buckets.get(bucket)
        if found is None:
            return 0
        if now < self.now:
            now = self.now
        found.expire(window, now)
        return found.sums[window]

    def bucket(self, bucket: Bucket) -> _Bucket | None:
        """A bucket's windows, for reading several totals of it at once (`total(index, now)`)."""
        return self._buckets.get(bucket)

    def apply(self, changes: Iterable[Change], now: float | None = None) -> None:
        """Follow committed changes of the ledger's totals."""
        if now is not None and now > self.now:
            self.now = now
        for buckets, slot, delta in changes:
            for bucket in buckets:
                found = self._buckets.get(bucket)
                if found is None:
                    found = self._buckets[bucket] = _Bucket()
                found.add(slot, delta, self.now)

    def load(self, rows: Iterable[tuple[str, str, int, int]], now: float) -> None:
        """Start (empty) from the ledger's slots: (scope, key, slot, atomic USDC), oldest first
        (sorted here if they are not). Built directly, a million rows in about a second."""
        self.now = max(self.now, now)
        rows = list(rows)
        if any(rows[n][2] > rows[n + 1][2] for n in range(len(rows) - 1)):
            rows.sort(key=lambda row: row[2])
        cutoffs = [self.now - seconds for seconds in _SECONDS]
        windows = range(len(_SECONDS))
        buckets = self._buckets
        for scope, key, slot, amount in rows:
            found = buckets.get((scope, key))
            if found is None:
                found = buckets[(scope, key)] = _Bucket()
            cell = found.cells.get(slot)
            if cell is not None:  # the same slot twice: add to it
                found.add(slot, amount, self.now)
                continue
            if slot <= cutoffs[-1]:
                continue
            cell = found.cells[slot] = [amount]
            queues, sums = found.queues, found.sums
            for index in windows:
                if slot > cutoffs[index]:
                    queues[index].append((slot, cell))
                    sums[index] += amount
