"""`approvals.follow` on the operator socket: every change to a request pushed as a notification
(its id and state), to as many followers as there are; only on the operator socket; and a follower
that falls a buffer behind is cut off while the broker goes on deciding."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import AsyncIterator

import pytest
from helpers import eventually, operator
from operator_support import PASSPHRASE

from svc_console.agent import AgentError, AsyncAgent
from svc_console.broker.limits import Limits
from svc_console.broker.params import SubmitParams
from svc_console.core.states import State
from svc_console.runtime import Runtime

SEARCH = {"endpoint_id": "ep_websearch_basic", "purpose": "research"}  # 0.01 USDC a call


async def pending(runtime: Runtime, count: int) -> list[str]:
    """`count` requests waiting for the operator, submitted in process (no agent's process tree
    stands behind them, so this test's process may decide them)."""
    broker = runtime.broker
    ids = []
    for n in range(count):
        params = SubmitParams(agent="bot", kind="market_call", inputs={"query": f"q{n}"}, **SEARCH)
        ids.append((await broker.submit(params)).id)
    await eventually(lambda: all(broker.get(i).state == State.pending for i in ids), timeout=30)
    return ids


class Follower:
    """A raw connection to the operator socket that asked `approvals.follow`: its notifications,
    read line by line as they come."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
        self.reader, self.writer = reader, writer
        self.changes: list[dict] = []

    @classmethod
    async def open(cls, runtime: Runtime) -> Follower:
        reader, writer = await asyncio.open_unix_connection(str(runtime.paths.operator_socket))
        writer.write(b'{"jsonrpc":"2.0","id":1,"method":"approvals.follow","params":{}}\n')
        await writer.drain()
        reply = json.loads(await asyncio.wait_for(reader.readline(), 15))
        assert reply["result"]["following"] is True
        return cls(reader, writer)

    async def until(self, request_id: str, state: str) -> None:
        """Read notifications until one says `request_id` is in `state`."""
        while not any(c == {"request_id": request_id, "state": state} for c in self._said()):
            line = await asyncio.wait_for(self.reader.readline(), 30)
            assert line, "the connection ended"
            message = json.loads(line)
            assert message["method"] == "approvals.changed" and "id" not in message
            self.changes.append(message["params"])

    def _said(self) -> list[dict]:
        return [{"request_id": c["request_id"], "state": c["state"]} for c in self.changes]

    async def to_the_end(self) -> int:
        """Read until the console ends the connection; how many notifications came first."""
        count = 0
        while await asyncio.wait_for(self.reader.readline(), 30):
            count += 1
        return count

    def close(self) -> None:
        self.writer.close()


@pytest.fixture
async def small_buffer(make_runtime) -> AsyncIterator[Runtime]:
    """A console whose operator socket holds at most two changes for a follower."""
    runtime = make_runtime()
    await runtime.start()
    runtime.operator_socket.methods.limits = dataclasses.replace(Limits(), follow_buffer=2)
    yield runtime
    await runtime.stop()


async def test_a_follower_hears_each_change_of_a_request_through_to_its_outcome(runtime):
    follower = await Follower.open(runtime)
    try:
        [request_id] = await pending(runtime, 1)
        await follower.until(request_id, "pending")
        runtime.passphrase.set(PASSPHRASE)  # agents of this user are accepted: it is needed
        async with operator(runtime) as line:
            said = {"request_id": request_id, "passphrase": PASSPHRASE}
            approved = await line.call("approvals.approve", said)
        assert approved["state"] == "approved"
        await follower.until(request_id, "approved")
        await follower.until(request_id, "succeeded")
    finally:
        follower.close()
    states = [c["state"] for c in follower.changes if c["request_id"] == request_id]
    # In the order they happened; nothing but the id, the state, when, and the threshold.
    assert states.index("pending") < states.index("approved") < states.index("succeeded")
    assert set(follower.changes[0]) == {"request_id", "state", "updated_at", "confirm_above_usdc"}


async def test_two_followers_both_hear_a_decision_made_on_a_third_connection(runtime):
    first, second = await Follower.open(runtime), await Follower.open(runtime)
    try:
        [request_id] = await pending(runtime, 1)
        runtime.passphrase.set(PASSPHRASE)
        async with operator(runtime) as line:
            said = {"request_id": request_id, "reason": "not today", "passphrase": PASSPHRASE}
            await line.call("approvals.deny", said)
        await first.until(request_id, "denied")
        await second.until(request_id, "denied")
    finally:
        first.close()
        second.close()
    assert runtime.broker.get(request_id).state == State.denied


async def test_follow_is_served_only_on_the_operator_socket(runtime):
    async with AsyncAgent("bot", runtime.paths.socket) as agent:
        with pytest.raises(AgentError) as refused:
            await agent.call("approvals.follow", {})
    assert refused.value.reason == "not_authorised"
    async with operator(runtime) as line:
        assert "approvals.follow" in line.hello_info["methods"]
        answer = await line.call("approvals.follow", {})
    assert answer["passphrase_required"] is False
    assert answer["buffer"] == runtime.operator_socket.limits.follow_buffer


async def test_a_follower_that_falls_behind_is_cut_off_and_the_broker_goes_on(small_buffer):
    runtime = small_buffer
    ids = await pending(runtime, 5)
    laggard = await Follower.open(runtime)
    try:
        # Five approvals in one go: five changes before the follower's writer can send one,
        # more than its buffer of two holds.
        outcome = await runtime.broker.approve_many(ids)
        assert set(outcome.values()) == {"approved"}
        heard = await laggard.to_the_end()
    finally:
        laggard.close()
    assert heard < 5
    # The broker did not wait for it: every approval was executed.
    broker = runtime.broker
    await eventually(lambda: all(broker.get(i).state == State.succeeded for i in ids), timeout=30)
    # And a console that follows again hears what comes next.
    again = await Follower.open(runtime)
    try:
        [later] = await pending(runtime, 1)
        await again.until(later, "pending")
    finally:
        again.close()
