"""Stopping background tasks: cancel them and wait until they have ended.

Not `with suppress(CancelledError): await task`: that also swallows a cancellation of the
caller itself (a stop that is itself being cancelled, or bounded by a timeout), which then never
arrives. `asyncio.wait` waits without raising what the tasks raised, and lets the caller's own
cancellation through.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable

log = logging.getLogger(__name__)


async def cancel_and_wait(tasks: Iterable[asyncio.Task[object] | None]) -> None:
    """Cancel every task given (None is skipped) and return when all have ended; an error a
    task ended with is logged, not raised."""
    running = [task for task in tasks if task is not None]
    if not running:
        return
    for task in running:
        task.cancel()
    await asyncio.wait(running)
    for task in running:
        if not task.cancelled() and task.exception() is not None:
            log.error("task %s ended with an error", task.get_name(), exc_info=task.exception())
