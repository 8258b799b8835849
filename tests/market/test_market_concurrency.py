"""A burst of marketplace calls from one client: all answered, never more than
`http.MAX_IN_FLIGHT` inside httpx at once (beyond that httpcore's queue costs grow with its square
and waiting calls time out)."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx

from svc_console.market import http
from svc_console.market.rest import MarketClient


class CountingTransport(httpx.AsyncBaseTransport):
    """The real transport, counting the requests inside it at the same time."""

    def __init__(self) -> None:
        self.inner = httpx.AsyncHTTPTransport()
        self.now = self.most = 0

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.now += 1
        self.most = max(self.most, self.now)
        try:
            response = await self.inner.handle_async_request(request)
            await response.aread()  # the body too: the connection is busy until it is read
            return response
        finally:
            self.now -= 1

    async def aclose(self) -> None:
        await self.inner.aclose()


async def test_a_burst_of_calls_is_all_answered_within_the_in_flight_bound(sandbox: Any) -> None:
    transport = CountingTransport()
    client = MarketClient(sandbox.base_url, sandbox.state.api_key, transport=transport)
    burst = 3 * http.MAX_IN_FLIGHT
    try:
        records = await asyncio.gather(
            *(client.endpoint("ep_websearch_basic") for _ in range(burst))
        )
    finally:
        await client.aclose()
    assert [r.id for r in records] == ["ep_websearch_basic"] * burst
    assert transport.most <= http.MAX_IN_FLIGHT
    assert transport.most > 1  # the calls did overlap: the bound was what held them
