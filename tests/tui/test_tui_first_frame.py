"""The first frame: the pending requests the ledger holds, drawn while the runtime starts, then the
full approvals screen in its place; nothing of the queue while the console is locked.

The runtime's start is held on an event, so the frame is seen for certain, not caught in passing.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from helpers import FakeClock
from textual.pilot import Pilot
from tui_support import (
    PINNED_SANDBOX,
    build_console,
    screen_text,
    seed_pending,
    showing_queue,
    until,
)

from svc_console.config.operator_passphrase import OperatorPassphrase
from svc_console.config.paths import Paths
from svc_console.runtime import Runtime
from svc_console.tui import app as console_app
from svc_console.tui.app import ConsoleApp
from svc_console.tui.approvals import first_frame
from svc_console.tui.approvals.first_frame import STARTING, QueuePreview
from svc_console.tui.widgets.queue import RequestQueue

SEEDED = 4


class Held:
    """A console over a ledger with pending requests, whose runtime's start is reached, then held
    until `release` is set (or the app exits)."""

    def __init__(self, app: ConsoleApp) -> None:
        self.app, self.reached, self.release = app, asyncio.Event(), asyncio.Event()
        start, exit = app.runtime.start, app.exit

        async def start_when_released() -> Any:
            self.reached.set()
            await self.release.wait()
            return await start()

        def exit_releasing(*args: Any, **options: Any) -> None:
            self.release.set()  # an app quitting while it starts waits for the start
            exit(*args, **options)

        app.runtime.start = start_when_released  # type: ignore[method-assign]
        app.exit = exit_releasing  # type: ignore[method-assign]

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[Pilot[Any]]:
        """The app under a pilot; a test that fails while the start is held releases it, so the
        app's end (which waits for the start) comes and the failure is reported."""
        async with self.app.run_test(size=(120, 40)) as pilot:
            try:
                yield pilot
            finally:
                self.release.set()


@pytest.fixture
def held(make_runtime: Callable[..., Runtime], clock: FakeClock, paths: Paths) -> Held:
    seed_pending(paths, SEEDED, clock())
    return Held(build_console(make_runtime, clock))


def preview(app: ConsoleApp) -> QueuePreview | None:
    found = app.screen.query(QueuePreview)
    return found.first() if found else None


async def test_the_queue_is_drawn_from_the_ledger_before_the_runtime_runs(held: Held):
    app = held.app
    async with held.running() as pilot:
        await until(pilot, lambda: preview(app) is not None)
        frame = preview(app)
        assert frame is not None
        rows = frame.query_one(RequestQueue)
        await until(pilot, lambda: rows.row_count == SEEDED)
        # The rows are in the widget before they are on the terminal: wait for the paint.
        await until(pilot, lambda: "kilo-bot" in screen_text(app))
        assert app.runtime.broker is None  # drawn before the broker exists
        text = screen_text(app)
        assert STARTING in text and "SANDBOX" in text and "kilo-bot" in text
        # Keys that decide do nothing yet: there is nothing to decide with.
        await pilot.press("a")
        await until(pilot, lambda: app.runtime.broker is None and preview(app) is frame)

        held.release.set()
        await until(pilot, lambda: showing_queue(app))
        assert app.screen.query_one(RequestQueue).row_count == SEEDED
        # The frame gave way: it is gone from the screen it was drawn on.
        assert not any(
            s.query(QueuePreview) for stack in app._screen_stacks.values() for s in stack
        )


async def test_a_team_ledger_on_postgresql_is_drawn_before_the_runtime_runs_too(
    make_runtime: Callable[..., Runtime], clock: FakeClock, paths: Paths, postgres: Any
):
    url = postgres.new_database()
    seed_pending(paths, SEEDED, clock(), url=url)
    held = Held(build_console(make_runtime, clock))
    held.app.runtime.ledger_url = url
    app = held.app
    async with held.running() as pilot:
        await until(pilot, lambda: preview(app) is not None)
        rows = preview(app).query_one(RequestQueue)  # type: ignore[union-attr]
        await until(pilot, lambda: rows.row_count == SEEDED)
        # The rows are in the widget before they are on the terminal: wait for the paint.
        await until(pilot, lambda: "kilo-bot" in screen_text(app))
        assert app.runtime.broker is None
        held.release.set()
        await until(pilot, lambda: showing_queue(app))
        assert app.runtime.ledger.url == url


async def test_a_locked_console_shows_none_of_its_queue_before_it_is_unlocked(
    held: Held, paths: Paths
):
    app = held.app
    OperatorPassphrase(paths.operator_passphrase).set("correct horse battery")
    async with held.running() as pilot:
        # The start reached the runtime's: whether to draw the frame was decided before.
        await until(pilot, held.reached.is_set)
        assert preview(app) is None
        assert "kilo-bot" not in screen_text(app)


async def test_quitting_while_it_starts_opens_no_screen_and_stops_what_started(held: Held):
    app = held.app
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, held.reached.is_set)
        app.exit()  # the start goes on (the app waits for it), then everything it started stops
    assert app.return_code == 0
    assert app.runtime.broker is None and app.runtime.ledger is None
    assert "approvals" not in app._modes


async def test_quitting_before_the_first_frame_is_painted_ends_and_starts_nothing(
    held: Held, monkeypatch: pytest.MonkeyPatch
):
    """An app that ends before its next refresh drops the callbacks waiting for it, the one
    saying the first frame is painted among them: its end must not wait for that paint."""
    app = held.app
    dropped: list[object] = []
    after_refresh = app.call_after_refresh

    def dropping_the_paint(callback: Callable[..., Any], *args: Any, **options: Any) -> bool:
        if callback is console_app._resolve:
            dropped.append(args)
            return True
        return after_refresh(callback, *args, **options)

    monkeypatch.setattr(app, "call_after_refresh", dropping_the_paint)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: dropped)
        app.exit()
    assert app.return_code == 0
    assert not held.reached.is_set()  # the runtime's start was never begun
    assert app.runtime.broker is None and app.runtime.ledger is None


def test_snapshot_the_first_frame(snap_compare: Any, held: Held, monkeypatch: pytest.MonkeyPatch):
    """The banner, the header, the line saying decisions open in a moment, and the queue."""
    app = held.app
    # The sandbox listens on a random port: the banner shows a fixed one, as elsewhere.
    monkeypatch.setattr(first_frame, "_address", lambda sandbox: PINNED_SANDBOX)

    async def run_before(pilot: Pilot[Any]) -> None:
        await until(pilot, lambda: preview(app) is not None)
        frame = preview(app)
        assert frame is not None
        await until(pilot, lambda: frame.query_one(RequestQueue).row_count == SEEDED)

    assert snap_compare(app, terminal_size=(120, 24), run_before=run_before)


# What is imported before each frame, in a process of its own: the start-up's order, kept.
BEFORE_FIRST_PAINT = """
import sys
from svc_console.cli.console import _runtime
_runtime()
import svc_console.tui.app
print(" ".join(sorted(sys.modules)))
"""
BEFORE_QUEUE_FRAME = """
import sys
import svc_console.tui.app, svc_console.tui.approvals.first_frame
print(" ".join(sorted(sys.modules)))
"""


def imported(code: str, home: Path) -> set[str]:
    done = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, "SVC_CONSOLE_HOME": str(home)},
        capture_output=True,
        text=True,
        check=True,
    )
    return set(done.stdout.split())


def test_the_placeholder_is_painted_before_the_models_or_the_broker_are_imported(tmp_path: Path):
    modules = imported(BEFORE_FIRST_PAINT, tmp_path)
    assert "textual.app" in modules  # the measure is real: the app was imported
    assert not {"pydantic", "svc_console.core.models", "svc_console.broker.service"} & modules


def test_the_queue_frame_needs_neither_the_broker_nor_the_network_clients(tmp_path: Path):
    modules = imported(BEFORE_QUEUE_FRAME, tmp_path)
    assert "svc_console.core.models" in modules  # what the frame reads its rows into
    heavy = {"svc_console.broker.service", "svc_console.ledger.store", "aiohttp", "httpx"}
    assert not heavy & modules


BEFORE_READY = """
import sys
import svc_console.tui.app, svc_console.tui.approvals.screen, svc_console.runtime
print(" ".join(sorted(sys.modules)))
"""


def test_the_console_is_ready_to_decide_before_the_dry_runs_client_is_imported(tmp_path: Path):
    """aiohttp, the dry runs' client, is imported when the first dry run opens its session."""
    modules = imported(BEFORE_READY, tmp_path)
    assert {"svc_console.broker.service", "svc_console.market.client"} <= modules
    assert "aiohttp" not in modules
