"""The usage history kept current without anyone pressing `s`: synced when the console starts
(in the TUI, once its screens are open: the first sync makes an HTTP client, a fifth of a
second the first screen would otherwise wait for), every few minutes, and shortly after each
execution ends (when a new charge is likely), under `serve` as in the TUI. A failed sync is
logged and tried again at the next occasion; it never stops the console. Where the service ends
with the console (the embedded sandbox), one more sync at the stop keeps the charges of its last
moments, if an execution began since the last sync did: with none, there is nothing new to
fetch, and a stop right after a start does not wait for an HTTP client and a service still
starting.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from svc_console.core.models import SpendRequest
from svc_console.core.states import State
from svc_console.core.tasks import cancel_and_wait

log = logging.getLogger(__name__)
EVERY_S = 300.0
SETTLE_S = 2.0  # after an execution ends: let a burst of them end too, then sync once
STOP_SYNC_S = 10.0  # the most the last sync may hold up a stop
_CHARGES_LIKELY = frozenset({State.succeeded, State.failed, State.unknown})
# From here on a charge may exist, even before its call ends (the stop's last sync).
_CHARGES_POSSIBLE = _CHARGES_LIKELY | {State.executing}


class UsageFollower:
    def __init__(
        self,
        sync: Callable[[], Awaitable[Any]],
        clock: Callable[[], float],
        *,
        every_s: float = EVERY_S,
        settle_s: float = SETTLE_S,
        sync_at_stop: bool = False,
    ):
        self._sync, self._clock = sync, clock
        self._sync_at_stop = sync_at_stop
        self._every_s, self._settle_s = every_s, settle_s
        self._soon = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._unsubscribe: Callable[[], None] | None = None
        self.last_synced_at: float | None = None
        self.last_result: Any = None
        self.last_error: str | None = None
        # An execution began since the last sync began: a charge may be unsynced.
        self._unsynced = False
        # Told after each sync, failed or not (a screen reloads, or says why it failed).
        self.listeners: list[Callable[[], None]] = []

    def start(self, broker: Any, *, first_after: asyncio.Event | None = None) -> None:
        """`first_after`: the first sync waits for it (the TUI's screen, drawn first)."""
        self._unsubscribe = broker.subscribe(self._changed)
        self._task = asyncio.create_task(self._run(first_after), name="usage-follow")

    async def stop(self) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        task, self._task = self._task, None
        await cancel_and_wait([task])
        if task is not None and self._sync_at_stop and self._unsynced:
            try:
                async with asyncio.timeout(STOP_SYNC_S):
                    await self._once()
            except TimeoutError:
                log.warning("the last usage sync took over %.0f s: left undone", STOP_SYNC_S)

    def sync_soon(self) -> None:
        """Sync at the next moment (after the settling pause), not at the next period."""
        self._soon.set()

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    def _changed(self, request: SpendRequest) -> None:
        if request.state in _CHARGES_POSSIBLE:
            self._unsynced = True
        if request.state in _CHARGES_LIKELY:
            self.sync_soon()

    async def _run(self, first_after: asyncio.Event | None) -> None:
        if first_after is not None:
            await first_after.wait()
        while True:
            await self._once()
            # asyncio.timeout, not wait_for: on Python 3.11 wait_for swallows a cancellation
            # that arrives as the event is set, and stop() would then wait forever.
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self._every_s):
                    await self._soon.wait()
                await asyncio.sleep(self._settle_s)
            self._soon.clear()

    async def _once(self) -> None:
        unsynced, self._unsynced = self._unsynced, False
        try:
            self.last_result = await self._sync()
        except asyncio.CancelledError:
            self._unsynced |= unsynced
            raise
        except Exception as exc:  # the service may be away: try again at the next occasion
            self._unsynced |= unsynced
            self.last_result, self.last_error = None, f"{type(exc).__name__}: {exc}"
            log.warning("background usage sync failed: %s", self.last_error)
        else:
            self.last_synced_at, self.last_error = self._clock(), None
        for listener in list(self.listeners):
            try:
                listener()
            except Exception:
                log.exception("a usage listener failed")
