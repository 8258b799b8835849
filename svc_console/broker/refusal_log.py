"""Refusals, kept without letting a flood of them fill the logs or the ledger.

`RefusalLog`, for refused connections: the first refusal of each kind is logged at once; the next
ones within `every_s` are only counted, and the count comes with the next line logged after that.
A client opening thousands of connections a second then costs a line a minute, and the operator
still learns it happened.

`RefusalAudit`, for refused decisions (a wrong passphrase or token, none given, an agent's own
process tree, the two-person rule): the first refusal of a burst from one peer goes into the
audit chain at once, whole (`decision_refused`); the ones that follow it, until the peer has been
quiet for `quiet_s`, become one `decisions_refused` event with their count, their reasons and the
requests they named, written when the burst ends (or every `every_s` while it lasts, and when the
console stops). A guessing loop then adds a few events an hour, not one per guess.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import Counter
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any

SUMMARY = "decisions_refused"
log = logging.getLogger("svc_console.broker.decisions")
MOST_REQUESTS_NAMED = 20  # in one summary; the count says how many there were in all


class RefusalLog:
    def __init__(
        self,
        log: logging.Logger,
        every_s: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
    ):
        self._log, self._every, self._clock = log, every_s, clock
        self._last: dict[str, float] = {}
        self._held: dict[str, int] = {}

    def refused(self, kind: str, message: str) -> None:
        """One refusal of `kind` (a short fixed phrase); `message` says this one in full."""
        now = self._clock()
        last = self._last.get(kind)
        if last is not None and now - last < self._every:
            self._held[kind] = self._held.get(kind, 0) + 1
            return
        self._last[kind] = now
        held = self._held.pop(kind, 0)
        if held:
            message += f" ({held} more {kind} since the last line)"
        self._log.warning("%s", message)


@dataclass
class _Burst:
    last: float  # the latest refusal's time
    written: float  # when the burst last reached the chain
    held: Counter[str] = field(default_factory=Counter)  # reasons not yet written, counted
    first_held: float | None = None
    requests: dict[str, None] = field(default_factory=dict)  # named, in order, not yet written
    evidence: dict[str, Any] | None = None  # the latest refusal's


class RefusalAudit:
    def __init__(
        self,
        ledger: Any,
        clock: Callable[[], float],
        *,
        quiet_s: float = 300.0,  # longer than the longest back-off: a guesser is one burst
        every_s: float = 600.0,
    ):
        self._ledger, self._clock = ledger, clock
        self.quiet_s, self.every_s = quiet_s, every_s
        self._bursts: dict[Hashable, _Burst] = {}
        self._timer: asyncio.TimerHandle | None = None

    def refused(self, peer: Hashable, request_id: str | None, reason: str, evidence: Any) -> None:
        """One refused decision by `peer` (who tried: a channel and a uid), with its evidence
        (an `Evidence`)."""
        now = self._clock()
        burst = self._bursts.get(peer)
        if burst is not None and now - burst.last >= self.quiet_s:
            self._write(burst)
            burst = None
        if burst is None:
            self._ledger.record_refusal(request_id, reason, evidence, at=now)
            log.warning("a decision on %s was refused: %s", request_id, reason)
            self._bursts[peer] = _Burst(last=now, written=now)
            self._wake_later()
            return
        burst.last = now
        burst.held[reason] += 1
        burst.first_held = burst.first_held if burst.first_held is not None else now
        if request_id is not None and len(burst.requests) < MOST_REQUESTS_NAMED:
            burst.requests[request_id] = None
        burst.evidence = evidence.model_dump(mode="json")
        if now - burst.written >= self.every_s:
            self._write(burst)

    def flush(self, *, everything: bool = False) -> None:
        """Write the bursts that ended (quiet for `quiet_s`), or all of them (`everything`: the
        console stops)."""
        now = self._clock()
        for peer, burst in list(self._bursts.items()):
            if everything or now - burst.last >= self.quiet_s:
                self._write(burst)
                del self._bursts[peer]
        if everything and self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _write(self, burst: _Burst) -> None:
        count = sum(burst.held.values())
        if count:
            data = {
                "count": count,
                "reasons": dict(burst.held.most_common()),
                "requests": list(burst.requests),
                "first_at": burst.first_held,
                "last_at": burst.last,
                "evidence": burst.evidence,
            }
            with self._ledger.transaction():
                self._ledger.event(None, SUMMARY, data, self._clock())
            log.warning("%d more decisions refused since the last one recorded", count)
        burst.held, burst.requests, burst.first_held = Counter(), {}, None
        burst.written = self._clock()

    def _wake_later(self) -> None:
        """Come back when the bursts may have ended, on the running loop (none: the next
        refusal or the console's stop writes them)."""
        if self._timer is not None:
            return
        with contextlib.suppress(RuntimeError):
            loop = asyncio.get_running_loop()
            self._timer = loop.call_later(self.quiet_s, self._woken)

    def _woken(self) -> None:
        self._timer = None
        self.flush()
        if self._bursts:
            self._wake_later()
