"""A decision is bound to what its operator saw: one that carries the digest of the facts it was
made on is refused once the request changed (repriced, or another request with the same inputs),
on every path (the broker in process, the operator socket, several at once, the CLI's --seen),
and nothing is decided or recorded. A decision by id alone (a script's) is still taken."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from decimal import Decimal

import pytest
from helpers import eventually, operator

from svc_console.agent import AgentError, AsyncAgent
from svc_console.broker.errors import FactsChanged
from svc_console.broker.params import ApproveParams, DenyParams
from svc_console.core.shown_facts import facts_digest
from svc_console.core.states import State
from svc_console.runtime import Runtime

# One agent asking twice for the very same thing: only the request id tells them apart.
SAME = {"endpoint_id": "ep_websearch_basic", "inputs": {"query": "same"}, "purpose": "same"}


@pytest.fixture
async def runtime(make_runtime) -> AsyncIterator[Runtime]:
    runtime = make_runtime()
    await runtime.start()
    yield runtime
    await runtime.stop()


async def twins(runtime: Runtime, count: int = 2) -> list[str]:
    ids = []
    async with AsyncAgent("twin-bot", runtime.paths.socket) as agent:
        for _ in range(count):
            ids.append((await agent.submit(**SAME))["request_id"])
    broker = runtime.broker
    await eventually(lambda: all(broker.get(i).state == State.pending for i in ids), timeout=30)
    return ids


async def recorded(runtime: Runtime) -> tuple[int, int]:
    """How many decisions and audit events the ledger holds, once all it was given is committed."""
    await runtime.ledger.committed()
    db = runtime.ledger.db
    decisions = db.execute("SELECT count(*) FROM decisions").fetchone()[0]
    events = db.execute("SELECT count(*) FROM events").fetchone()[0]
    return decisions, events


async def repriced(runtime: Runtime, sandbox, request_id: str) -> str:
    """Approved by id alone, then the provider asks three times the price: the request is back
    before the operator, nothing paid. Returns the digest of its facts before."""
    before = facts_digest(runtime.broker.get(request_id))
    sandbox.state.reprice_factor = Decimal(3)
    await runtime.broker.approve(ApproveParams(request_id=request_id))
    await eventually(
        lambda: (r := runtime.broker.get(request_id)).state == State.pending and r.reason
    )
    sandbox.state.reprice_factor = Decimal(1)
    return before


async def test_a_decision_on_facts_from_before_a_repricing_is_refused_and_records_nothing(
    runtime, sandbox
):
    [request_id] = await twins(runtime, 1)
    seen = await repriced(runtime, sandbox, request_id)
    now = runtime.broker.get(request_id)
    assert now.estimate is not None and now.estimate.amount_usdc == Decimal("0.03")
    assert facts_digest(now) != seen
    before = await recorded(runtime)
    with pytest.raises(FactsChanged) as refused:
        await runtime.broker.approve(ApproveParams(request_id=request_id, seen=seen))
    assert str(refused.value).startswith(
        f"{request_id} changed since it was shown: it is now pending, up to 0.03 USDC on base"
    )
    assert str(refused.value).endswith("; nothing was decided")
    with pytest.raises(FactsChanged):
        await runtime.broker.deny(DenyParams(request_id=request_id, reason="no", seen=seen))
    with pytest.raises(FactsChanged):  # nor a grant made with it
        await runtime.broker.approve(
            ApproveParams(
                request_id=request_id, seen=seen, grant_for="1h", grant_total=Decimal("1")
            )
        )
    assert await recorded(runtime) == before
    assert runtime.broker.get(request_id).state == State.pending
    assert runtime.broker.grants.in_force() == []
    # On the facts as they are now, the approval is taken, up to the new price.
    await runtime.broker.approve(ApproveParams(request_id=request_id, seen=facts_digest(now)))
    done = await eventually(
        lambda: (r := runtime.broker.get(request_id)).state == State.succeeded and r
    )
    assert done.decision is not None and done.decision.ceiling_usdc == Decimal("0.03")


async def test_a_twin_with_the_same_inputs_is_not_the_request_that_was_shown(runtime):
    first, second = await twins(runtime)
    shown = facts_digest(runtime.broker.get(first))
    assert facts_digest(runtime.broker.get(second)) != shown
    before = await recorded(runtime)
    with pytest.raises(FactsChanged, match=f"^{second} changed since it was shown"):
        await runtime.broker.deny(DenyParams(request_id=second, reason="dup", seen=shown))
    assert await recorded(runtime) == before
    await runtime.broker.deny(DenyParams(request_id=first, reason="dup", seen=shown))
    assert runtime.broker.get(first).state == State.denied
    assert runtime.broker.get(second).state == State.pending


async def test_several_decided_together_are_refused_together_when_one_changed(runtime):
    ids = await twins(runtime, 3)
    seen = {i: facts_digest(runtime.broker.get(i)) for i in ids}
    swapped = {**seen, ids[2]: seen[ids[0]]}  # the third as if it were the first
    before = await recorded(runtime)
    with pytest.raises(FactsChanged) as refused:
        await runtime.broker.approve_many(ids, confirm_total=Decimal("0.03"), seen=swapped)
    assert refused.value.data["request_ids"] == [ids[2]]
    with pytest.raises(FactsChanged):
        await runtime.broker.deny_many(ids, "no", seen=swapped)
    assert await recorded(runtime) == before
    assert all(runtime.broker.get(i).state == State.pending for i in ids)
    outcome = await runtime.broker.deny_many(ids, "no", seen=seen)
    assert set(outcome.values()) == {"denied"}


async def test_the_operator_socket_lists_digests_and_refuses_a_stale_one(runtime, sandbox):
    first, second = await twins(runtime)
    async with operator(runtime) as line:
        listed = {row["id"]: row for row in await line.call("approvals.list", {})}
        for request_id in (first, second):
            assert listed[request_id]["digest"] == facts_digest(runtime.broker.get(request_id))
        seen = listed[first]["digest"]
        await repriced(runtime, sandbox, first)
        before = await recorded(runtime)
        calls = [
            ("approvals.approve", {"request_id": first, "seen": seen}),
            ("approvals.deny", {"request_id": first, "reason": "no", "seen": seen}),
            ("approvals.approve_many", {"request_ids": [first, second], "seen": {first: seen}}),
            (
                "approvals.deny_many",
                {"request_ids": [first], "reason": "no", "seen": {first: seen}},
            ),
        ]
        for method, params in calls:
            with pytest.raises(AgentError) as refused:
                await line.call(method, params)
            assert refused.value.reason == "changed", method
            assert f"{first} changed since it was shown" in refused.value.message
            assert refused.value.data["request_ids"] == [first]
        assert await recorded(runtime) == before
        # By id alone (a script's way) it is still decided, as the request is now.
        await line.call("approvals.deny", {"request_id": second, "reason": "by id"})
    assert runtime.broker.get(first).state == State.pending
    assert runtime.broker.get(second).state == State.denied


@pytest.mark.parametrize(
    "method, params",
    [
        ("approvals.approve", {"request_id": "req_x", "seen": "not a digest"}),
        ("approvals.deny", {"request_id": "req_x", "reason": "r", "seen": "A" * 64}),
        ("approvals.approve_many", {"request_ids": ["req_x"], "seen": {"req_y": "0" * 64}}),
    ],
)
async def test_a_malformed_seen_is_invalid_params(runtime, method, params):
    async with operator(runtime) as line:
        with pytest.raises(AgentError) as refused:
            await line.call(method, params)
    assert refused.value.reason == "invalid_params"


def cli(runtime: Runtime, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SVC_CONSOLE_HOME": str(runtime.paths.home)}
    command = [sys.executable, "-m", "svc_console", "approvals", *args]
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=60)


async def test_the_cli_decides_only_what_was_listed_when_given_its_digest(runtime, sandbox):
    first, second, third = await twins(runtime, 3)
    listing = await asyncio.to_thread(cli, runtime, "list", "--json")
    assert listing.returncode == 0, listing.stderr
    digests = {row["id"]: row["digest"] for row in json.loads(listing.stdout)}
    assert digests[first] == facts_digest(runtime.broker.get(first))
    await repriced(runtime, sandbox, first)
    before = await recorded(runtime)
    for args in (
        ("approve", first, "--seen", digests[first]),
        ("deny", first, "--reason", "no", "--seen", digests[first]),
        ("approve", first, second, "--seen", digests[first], "--seen", digests[second]),
    ):
        refused = await asyncio.to_thread(cli, runtime, *args)
        assert refused.returncode == 2, args
        assert (
            f"{first} changed since it was shown: it is now pending, up to 0.03 USDC on base"
            in refused.stderr
        ), refused.stderr
        assert refused.stderr.rstrip().endswith("; nothing was decided")
        assert "Traceback" not in refused.stderr and len(refused.stderr.splitlines()) == 1
    for args, said in (
        (("approve", second, "--seen", "abc"), "--seen takes a digest"),
        (("deny", second, third, "--reason", "r", "--seen", digests[second]), "once per ID"),
    ):
        wrong = await asyncio.to_thread(cli, runtime, *args)
        assert wrong.returncode == 2 and said in wrong.stderr, wrong.stderr
    assert await recorded(runtime) == before
    assert all(runtime.broker.get(i).state == State.pending for i in (first, second, third))
    denied = await asyncio.to_thread(
        cli, runtime, "deny", second, third, "--reason", "dup", "--seen", digests[second],
        "--seen", digests[third],
    )  # fmt: skip
    assert denied.returncode == 0, denied.stderr
    assert runtime.broker.get(second).state == State.denied
    helped = await asyncio.to_thread(cli, runtime, "approve", "--help")
    assert "--seen DIGEST" in helped.stdout and "Optional" in helped.stdout
