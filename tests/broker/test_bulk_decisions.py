"""Deciding similar requests together: fifty pending requests approved with one confirmation of
their total, recorded as fifty decisions with fifty audit events; a wrong or missing total decides
nothing; a request that can no longer be approved is reported, the others still are."""

from __future__ import annotations

import asyncio
import subprocess
from collections.abc import AsyncIterator
from decimal import Decimal

import pytest
from helpers import eventually
from operator_support import PASSPHRASE, operator_cli

from svc_console.agent import AsyncAgent
from svc_console.broker.errors import ConfirmationRequired, UnknownRequest
from svc_console.core.states import State
from svc_console.runtime import Runtime

SEARCH = {"endpoint_id": "ep_websearch_basic", "purpose": "research"}  # 0.01 USDC a call


@pytest.fixture
async def runtime(make_runtime) -> AsyncIterator[Runtime]:
    # Above 0.10 USDC the operator types the amount: fifty searches (0.50) need their total.
    runtime = make_runtime(confirm_above_usdc=Decimal("0.10"))
    await runtime.start()
    yield runtime
    await runtime.stop()


async def pending(runtime: Runtime, count: int) -> list[str]:
    async def one(n: int) -> str:
        async with AsyncAgent("bot", runtime.paths.socket) as client:
            ticket = await client.submit(**{**SEARCH, "inputs": {"query": f"q{n}"}})
        return ticket["request_id"]

    ids = list(await asyncio.gather(*(one(n) for n in range(count))))
    await eventually(
        lambda: all(runtime.broker.get(i).state == State.pending for i in ids), timeout=30
    )
    return ids


def decisions(runtime: Runtime) -> int:
    return runtime.ledger.db.execute("SELECT count(*) FROM decisions").fetchone()[0]


async def test_fifty_requests_approved_with_one_confirmation_are_fifty_decisions(runtime):
    ids = await pending(runtime, 50)
    with pytest.raises(ConfirmationRequired) as missing:
        await runtime.broker.approve_many(ids)
    assert str(missing.value) == "type the total: 0.50 USDC for 50 requests"
    with pytest.raises(ConfirmationRequired) as wrong:
        await runtime.broker.approve_many(ids, confirm_total=Decimal("0.05"))
    assert str(wrong.value) == "0.05 USDC is not the total; type it: 0.50 USDC for 50 requests"
    assert decisions(runtime) == 0
    assert all(runtime.broker.get(i).state == State.pending for i in ids)

    outcome = await runtime.broker.approve_many(ids, confirm_total=Decimal("0.50"), note="ok")
    assert set(outcome) == set(ids) and set(outcome.values()) <= {"approved", "executing"}
    assert decisions(runtime) == 50
    events = runtime.ledger.db.execute(
        "SELECT count(DISTINCT request_id) FROM events WHERE type = 'decision'"
    ).fetchone()[0]
    assert events == 50
    done = await eventually(
        lambda: all(runtime.broker.get(i).state == State.succeeded for i in ids), timeout=60
    )
    assert done


async def test_a_request_that_left_the_queue_is_left_out_and_said(runtime):
    ids = await pending(runtime, 3)
    await runtime.broker.cancel(ids[1])
    outcome = await runtime.broker.approve_many(ids, confirm_total=Decimal("0.03"))
    assert outcome[ids[1]].startswith("not approved:") and "cancelled" in outcome[ids[1]]
    assert {outcome[ids[0]], outcome[ids[2]]} <= {"approved", "executing", "succeeded"}
    assert decisions(runtime) == 2
    later = await pending(runtime, 1)
    with pytest.raises(UnknownRequest):
        await runtime.broker.deny_many([*later, "req_nowhere"], "no")
    assert runtime.broker.get(later[0]).state == State.pending


async def test_the_cli_approves_and_denies_several_at_once(runtime):
    ids = await pending(runtime, 12)
    runtime.passphrase.set(PASSPHRASE)  # agents of this user are accepted: it is needed

    async def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return await operator_cli(runtime.paths.home, "approvals", *args)

    untyped = await cli("approve", *ids[:11])
    assert untyped.returncode == 2
    assert "these 11 requests may cost 0.11 USDC in all" in untyped.stderr
    assert "--confirm-amount 0.11" in untyped.stderr
    approved = await cli("approve", *ids[:11], "--confirm-amount", "0.11")
    assert approved.returncode == 0, approved.stderr
    assert len(approved.stdout.splitlines()) == 11
    # One already decided among them: the others are denied, that one is said, the exit is 1.
    denied = await cli("deny", ids[11], ids[0], "--reason", "enough")
    assert denied.returncode == 1, denied.stderr
    assert f"{ids[11]} denied" in denied.stdout
    assert f"{ids[0]} not denied: request {ids[0]} is" in denied.stdout
    assert runtime.broker.get(ids[11]).state == State.denied
