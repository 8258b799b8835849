"""Wrong credentials make the next try wait: a guessing loop gets a few tries a minute, never
eight a second.

Each failed check of a passphrase or token makes its peer wait before the next one is checked:
`first_s`, then twice as long per further failure, up to `most_s`; a success, or `forget_s`
without a failure, starts the count again. A try made while its peer waits is refused without
being checked (so parallel connections buy nothing), and the checks of one peer run one at a
time (`turn`). Nothing here sleeps: a refused try is answered at once, so neither the event loop
nor any other peer waits for a guesser.

A peer is a uid, as the kernel names it: every process of one user is the same peer, since a new
process for each guess costs nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable, Hashable
from dataclasses import dataclass


@dataclass
class _Failures:
    count: int
    last: float  # when the last failure was
    until: float  # no check before then


class Backoff:
    def __init__(
        self,
        clock: Callable[[], float] = time.monotonic,
        *,
        first_s: float = 1.0,
        most_s: float = 60.0,
        forget_s: float = 900.0,
    ):
        self._clock = clock
        self.first_s, self.most_s, self.forget_s = first_s, most_s, forget_s
        self._failures: dict[Hashable, _Failures] = {}
        self._turns: dict[Hashable, asyncio.Lock] = {}

    def retry_in(self, peer: Hashable) -> float:
        """Seconds before `peer` may be checked again; 0 when it may be now."""
        failures = self._current(peer)
        return 0.0 if failures is None else max(0.0, failures.until - self._clock())

    def failed(self, peer: Hashable) -> float:
        """Count a failed check; returns how long `peer` now waits."""
        now = self._clock()
        failures = self._current(peer)
        count = 1 if failures is None else failures.count + 1
        wait = min(self.most_s, self.first_s * 2 ** (count - 1))
        self._failures[peer] = _Failures(count, now, now + wait)
        self._forget_old(now)
        return wait

    def succeeded(self, peer: Hashable) -> None:
        self._failures.pop(peer, None)

    @contextlib.asynccontextmanager
    async def turn(self, peer: Hashable) -> AsyncIterator[None]:
        """One check of `peer` at a time: tries that arrive together are checked in turn, each
        seeing the wait the ones before it earned."""
        # Kept once made: one lock per uid that ever tried, a handful.
        async with self._turns.setdefault(peer, asyncio.Lock()):
            yield

    def _current(self, peer: Hashable) -> _Failures | None:
        failures = self._failures.get(peer)
        if failures is not None and self._clock() - failures.last >= self.forget_s:
            del self._failures[peer]
            return None
        return failures

    def _forget_old(self, now: float) -> None:
        """Drop the peers whose failures are forgotten, so that the table stays small."""
        old = [peer for peer, f in self._failures.items() if now - f.last >= self.forget_s]
        for peer in old:
            del self._failures[peer]
