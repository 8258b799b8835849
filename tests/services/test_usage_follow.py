"""The usage history fills by itself: synced when the console starts, and again shortly after an
execution ends, so a charge is in the ledger (and `usage export`) without anyone pressing `s`; a
sync that fails is logged and the console goes on."""

from __future__ import annotations

from helpers import eventually, operator, submit

from svc_console.core.states import State


def usage_rows(runtime) -> int:
    return runtime.ledger.db.execute("SELECT count(*) FROM usage").fetchone()[0]


async def test_a_charge_reaches_the_usage_history_without_a_manual_sync(runtime):
    await eventually(lambda: runtime.usage.last_synced_at is not None)  # the first, at start
    before = usage_rows(runtime)
    ticket = await submit(runtime)
    request_id = ticket["request_id"]
    await eventually(lambda: runtime.broker.get(request_id).state == State.pending)
    async with operator(runtime) as console:
        await console.call("approvals.approve", {"request_id": request_id})
    await eventually(lambda: runtime.broker.get(request_id).state == State.succeeded)
    await eventually(lambda: usage_rows(runtime) == before + 1, timeout=20)
    linked = runtime.ledger.db.execute(
        "SELECT count(*) FROM usage WHERE request_id = ?", [request_id]
    ).fetchone()[0]
    assert linked == 1


async def test_a_failed_sync_is_kept_as_the_last_error_and_the_console_goes_on(runtime, sandbox):
    await eventually(lambda: runtime.usage.last_synced_at is not None)
    sandbox.stop()  # the service is gone
    runtime.usage.sync_soon()
    await eventually(lambda: runtime.usage.last_error is not None, timeout=20)
    assert runtime.broker is not None and runtime.usage.running
