"""Helpers the tests share (fixtures live in conftest.py)."""

import asyncio
from collections.abc import Callable
from typing import Any


class FakeClock:
    """A clock tests move by hand, so ages, lifetimes and snapshots are exact."""

    def __init__(self, start: float = 1_795_000_000.0):
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


async def eventually(predicate: Callable[[], Any], timeout: float = 5.0) -> Any:
    """Poll until `predicate()` is truthy: the broker works in background tasks."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if loop.time() > deadline:
            raise AssertionError("condition not reached in time")
        await asyncio.sleep(0.01)
