"""The market clients against the sandbox: typed results and typed errors."""

from __future__ import annotations

from decimal import Decimal

import pytest

from svc_console.market import errors
from svc_console.market.rest import MarketClient
from svc_console.market.wallet import WalletClient


async def test_search_takes_decimal_filters_and_returns_records(sandbox):
    client = MarketClient(sandbox.base_url, sandbox.state.api_key)
    try:
        results = await client.search(domain_type="A7", max_price_usdc=Decimal("0.01"))
    finally:
        await client.aclose()
    assert results
    assert all(r.domain_type == "A7" and r.pricing.ceiling <= Decimal("0.01") for r in results)


async def test_wrong_credentials_and_unreachable_service_are_typed(sandbox, refused_url):
    client = MarketClient(sandbox.base_url, "sk_live_wrong")
    with pytest.raises(errors.Unauthorized):
        await client.endpoint("ep_websearch_basic")
    await client.aclose()
    wallet = WalletClient(refused_url, sandbox.state.username, sandbox.state.api_token)
    with pytest.raises(errors.ServiceUnreachable):
        await wallet.dry_run("x402", "ep_websearch_basic", {"query": "q"})
    await wallet.aclose()


async def test_an_id_cannot_walk_to_another_route(sandbox):
    client = MarketClient(sandbox.base_url, sandbox.state.api_key)
    with pytest.raises(errors.EndpointNotFound):
        await client.endpoint("../search")
    await client.aclose()
