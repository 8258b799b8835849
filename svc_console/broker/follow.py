"""`approvals.follow`: an operator connection that hears of every change to a request, pushed as
JSON-RPC notifications, so that an attached console (another TUI, the web console) follows the
queue without polling.

A notification carries only what changed: the request's id, its state and when it changed. The
follower reads the request itself (from the ledger, read-only, or over the socket), so a
notification stays small whatever the agent wrote. The broker tells its listeners synchronously;
a change is queued here in a bounded buffer and written by a task of the connection's own, so the
broker never waits for a reader. A follower that lets the buffer fill (it stopped reading, or
reads slower than the queue changes) is cut off: its connection is aborted, and it knows to
connect again and read the queue afresh, as it did when it first attached. Never a silent gap.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import Awaitable, Callable
from decimal import Decimal
from typing import Any

from svc_console.core.models import SpendRequest

log = logging.getLogger(__name__)

CHANGED = "approvals.changed"  # the notification's method


class Subscription:
    """One connection's following of the queue: the listener, its buffer and its writer."""

    def __init__(
        self,
        broker: Any,
        push: Callable[[dict[str, Any]], Awaitable[None]],
        cut_off: Callable[[], None],
        *,
        buffer: int,
    ):
        self.broker, self._push, self._cut_off, self.buffer = broker, push, cut_off, buffer
        self._changes: deque[dict[str, Any]] = deque()
        self._ready = asyncio.Event()
        self._unsubscribe: Callable[[], None] | None = None
        self._writer: asyncio.Task[None] | None = None
        self.sent = 0
        self.cut = False

    def start(self) -> None:
        self._unsubscribe = self.broker.subscribe(self._heard)
        self._writer = asyncio.create_task(self._write_forever(), name="approvals-follow")

    def stop(self) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        if self._writer is not None:
            self._writer.cancel()
            self._writer = None

    def _heard(self, request: SpendRequest) -> None:
        # Called by the broker, synchronously, for every change: never waits, never raises.
        if self.cut:
            return
        if len(self._changes) >= self.buffer:
            log.warning(
                "an operator connection following the queue fell %d changes behind: cut off",
                self.buffer,
            )
            self.cut = True
            self.stop()
            with contextlib.suppress(Exception):
                self._cut_off()
            return
        self._changes.append(
            {
                "request_id": request.id,
                "state": str(request.state),
                "updated_at": request.updated_at,
                "confirm_above_usdc": threshold_text(self.broker),
            }
        )
        self._ready.set()

    async def _write_forever(self) -> None:
        while True:
            await self._ready.wait()
            self._ready.clear()
            while self._changes:
                params = self._changes.popleft()
                await self._push({"jsonrpc": "2.0", "method": CHANGED, "params": params})
                self.sent += 1


def confirm_threshold(broker: Any) -> Decimal | None:
    """The amount above which an approval must be typed: the policy's, else the console's
    (the broker's Decisions apply the same two, in this order)."""
    threshold = getattr(broker.policy, "confirm_above_usdc", None)
    if threshold is None:
        threshold = broker.config.confirm_above_usdc
    return threshold


def threshold_text(broker: Any) -> str | None:
    threshold = confirm_threshold(broker)
    return None if threshold is None else str(threshold)
