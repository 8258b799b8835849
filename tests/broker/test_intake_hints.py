"""A request for an endpoint that does not exist is rejected with the nearest id the console's
catalogue cache knows, so a typo is one edit away from working; before a first sync there is no
hint, and a name far from every id gets none."""

from __future__ import annotations

from helpers import eventually, submit

from svc_console.core.states import State
from svc_console.services.catalogue_sync import sync_catalogue


async def rejected_reason(runtime, endpoint_id: str) -> str:
    ticket = await submit(runtime, endpoint_id=endpoint_id)
    request = await eventually(
        lambda: (r := runtime.broker.get(ticket["request_id"])).state == State.rejected and r
    )
    return request.reason


async def test_a_typo_in_an_endpoint_id_is_answered_with_the_nearest_known_id(runtime):
    assert await rejected_reason(runtime, "ep_websearch_basci") == "no endpoint ep_websearch_basci"
    await sync_catalogue(runtime.market.rest, runtime.ledger.path, now=runtime.broker.clock())
    assert await rejected_reason(runtime, "ep_websearch_basci") == (
        "no endpoint ep_websearch_basci (did you mean ep_websearch_basic?)"
    )
    assert await rejected_reason(runtime, "zz_nothing_like_it") == "no endpoint zz_nothing_like_it"
