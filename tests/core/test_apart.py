"""Work on a loop of its own: its result and its errors reach the caller, it never runs on the
caller's loop, and cancelling the caller cancels it there."""

from __future__ import annotations

import asyncio
import threading

import pytest

from svc_console.core.apart import on_a_loop_of_its_own


async def test_the_result_comes_back_from_another_thread_and_loop():
    caller = asyncio.get_running_loop()

    async def work() -> tuple[str, bool]:
        return threading.current_thread().name, asyncio.get_running_loop() is caller

    name, same_loop = await on_a_loop_of_its_own(work, "apart-test")
    assert name == "apart-test" and not same_loop


async def test_an_error_of_the_work_is_raised_to_the_caller():
    async def work() -> None:
        raise LookupError("not there")

    with pytest.raises(LookupError, match="not there"):
        await on_a_loop_of_its_own(work, "apart-test")


async def test_cancelling_the_caller_cancels_the_work_on_its_own_loop():
    running, ended = threading.Event(), threading.Event()
    seen: list[str] = []

    async def work() -> None:
        running.set()
        try:
            await asyncio.Event().wait()  # only a cancellation ends it
        except asyncio.CancelledError:
            seen.append("cancelled")
            raise
        finally:
            ended.set()

    caller = asyncio.create_task(on_a_loop_of_its_own(work, "apart-test"))
    await asyncio.to_thread(running.wait)
    caller.cancel()
    with pytest.raises(asyncio.CancelledError):
        await caller
    await asyncio.to_thread(ended.wait)
    assert seen == ["cancelled"]
