"""What intake knows of an endpoint between requests: its record and its skill.md.

Both change rarely, while agents ask for the same few endpoints over and over; fetching them for
every request put two of intake's three round trips to the service on the path of each decision.
The price and the chain never come from here: every request still gets its own dry run, which is
also what notices at once an endpoint that left the registry (intake then forgets it).

Concurrent requests for an endpoint not yet known share one fetch, so a burst of agents costs the
service one record and one skill.md, not one per agent. A fetch outlives a waiter that gave up
(the others may still want it), so the broker's stop ends the fetches still under way: none is
left to run against a market client that is closed.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from svc_console.core.models import EndpointRecord
from svc_console.core.tasks import cancel_and_wait
from svc_console.market.rest import MarketClient

# Long enough that a busy agent's requests reuse one fetch; short enough that a provider's new
# description or verification reaches the operator within minutes.
TTL_S = 300.0
MAX_ENDPOINTS = 4096


@dataclass(frozen=True)
class KnownEndpoint:
    record: EndpointRecord
    skill: str
    fetched_at: float


class EndpointCache:
    def __init__(
        self,
        rest: MarketClient,
        *,
        ttl_s: float = TTL_S,
        capacity: int = MAX_ENDPOINTS,
        clock: Callable[[], float] = time.monotonic,
    ):
        self._rest = rest
        self._ttl_s = ttl_s
        self._capacity = capacity
        self._clock = clock
        self._known: OrderedDict[str, KnownEndpoint] = OrderedDict()
        self._fetching: dict[str, asyncio.Task[KnownEndpoint]] = {}

    async def get(self, endpoint_id: str) -> KnownEndpoint:
        """The endpoint's record and skill.md, fetched when not known or too old; a failure of
        the fetch is raised to every request waiting on it and nothing is kept."""
        known = self._known.get(endpoint_id)
        if known is not None and self._clock() - known.fetched_at < self._ttl_s:
            self._known.move_to_end(endpoint_id)
            return known
        fetching = self._fetching.get(endpoint_id)
        if fetching is None:
            fetching = asyncio.create_task(self._fetch(endpoint_id), name="endpoint-fetch")
            self._fetching[endpoint_id] = fetching
            fetching.add_done_callback(self._fetched)
        # shield: one waiter cancelled (its agent hung up) must not cancel the others' fetch.
        return await asyncio.shield(fetching)

    async def stop(self) -> None:
        """End the fetches under way (their waiters, if any, see them cancelled)."""
        await cancel_and_wait(list(self._fetching.values()))

    def _fetched(self, fetching: asyncio.Task[KnownEndpoint]) -> None:
        self._fetching = {k: f for k, f in self._fetching.items() if f is not fetching}
        if not fetching.cancelled():
            fetching.exception()  # seen here, so a fetch every waiter gave up on is not reported

    def forget(self, endpoint_id: str) -> None:
        """Drop what is known of an endpoint (it left the registry, or was not found)."""
        self._known.pop(endpoint_id, None)

    async def _fetch(self, endpoint_id: str) -> KnownEndpoint:
        record = await self._rest.endpoint(endpoint_id)
        skill = await self._rest.skill(record.id)
        known = KnownEndpoint(record, skill, self._clock())
        self._known[endpoint_id] = known
        self._known.move_to_end(endpoint_id)
        while len(self._known) > self._capacity:
            self._known.popitem(last=False)
        return known
