"""The garbage collector while the console starts: paused from the command's start to the console
ready to decide, then what start-up made is frozen and collection resumes, however the start ends
(core/collector.py). A console that never resumed it would keep every cycle it makes for as long
as it runs."""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from helpers import FakeClock
from test_tui_first_frame import Held
from tui_support import build_console, showing_queue, until

from svc_console.core import collector
from svc_console.runtime import Runtime


@pytest.fixture
def paused() -> Iterator[None]:
    """Collection paused as `svc-console` and `serve` pause it; put back as found after."""
    assert gc.isenabled()
    collector.starting()
    try:
        yield
    finally:
        collector._paused = False
        gc.enable()


async def test_paused_while_the_console_starts_and_resumed_once_it_can_decide(
    paused: None, make_runtime: Callable[..., Runtime], clock: FakeClock
):
    held = Held(build_console(make_runtime, clock))
    app = held.app
    async with held.running() as pilot:
        await until(pilot, held.reached.is_set)
        assert not gc.isenabled()  # the runtime's start is reached: still starting
        held.release.set()
        await until(pilot, lambda: showing_queue(app) and gc.isenabled())
        assert gc.get_freeze_count() > 0  # start-up's objects, out of later passes


async def test_resumed_when_the_start_fails(
    paused: None, make_runtime: Callable[..., Runtime], clock: FakeClock
):
    app = build_console(make_runtime, clock)

    async def fails() -> Any:
        raise OSError("the socket's folder is gone")

    app.runtime.start = fails  # type: ignore[method-assign]
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: app.return_code == 1)
    assert gc.isenabled()
    assert gc.get_freeze_count() == 0  # nothing started, nothing kept for good


async def test_serve_resumes_it_once_its_runtime_is_up(paused: None, runtime: Runtime):
    # `runtime` is started after `paused`, as `serve` starts its runtime after pausing.
    assert runtime.broker is not None
    assert gc.isenabled() and gc.get_freeze_count() > 0


def test_a_collector_paused_by_someone_else_stays_paused():
    gc.disable()
    try:
        collector.resume()
        assert not gc.isenabled()
    finally:
        gc.enable()
