"""Long network work on an event loop of its own, in a thread of its own, so that it never holds
up the loop of the caller (the TUI's: a catalogue sync is some fifteen hundred requests, each a
millisecond or two of the loop's time, which would otherwise slow every key the operator types).

The caller awaits the result as usual. Cancelling the caller cancels the work on its own loop,
and the caller does not wait for it to wind down; the thread is a daemon, so a process that exits
meanwhile is not held up by it either.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


async def on_a_loop_of_its_own(make: Callable[[], Coroutine[Any, Any, T]], name: str) -> T:
    """`make()`'s coroutine run to its end on a new event loop in a daemon thread named `name`."""
    caller = asyncio.get_running_loop()
    result: asyncio.Future[T] = caller.create_future()
    started = threading.Event()
    inner: list[tuple[asyncio.AbstractEventLoop, asyncio.Task[Any]]] = []

    def deliver(outcome: Callable[[Any], None], value: Any) -> None:
        if not result.done():
            outcome(value)

    def tell(outcome: Callable[[Any], None], value: Any) -> None:
        with contextlib.suppress(RuntimeError):  # the caller's loop has closed: nobody waits
            caller.call_soon_threadsafe(deliver, outcome, value)

    async def main() -> T:
        task = asyncio.current_task()
        assert task is not None
        inner.append((asyncio.get_running_loop(), task))
        started.set()
        return await make()

    def run() -> None:
        try:
            value = asyncio.run(main())
        except BaseException as exc:  # delivered to the caller, who raises it
            started.set()
            tell(result.set_exception, exc)
        else:
            tell(result.set_result, value)

    threading.Thread(target=run, name=name, daemon=True).start()
    try:
        return await result
    except asyncio.CancelledError:
        started.wait()
        if inner:
            loop, task = inner[0]
            with contextlib.suppress(RuntimeError):  # its loop has ended already
                loop.call_soon_threadsafe(task.cancel)
        raise
