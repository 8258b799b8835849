"""`approvals.read`: the queue's pages over the operator socket, for a console that cannot read the
ledger (the broker as a user of its own). Each read gives what the ledger's own read gives; a read
the socket does not know, or a query the ledger would refuse, is refused as invalid params and
reads nothing; the agents' socket does not serve it."""

from __future__ import annotations

from typing import Any

import pytest
from helpers import SEARCH, eventually, operator

from svc_console.agent import AgentError, AsyncAgent
from svc_console.core.shown_facts import facts_digest
from svc_console.core.states import State
from svc_console.ledger.request_windows import RequestQuery

PENDING = {"states": ["pending"]}


async def pending(runtime, agent: str, query: str) -> str:
    async with AsyncAgent(agent, runtime.paths.socket) as line:
        ticket = await line.submit(**{**SEARCH, "inputs": {"query": query}}, purpose="research")
    request_id = ticket["request_id"]
    await eventually(lambda: runtime.broker.get(request_id).state == State.pending)
    return request_id


@pytest.fixture
async def three(runtime) -> list[str]:
    return [
        await pending(runtime, "alpha", "heat pumps"),
        await pending(runtime, "beta", "solar tiles"),
        await pending(runtime, "alpha", "wind farms"),
    ]


async def read(runtime, **params: Any) -> Any:
    async with operator(runtime) as line:
        return await line.call("approvals.read", params)


async def test_a_page_is_the_ledgers_page_with_each_requests_digest(runtime, three):
    query = {**PENDING, "order": "agent", "descending": True}
    page = await read(runtime, read="window", query=query, offset=1, limit=2)
    ledger = runtime.broker.ledger
    expected = ledger.window(
        RequestQuery(states=(State.pending,), order="agent", descending=True), offset=1, limit=2
    )
    assert [r["id"] for r in page] == [r.id for r in expected]
    assert [r["digest"] for r in page] == [facts_digest(r) for r in expected]
    # As `approvals.list` gives a request: no skill.md, no submitter's evidence.
    assert all("skill" not in r and "submitter" not in r for r in page)


async def test_counts_positions_and_one_request_are_the_ledgers(runtime, three):
    alpha = {**PENDING, "text": "alpha"}
    assert await read(runtime, read="count", query=PENDING) == 3
    assert await read(runtime, read="count", query=alpha) == 2
    assert await read(runtime, read="count", query={"states": ["denied"]}) == 0
    assert await read(runtime, read="position", query=alpha, request_id=three[2]) == 1
    assert await read(runtime, read="position", query=alpha, request_id=three[1]) is None
    got = await read(runtime, read="get", request_id=three[1])
    assert got["agent"] == "beta" and got["inputs"] == {"query": "solar tiles"}
    assert await read(runtime, read="get", request_id="req_nobody") is None


@pytest.mark.parametrize(
    ("params", "said"),
    [
        ({"read": "everything"}, "read"),
        ({"read": "window", "query": {"states": []}}, "states"),
        ({"read": "window", "query": {"states": ["pondering"]}}, "states"),
        ({"read": "window", "query": {**PENDING, "order": "id; DROP TABLE requests"}}, "order"),
        ({"read": "window", "query": PENDING, "limit": 100_000}, "limit"),
        ({"read": "window", "query": PENDING, "offset": -1}, "offset"),
        ({"read": "count", "query": {**PENDING, "sql": "1=1"}}, "sql"),
        ({"read": "get"}, "request_id"),
    ],
)
async def test_a_read_it_does_not_know_is_refused_and_reads_nothing(runtime, three, params, said):
    before = runtime.ledger.db.execute("SELECT count(*) FROM events").fetchone()[0]
    with pytest.raises(AgentError) as refused:
        await read(runtime, **params)
    assert refused.value.reason == "invalid_params"
    assert said in refused.value.message
    after = runtime.ledger.db.execute("SELECT count(*) FROM events").fetchone()[0]
    assert after == before
    assert await read(runtime, read="count", query=PENDING) == 3  # the queue as it was


async def test_the_agents_socket_does_not_serve_the_queue(runtime, three):
    async with AsyncAgent("alpha", runtime.paths.socket) as line:
        with pytest.raises(AgentError) as refused:
            await line.call("approvals.read", {"read": "count", "query": PENDING})
    assert "only on the operator socket" in refused.value.message
