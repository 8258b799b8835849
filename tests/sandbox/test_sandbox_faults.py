"""The sandbox's fault switch over real HTTP: each kind of fault, as the console's clients meet it,
armed through the admin route or from Python, counted or drawn from a seeded rate."""

from __future__ import annotations

import random
from decimal import Decimal

import httpx
import pytest
from helpers import proxy_execute

from svc_console.market import errors
from svc_console.market.wallet import WalletClient
from svc_console.sandbox.catalog import WEBSEARCH_ID

SEARCH_INPUTS = {"query": "usdc settlement"}
MARKET_SEARCH = "/api/market/searchly/search"


@pytest.fixture
def http(sandbox):
    with httpx.Client(base_url=sandbox.base_url, timeout=10) as client:
        yield client


@pytest.fixture
def admin(sandbox) -> dict[str, str]:
    return {"Authorization": f"Bearer {sandbox.state.api_key}"}


@pytest.fixture
async def wallet(sandbox):
    state = sandbox.state
    client = WalletClient(sandbox.base_url, state.username, state.api_token)
    yield client
    await client.aclose()


async def _execute(wallet: WalletClient, key: str, ceiling: str = "0.01"):
    return await proxy_execute(
        wallet,
        "x402",
        WEBSEARCH_ID,
        SEARCH_INPUTS,
        ceiling_usdc=Decimal(ceiling),
        chain="base",
        idempotency_key=key,
    )


# --- the switch ------------------------------------------------------------------------------


def test_the_switch_needs_the_api_key_and_checks_its_options(http: httpx.Client, admin, sandbox):
    assert http.get("/sandbox/faults").status_code == 401
    assert http.post("/sandbox/faults", json={"kind": "error"}).status_code == 401
    assert (
        http.post(
            "/sandbox/faults", json={"kind": "error"}, headers={"Authorization": "Bearer sk_live_x"}
        ).status_code
        == 401
    )
    for body, word in (
        ({"kind": "meteor"}, "kind"),
        ({"kind": "error", "status": 404}, "status"),
        ({"kind": "error", "delayMs": 10}, "delay_ms"),
        ({"kind": "latency", "rate": 1.5}, "rate"),
        ({"kind": "error", "count": 0}, "count"),
        ({"kind": "error", "routes": ["nowhere"]}, "routes"),
        ({"kind": "error", "seed": 3}, "seed"),
        ({"kind": "error", "colour": "red"}, "colour"),
        ({"kind": "error", "dryRun": "yes"}, "dry_run"),
        ({"kind": "reprice", "dryRun": True}, "dry_run"),
        ({"kind": "overbill", "dryRun": False}, "dry_run"),
    ):
        refused = http.post("/sandbox/faults", json=body, headers=admin)
        assert refused.status_code == 400, body
        assert refused.json()["error"]["code"] == "INVALID_PARAMS"
        assert word in refused.json()["error"]["message"]
    assert sandbox.state.faults.list() == []


def test_arm_list_and_clear_through_the_route(http: httpx.Client, admin, sandbox):
    armed = http.post(
        "/sandbox/faults", json={"kind": "error", "count": 2, "status": 502}, headers=admin
    )
    assert armed.status_code == 201
    fault = armed.json()["fault"]
    assert fault["kind"] == "error"
    assert (fault["count"], fault["remaining"], fault["fired"]) == (2, 2, 0)
    assert fault["routes"] == ["proxy", "market"]
    listed = http.get("/sandbox/faults", headers=admin).json()
    assert [f["id"] for f in listed["faults"]] == [fault["id"]]
    assert listed["sandbox"] is True
    assert http.delete(f"/sandbox/faults/{fault['id']}", headers=admin).status_code == 200
    assert http.delete(f"/sandbox/faults/{fault['id']}", headers=admin).status_code == 404
    http.post("/sandbox/faults", json={"kind": "latency"}, headers=admin)
    cleared = http.delete("/sandbox/faults", headers=admin).json()
    assert cleared["cleared"] == 1
    assert sandbox.state.faults.list() == []


def test_the_switch_itself_is_never_faulted(http: httpx.Client, admin, sandbox):
    sandbox.state.faults.add("error", routes=["all"])
    assert http.get("/api/health").status_code == 503
    assert http.get("/sandbox/faults", headers=admin).status_code == 200
    assert http.delete("/sandbox/faults", headers=admin).status_code == 200
    assert http.get("/api/health").status_code == 200


# --- each kind -------------------------------------------------------------------------------


async def test_5xx_for_the_next_calls_executes_nothing(wallet: WalletClient, http, admin, sandbox):
    http.post("/sandbox/faults", json={"kind": "error", "count": 2}, headers=admin)
    for attempt in range(2):
        with pytest.raises(errors.UpstreamError) as failed:
            await _execute(wallet, f"k-{attempt}")
        assert failed.value.code == "SERVICE_UNAVAILABLE"
    assert sandbox.state.charges == []
    outcome = await _execute(wallet, "k-2")
    assert outcome.charged_usdc == Decimal("0.01")
    [fault] = sandbox.state.faults.list()
    assert (fault["fired"], fault["remaining"]) == (2, 0)


def test_5xx_body_says_it_was_injected(http: httpx.Client, sandbox):
    fault = sandbox.state.faults.add("error", routes=["market"], status=500)
    response = http.post(MARKET_SEARCH, json=SEARCH_INPUTS)
    assert response.status_code == 500
    body = response.json()
    assert body["sandbox"] is True
    assert body["error"]["code"] == "INTERNAL"
    assert body["error"]["fault"] == fault.id


async def test_latency_delays_the_answer(sandbox):
    # A lower bound only: the wait is at least the delay, so a shorter read timeout must expire.
    sandbox.state.faults.add("latency", routes=["proxy"], delay_ms=2000, count=1, dry_run=True)
    state = sandbox.state
    hasty = WalletClient(sandbox.base_url, state.username, state.api_token, timeout_s=0.3)
    try:
        with pytest.raises(errors.OutcomeUnknown):
            await hasty.dry_run("x402", WEBSEARCH_ID, SEARCH_INPUTS)
    finally:
        await hasty.aclose()
    assert state.faults.list()[0]["fired"] == 1


async def test_a_dropped_connection_leaves_the_outcome_unknown(wallet: WalletClient, sandbox):
    sandbox.state.faults.add("drop", routes=["proxy"], count=1)
    with pytest.raises(errors.OutcomeUnknown):
        await _execute(wallet, "drop-1")
    # The call ran before the connection dropped: it was charged, and the client cannot know.
    assert len(sandbox.state.charges_for("drop-1")) == 1


def test_a_dropped_connection_is_cut_mid_body(http: httpx.Client, sandbox):
    sandbox.state.faults.add("drop", routes=["market"])
    with pytest.raises(httpx.RemoteProtocolError):
        http.post(MARKET_SEARCH, json=SEARCH_INPUTS)


async def test_a_malformed_body_is_reported_as_malformed(wallet: WalletClient, sandbox):
    sandbox.state.faults.add("malformed", routes=["proxy"], count=1, dry_run=True)
    with pytest.raises(errors.MalformedResponse):
        await wallet.dry_run("x402", WEBSEARCH_ID, SEARCH_INPUTS)
    dry = await wallet.dry_run("x402", WEBSEARCH_ID, SEARCH_INPUTS)
    assert dry.estimated_usdc == Decimal("0.01")


async def test_reprice_asks_more_than_the_dry_run(wallet: WalletClient, http, sandbox):
    fault = sandbox.state.faults.add("reprice", routes=["proxy", "market"], factor=3, count=2)
    dry = await wallet.dry_run("x402", WEBSEARCH_ID, SEARCH_INPUTS)
    assert dry.estimated_usdc == Decimal("0.01")
    # The dry run is not repriced, and spends none of the count (as the guide's sandbox page
    # says).
    assert sandbox.state.faults.armed("reprice") and fault.fired == 0
    with pytest.raises(errors.PriceAboveCeiling) as repriced:
        await _execute(wallet, "rp-1")
    assert repriced.value.price == Decimal("0.03")
    assert sandbox.state.charges == []
    challenge = http.post(MARKET_SEARCH, json=SEARCH_INPUTS)
    assert challenge.json()["error"]["paymentRequired"]["accepts"][0]["amount"] == "30000"
    # Exhausted: prices are back to normal, and the switch's factor never leaked into the state.
    assert (await _execute(wallet, "rp-2")).charged_usdc == Decimal("0.01")
    assert sandbox.state.reprice_factor == 1


async def test_an_overbill_bills_one_paid_call_above_what_it_paid(
    wallet: WalletClient, http, admin
):
    created = http.post(
        "/sandbox/faults", json={"kind": "overbill", "factor": 3, "count": 1}, headers=admin
    )
    assert created.status_code == 201 and created.json()["fault"]["factor"] == "3"
    await wallet.dry_run("x402", WEBSEARCH_ID, SEARCH_INPUTS)
    assert http.post(MARKET_SEARCH, json=SEARCH_INPUTS).status_code == 402  # a challenge
    assert http.get("/sandbox/faults", headers=admin).json()["faults"][0]["fired"] == 0
    paid = await _execute(wallet, "ob-1")
    again = await _execute(wallet, "ob-2")
    assert paid.charged_usdc == again.charged_usdc == Decimal("0.01")  # paid as priced
    usage = http.get("/api/agent/usage", headers=admin).json()
    assert [c["amountUsdc"] for c in usage["charges"]] == ["0.03", "0.01"]
    refused = http.post(
        "/sandbox/faults", json={"kind": "overbill", "chain": "base"}, headers=admin
    )
    assert refused.status_code == 400 and "chain" in refused.text


async def test_a_provider_leaving_the_registry(wallet: WalletClient, http, admin, sandbox):
    state = sandbox.state
    http.post("/sandbox/faults", json={"kind": "delist", "count": 1}, headers=admin)
    with pytest.raises(errors.NotInRegistry):
        await _execute(wallet, "dl-1")
    assert not state.in_registry(WEBSEARCH_ID)
    assert http.get("/sandbox/faults", headers=admin).json()["delisted"] == [WEBSEARCH_ID]
    restored = http.delete("/sandbox/faults", headers=admin).json()["restored"]
    assert restored == [WEBSEARCH_ID]
    assert state.in_registry(WEBSEARCH_ID)
    assert state.charges == []


def test_delisting_a_provider_by_name_on_the_market_route(http: httpx.Client, sandbox):
    state = sandbox.state
    state.faults.add("delist", routes=["market"], provider="searchly", count=1)
    response = http.post(MARKET_SEARCH, json=SEARCH_INPUTS)
    assert (response.status_code, response.json()["error"]["code"]) == (403, "NOT_IN_REGISTRY")
    assert state.faults.clear() == [WEBSEARCH_ID]
    assert http.post(MARKET_SEARCH, json=SEARCH_INPUTS).status_code == 402


# --- how often -------------------------------------------------------------------------------


def _pattern(http: httpx.Client, calls: int) -> list[int]:
    return [http.get("/api/health").status_code for _ in range(calls)]


def test_a_seeded_rate_is_repeatable(http: httpx.Client, sandbox):
    faults = sandbox.state.faults
    faults.set("error", routes=["/api/health"], rate=0.3, seed=7)
    first = _pattern(http, 30)
    faults.set("error", routes=["/api/health"], rate=0.3, seed=7)
    second = _pattern(http, 30)
    draws = random.Random(7)
    expected = [503 if draws.random() < 0.3 else 200 for _ in range(30)]
    assert first == second == expected
    assert 0 < first.count(503) < 30


def test_rate_and_count_together_fire_at_most_count_times(http: httpx.Client, sandbox):
    sandbox.state.faults.set("error", routes=["/api/health"], rate=0.5, seed=1, count=3)
    assert _pattern(http, 40).count(503) == 3


def test_faults_only_touch_their_routes(http: httpx.Client, admin, sandbox):
    sandbox.state.faults.set("error", routes=["market"])
    assert http.post(MARKET_SEARCH, json=SEARCH_INPUTS).status_code == 503
    search = http.post("/api/search", json={"query": "weather"}, headers=admin)
    assert search.status_code == 200
