"""The demo's simulated agents speak the public socket protocol and keep the queue moving."""

from __future__ import annotations

import asyncio
import contextlib

from helpers import eventually

from svc_console.broker.params import ApproveParams
from svc_console.core.states import State
from svc_console.demo import PERSONAS, run_persona


async def test_each_persona_submits_valid_requests_and_caps_its_open_ones(runtime):
    tasks = [
        asyncio.create_task(
            run_persona(p, runtime.paths.socket, interval_s=(0.01, 0.02), max_open=2, seed=7)
        )
        for p in PERSONAS
    ]
    try:
        await eventually(lambda: len(runtime.broker.pending()) == 2 * len(PERSONAS), timeout=10)
        await asyncio.sleep(0.2)  # more time to submit: the cap must hold
        pending = runtime.broker.pending()
        assert sorted(r.agent for r in pending) == sorted(p.name for p in PERSONAS for _ in "ab")
        # Approving frees a slot: the persona submits again.
        first = pending[0]
        await runtime.broker.approve(ApproveParams(request_id=first.id))
        await eventually(
            lambda: (
                sum(r.agent == first.agent for r in runtime.broker.pending()) == 2
                and runtime.broker.get(first.id).state != State.pending
            )
        )
    finally:
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
    rejected = runtime.ledger.count_in_states([State.rejected])
    assert rejected == 0
