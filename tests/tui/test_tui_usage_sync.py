"""The usage screen beside the background sync (`services/usage_follow.py`): it says when the
history was last synced, or why the last sync failed; a background sync that stored charges
reloads the table without a key pressed; `s` still syncs at once.

Each step waits for the event it is about (the follower's listener, the label, the table), never
for a fixed time."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from helpers import FakeClock
from test_tui_usage import console, open_usage, usage_clock
from textual.pilot import Pilot
from tui_support import screen_text, until, usage_settled

from svc_console.agent import AsyncAgent
from svc_console.broker.params import ApproveParams
from svc_console.runtime import Runtime
from svc_console.tui.app import ConsoleApp
from svc_console.tui.usage.screen import UsageScreen

__all__ = ["console", "usage_clock"]  # fixtures, shared with the usage tests


def synced_label(app: ConsoleApp) -> str:
    return str(app.screen.query_one("#usage-synced").render())


async def background_sync(pilot: Pilot[Any]) -> None:
    """Ask the follower to sync soon and wait until it has told its listeners."""
    follower = pilot.app.runtime.usage
    told = asyncio.Event()
    follower.listeners.append(told.set)
    try:
        follower.sync_soon()
        await asyncio.wait_for(told.wait(), timeout=15)
    finally:
        follower.listeners.remove(told.set)


async def pay_one_search(app: ConsoleApp) -> None:
    broker = app.runtime.broker
    async with AsyncAgent("research-bot", app.runtime.paths.socket) as agent:
        ticket = await agent.submit(
            endpoint_id="ep_websearch_basic", inputs={"query": "solar"}, purpose="sync test"
        )
        for _ in range(200):
            if broker.get(ticket["request_id"]).state == "pending":
                break
            await asyncio.sleep(0.05)
        await broker.approve(ApproveParams(request_id=ticket["request_id"]))
        done = await agent.wait_for_outcome(ticket["request_id"], timeout_s=15)
    assert done["state"] == "succeeded"


async def test_the_first_background_sync_waits_until_every_screen_is_open(
    console: Callable[..., ConsoleApp], usage_clock: FakeClock
):
    """Its HTTP client's making and imports would hold the console's first full screen back:
    the first sync starts once the home screen is drawn and the other screens are open."""
    app = console()
    runtime = app.runtime
    sync, screens_open_at_sync = runtime.sync_usage, []

    async def recorded() -> Any:
        screens_open_at_sync.append(app.screens_open)
        return await sync()

    runtime.sync_usage = recorded  # type: ignore[method-assign]
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: runtime.usage is not None and runtime.usage.last_synced_at)
        assert runtime.usage.last_error is None
        assert screens_open_at_sync[0] is True


async def test_a_sync_that_ends_before_the_screen_is_shown_is_on_it(
    console: Callable[..., ConsoleApp], usage_clock: FakeClock
):
    """A screen made, then a sync ended, then the screen shown: it tells no listener of the
    screen's (none is added before the screen is mounted), and the screen still says so."""
    app = console()
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: app.screens_open and app.runtime.usage.last_synced_at)
        screen = UsageScreen(app.runtime)
        assert screen.sync_status.synced_at == app.runtime.usage.last_synced_at
        usage_clock.advance(180)
        await background_sync(pilot)
        await app.push_screen(screen)
        await until(pilot, lambda: usage_settled(app))
        assert "synced 12:03 UTC" in screen_text(app)


async def test_a_background_sync_updates_the_label_and_reloads_the_table(
    console: Callable[..., ConsoleApp], usage_clock: FakeClock
):
    app = console()
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_usage(pilot)
        assert synced_label(app) == "synced 12:00 UTC"
        assert screen.table.total == 0
        follower = app.runtime.usage
        assert screen._background_synced in follower.listeners

        # A charge on the service: the follower fetches it (an execution ended), and the table
        # shows it with no key pressed.
        usage_clock.advance(180)
        generation = screen.generation
        await pay_one_search(app)
        await background_sync(pilot)
        await until(pilot, lambda: usage_settled(app) and screen.table.total == 1)
        assert screen.generation > generation
        assert "synced 12:03 UTC" in screen_text(app)
        # Paid through this console: the request's endpoint record names the provider.
        await until(pilot, lambda: "Searchly" in screen_text(app))

        # A sync that stores nothing moves the label on and leaves the table as it is.
        usage_clock.advance(120)
        generation = screen.generation
        await background_sync(pilot)
        await until(pilot, lambda: synced_label(app) == "synced 12:05 UTC")
        assert screen.generation == generation

        # `s` is still a sync at once, and the label says when.
        usage_clock.advance(60)
        await pilot.press("s")
        await until(pilot, lambda: synced_label(app) == "synced 12:06 UTC")

    # The screen went with the app: the follower no longer tells it anything.
    assert screen._background_synced not in follower.listeners


async def test_a_failed_sync_is_shown_then_the_next_success(
    console: Callable[..., ConsoleApp], monkeypatch: pytest.MonkeyPatch
):
    """The service away: the label says why, in the error colour; back, the label follows."""
    failing = {"now": True}
    real = Runtime.sync_usage

    async def sync_usage(self: Runtime) -> Any:
        if failing["now"]:
            raise ConnectionError("the service is away")
        return await real(self)

    monkeypatch.setattr(Runtime, "sync_usage", sync_usage)
    app = console()
    async with app.run_test(size=(120, 40)) as pilot:
        await open_usage(pilot)
        assert synced_label(app) == "sync failed: ConnectionError: the service is away"

        failing["now"] = False
        await background_sync(pilot)
        await until(pilot, lambda: synced_label(app) == "synced 12:00 UTC")

        # A failed `s` is said there too, with when the last one succeeded.
        failing["now"] = True
        await pilot.press("s")
        await until(pilot, lambda: "sync failed" in synced_label(app))
        assert synced_label(app).endswith("· last synced 12:00 UTC")
