"""Refused connections, logged without letting a flood of them fill the logs.

The first refusal of each kind is logged at once; the next ones within `every_s` are only counted,
and the count comes with the next line logged after that. A client opening thousands of
connections a second then costs a line a minute, and the operator still learns it happened.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable


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
