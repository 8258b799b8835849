"""A broker that runs beside the test as `svc-console serve` runs beside a console: on a loop of
its own, in a thread, with its real sockets and ledger, so that a console attached to it (even
one driven by the snapshot plugin, on a loop the test does not own) speaks to it as to another
process."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine, Iterator
from contextlib import contextmanager
from typing import Any

from svc_console.runtime import Runtime


class BrokerThread:
    """`runtime` started on a loop in a thread; `run(coro)` runs a coroutine there."""

    def __init__(self, runtime: Runtime):
        self.runtime = runtime
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)

    def start(self) -> None:
        self._thread.start()
        self.run(self.runtime.start())

    def run(self, coroutine: Coroutine[Any, Any, Any], timeout: float = 60.0) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout)

    def stop(self) -> None:
        self.run(self.runtime.stop())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(30)
        self.loop.close()


@contextmanager
def broker_beside(runtime: Runtime) -> Iterator[BrokerThread]:
    broker = BrokerThread(runtime)
    broker.start()
    try:
        yield broker
    finally:
        broker.stop()
