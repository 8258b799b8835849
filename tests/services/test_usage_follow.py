"""The usage history fills by itself: synced when the console starts, and again shortly after an
execution ends, so a charge is in the ledger (and `usage export`) without anyone pressing `s`; a
sync that fails is logged and the console goes on."""

from __future__ import annotations

import asyncio

from helpers import eventually, plain_request, submit
from operator_support import operator_knowing

from svc_console.core.states import State
from svc_console.services.usage_follow import UsageFollower


def usage_rows(runtime) -> int:
    return runtime.ledger.db.execute("SELECT count(*) FROM usage").fetchone()[0]


async def test_a_charge_reaches_the_usage_history_without_a_manual_sync(runtime):
    await eventually(lambda: runtime.usage.last_synced_at is not None)  # the first, at start
    before = usage_rows(runtime)
    ticket = await submit(runtime)
    request_id = ticket["request_id"]
    await eventually(lambda: runtime.broker.get(request_id).state == State.pending)
    async with operator_knowing(runtime) as console:  # agents of this user: it is needed
        await console.call("approvals.approve", {"request_id": request_id})
    await eventually(lambda: runtime.broker.get(request_id).state == State.succeeded)
    await eventually(lambda: usage_rows(runtime) == before + 1, timeout=20)
    linked = runtime.ledger.db.execute(
        "SELECT count(*) FROM usage WHERE request_id = ?", [request_id]
    ).fetchone()[0]
    assert linked == 1


async def test_a_charge_the_service_bills_above_the_approval_is_flagged(runtime, sandbox):
    sandbox.state.faults.add("overbill", factor=3, count=1)  # the service bills 0.03 for 0.01
    ticket = await submit(runtime)
    request_id = ticket["request_id"]
    await eventually(lambda: runtime.broker.get(request_id).state == State.pending)
    async with operator_knowing(runtime) as console:
        await console.call("approvals.approve", {"request_id": request_id})
    await eventually(lambda: runtime.broker.get(request_id).state == State.succeeded)

    def flagged():
        return runtime.ledger.db.execute(
            "SELECT amount, flag FROM usage WHERE request_id = ?", [request_id]
        ).fetchall()

    await eventually(lambda: flagged() != [], timeout=20)
    assert flagged() == [(30_000, "above_ceiling")]  # atomic USDC


async def test_a_failed_sync_is_kept_as_the_last_error_and_the_console_goes_on(runtime, sandbox):
    await eventually(lambda: runtime.usage.last_synced_at is not None)
    told: list[str | None] = []
    runtime.usage.listeners.append(lambda: told.append(runtime.usage.last_error))
    sandbox.stop()  # the service is gone
    runtime.usage.sync_soon()
    await eventually(lambda: runtime.usage.last_error is not None, timeout=20)
    await eventually(lambda: told and told[-1] is not None)  # a screen hears of it at once
    assert runtime.broker is not None and runtime.usage.running


async def test_stopping_as_a_sync_is_asked_for_still_stops():
    """The cancellation of stop() arriving in the same turn of the loop as sync_soon(): on
    Python 3.11, asyncio.wait_for returned normally then, the follower went on and stop() never
    returned (the suite hung in CI)."""
    synced = asyncio.Event()

    async def sync() -> None:
        return None

    follower = UsageFollower(sync, clock=lambda: 0.0)
    follower.listeners.append(synced.set)
    follower.start(Subscribable())
    await synced.wait()  # the follower now enters its wait, as this test resumes
    follower.sync_soon()
    async with asyncio.timeout(10):  # a bound for a hang, not a timing: stop() is immediate
        await follower.stop()
    assert not follower.running


async def test_a_service_that_ends_with_the_console_is_synced_once_more_at_the_stop():
    """The embedded sandbox's charges end with its process: the follower told so syncs one last
    time as it stops when an execution began since its last sync (its charge is kept). With no
    execution since, or a service that outlives the console, it does not."""
    executing = plain_request().model_copy(update={"state": State.executing})
    for last, executed, expected in ((True, True, 2), (True, False, 1), (False, True, 1)):
        synced: list[int] = []
        first = asyncio.Event()

        async def sync(synced: list[int] = synced) -> int:
            synced.append(len(synced))
            return len(synced)

        follower = UsageFollower(sync, clock=lambda: 0.0, sync_at_stop=last)
        follower.listeners.append(first.set)
        broker = Subscribable()
        follower.start(broker)
        await first.wait()  # the sync at start
        if executed:
            broker.tell(executing)  # a call under way: the service may have charged it
        await follower.stop()
        assert len(synced) == expected, (last, executed)
        assert not follower.running


async def test_a_sync_that_fails_leaves_the_execution_before_it_for_the_stop():
    """An execution, then a sync that fails: the charge is still unsynced, and the stop syncs."""
    outcomes = [RuntimeError("service away"), None, None]
    calls: list[int] = []
    first = asyncio.Event()

    async def sync() -> None:
        calls.append(1)
        outcome = outcomes[len(calls) - 1]
        if outcome is not None:
            raise outcome

    follower = UsageFollower(sync, clock=lambda: 0.0, sync_at_stop=True)
    follower.listeners.append(first.set)
    broker = Subscribable()
    follower.start(broker)
    # Told before the first sync begins (its task runs at the loop's next turn); that sync fails.
    broker.tell(plain_request().model_copy(update={"state": State.executing}))
    await first.wait()
    assert follower.last_error is not None
    await follower.stop()
    assert len(calls) == 2


class Subscribable:
    """A broker's `subscribe` alone: `tell` hands a request to its listener."""

    def __init__(self) -> None:
        self.listeners: list = []

    def subscribe(self, listener):
        self.listeners.append(listener)
        return lambda: None

    def tell(self, request) -> None:
        for listener in self.listeners:
            listener(request)
