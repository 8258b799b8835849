"""Intake's knowledge of endpoints between requests (broker/endpoint_cache.py): one fetch of a
record and its skill.md for a burst of requests, fetched again when old, forgotten when the
endpoint leaves the registry; the dry run is still asked for every request."""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

import httpx
import pytest
from helpers import FakeClock, eventually

from svc_console.agent import AsyncAgent
from svc_console.broker.endpoint_cache import EndpointCache
from svc_console.core.states import State
from svc_console.market import errors
from svc_console.market.rest import MarketClient
from svc_console.sandbox.catalog import WEBSEARCH_ID

SCRAPE_ID = "ep_scrape_page"


class CountingTransport(httpx.AsyncBaseTransport):
    """The real transport, counting the paths it was asked for."""

    def __init__(self) -> None:
        self.inner = httpx.AsyncHTTPTransport()
        self.paths: Counter[str] = Counter()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.paths[request.url.path] += 1
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self.inner.aclose()


@pytest.fixture
async def counted(sandbox: Any):
    transport = CountingTransport()
    client = MarketClient(sandbox.base_url, sandbox.state.api_key, transport=transport)
    yield client, transport.paths
    await client.aclose()


async def test_a_burst_for_one_endpoint_fetches_it_once(counted):
    client, paths = counted
    cache = EndpointCache(client)
    known = await asyncio.gather(*(cache.get(WEBSEARCH_ID) for _ in range(50)))
    assert {k.record.id for k in known} == {WEBSEARCH_ID}
    assert all(k is known[0] for k in known)
    assert "Web Search" in known[0].skill
    assert paths[f"/api/endpoints/{WEBSEARCH_ID}"] == 1
    assert paths[f"/api/endpoints/{WEBSEARCH_ID}/skill.md"] == 1


async def test_an_old_entry_is_fetched_again(counted):
    client, paths = counted
    clock = FakeClock()
    cache = EndpointCache(client, ttl_s=60, clock=clock)
    await cache.get(WEBSEARCH_ID)
    clock.advance(59)
    await cache.get(WEBSEARCH_ID)
    assert paths[f"/api/endpoints/{WEBSEARCH_ID}"] == 1
    clock.advance(2)
    await cache.get(WEBSEARCH_ID)
    assert paths[f"/api/endpoints/{WEBSEARCH_ID}"] == 2


async def test_a_failed_fetch_reaches_every_waiter_and_is_not_kept(counted):
    client, paths = counted
    cache = EndpointCache(client)
    results = await asyncio.gather(
        *(cache.get("ep_no_such_thing") for _ in range(5)), return_exceptions=True
    )
    assert all(isinstance(r, errors.EndpointNotFound) for r in results)
    assert paths["/api/endpoints/ep_no_such_thing"] == 1
    with pytest.raises(errors.EndpointNotFound):
        await cache.get("ep_no_such_thing")
    assert paths["/api/endpoints/ep_no_such_thing"] == 2


async def test_forgotten_and_least_recent_entries_are_fetched_again(counted):
    client, paths = counted
    cache = EndpointCache(client, capacity=1)
    await cache.get(WEBSEARCH_ID)
    cache.forget(WEBSEARCH_ID)
    await cache.get(WEBSEARCH_ID)
    assert paths[f"/api/endpoints/{WEBSEARCH_ID}"] == 2
    await cache.get(SCRAPE_ID)  # pushes the web search out: room for one
    await cache.get(WEBSEARCH_ID)
    assert paths[f"/api/endpoints/{WEBSEARCH_ID}"] == 3


async def test_one_waiter_giving_up_does_not_cancel_the_others(counted):
    client, _ = counted
    cache = EndpointCache(client)
    impatient = asyncio.ensure_future(cache.get(WEBSEARCH_ID))
    patient = asyncio.ensure_future(cache.get(WEBSEARCH_ID))
    await asyncio.sleep(0)
    impatient.cancel()
    assert (await patient).record.id == WEBSEARCH_ID


def fetches_under_way() -> list[asyncio.Task[Any]]:
    return [
        task
        for task in asyncio.all_tasks()
        if not task.done() and task.get_coro().__qualname__ == "EndpointCache._fetch"
    ]


async def fetch_held(sandbox: Any) -> None:
    """Until stopped, the service holds every endpoint fetch for half a minute; returns once one
    is held."""
    fault = sandbox.state.faults.add("latency", routes=["rest"], delay_ms=30_000)
    await eventually(
        lambda: any(f["id"] == fault.id and f["fired"] for f in sandbox.state.faults.list())
    )


async def test_a_fetch_every_waiter_gave_up_on_is_ended_by_stop(counted, sandbox):
    client, _ = counted
    cache = EndpointCache(client)
    waiter = asyncio.ensure_future(cache.get(WEBSEARCH_ID))
    await fetch_held(sandbox)
    waiter.cancel()
    await asyncio.wait([waiter])
    assert fetches_under_way(), "the fetch outlives its waiter (the others may want it)"
    await cache.stop()
    assert fetches_under_way() == []


async def test_the_broker_stops_an_endpoint_fetch_its_request_left_behind(runtime, sandbox):
    """A request stopped mid-intake leaves its endpoint's fetch behind (shielded for the other
    waiters); the broker's stop ends it, before the market client it uses is closed."""
    async with AsyncAgent("bot", runtime.paths.socket) as agent:
        await agent.submit(endpoint_id=WEBSEARCH_ID, inputs={"query": "q"}, purpose="research")
    await fetch_held(sandbox)
    await runtime.stop()
    assert fetches_under_way() == []


async def test_every_request_is_still_dry_run_and_a_delisted_endpoint_is_refused(
    runtime: Any, sandbox: Any
):
    broker = runtime.broker

    async def submit(n: int) -> str:
        async with AsyncAgent("bot", runtime.paths.socket) as agent:
            ticket = await agent.submit(
                endpoint_id=WEBSEARCH_ID, inputs={"query": f"q{n}"}, purpose="research"
            )
        return ticket["request_id"]

    def settled(request_id: str) -> bool:
        return broker.get(request_id).state not in (State.received, State.inspecting)

    first = [await submit(n) for n in range(3)]
    for request_id in first:
        await eventually(lambda request_id=request_id: settled(request_id))
    assert {broker.get(r).state for r in first} == {State.pending}

    # Delisted after intake came to know the endpoint: the dry run, asked anyway, says so.
    sandbox.state.faults.add("delist", routes=["proxy"], count=1, dry_run=True)
    refused = await submit(3)
    await eventually(lambda: settled(refused))
    assert broker.get(refused).state == State.rejected
    assert "registry" in (broker.get(refused).reason or "")
