"""The sandbox marketplace over real HTTP: its wire contract, spoken by httpx and by the console's
own market clients, and its seeded catalogue."""

import base64
import json
import re
import signal
import socket
import stat
import subprocess
import sys
import threading
import time
from decimal import Decimal
from pathlib import Path

import httpx
import pytest
from helpers import proxy_execute
from jsonschema import Draft202012Validator

from svc_console.core.models import DryRun, EndpointRecord, Outcome
from svc_console.core.taxonomy import DOMAIN_TYPES, PRODUCT_CLASSES
from svc_console.market import errors
from svc_console.market.rest import MarketClient
from svc_console.market.wallet import WalletClient
from svc_console.sandbox import upstream
from svc_console.sandbox.catalog import (
    FX_ID,
    SCRAPE_ID,
    WEBSEARCH_ID,
    build_catalog,
    catalog,
)
from svc_console.sandbox.pricing import runtime_price
from svc_console.sandbox.server import SandboxServer, write_credentials
from svc_console.sandbox.state import SandboxState

SEARCH_INPUTS = {"query": "usdc settlement", "max_results": 3}


@pytest.fixture
def server():
    with SandboxServer() as running:
        yield running


@pytest.fixture
def state(server: SandboxServer) -> SandboxState:
    return server.state


@pytest.fixture
def http(server: SandboxServer):
    with httpx.Client(base_url=server.base_url, timeout=10) as client:
        yield client


@pytest.fixture
def rest(state: SandboxState) -> dict[str, str]:
    return {"Authorization": f"Bearer {state.api_key}"}


@pytest.fixture
def bearer(state: SandboxState) -> dict[str, str]:
    return {"Authorization": f"Bearer {state.api_token}"}


@pytest.fixture
def actions(state: SandboxState) -> str:
    return f"/api/wallets/{state.username}/actions"


@pytest.fixture
async def market(server: SandboxServer):
    client = MarketClient(server.base_url, server.state.api_key)
    yield client
    await client.aclose()


@pytest.fixture
async def wallet(server: SandboxServer):
    state = server.state
    client = WalletClient(server.base_url, state.username, state.api_token)
    yield client
    await client.aclose()


def _error(response: httpx.Response) -> dict:
    body = response.json()
    assert body["sandbox"] is True
    return body["error"]


async def _execute(wallet: WalletClient, endpoint_id: str = WEBSEARCH_ID, **overrides) -> Outcome:
    options = {
        "protocol": "x402",
        "inputs": SEARCH_INPUTS,
        "ceiling_usdc": Decimal("0.01"),
        "chain": "base",
        "idempotency_key": "key-1",
        **overrides,
    }
    protocol, inputs = options.pop("protocol"), options.pop("inputs")
    return await proxy_execute(wallet, protocol, endpoint_id, inputs, **options)


def _valid_inputs(schema: dict) -> dict:
    """Inputs that satisfy one of the catalogue's schemas (required fields only)."""
    samples = {
        "url": "https://example.com/page",
        "image_url": "https://example.com/cat.png",
        "audio_url": "https://example.com/talk.mp3",
        "document_url": "https://example.com/report.pdf",
        "product_url": "https://shop.example.com/item/1",
        "notebook_url": "https://example.com/run.ipynb",
        "symbol": "EURUSD",
        "target_lang": "fr",
        "to": "someone@example.com",
        "email": "someone@example.com",
        "country": "FR",
        "date_of_birth": "1990-01-31",
        "from_date": "2025-01-01",
        "address": "0x" + "ab" * 20,
        "cid": "bafy" + "a" * 40,
        "filename": "notes.txt",
    }
    inputs = {}
    properties = schema["properties"]
    for name in schema["required"]:
        spec = properties[name]
        if "enum" in spec:
            value = spec["enum"][0]
        elif spec.get("type") == "array":
            value = [f"item{n}" for n in range(spec.get("minItems", 1))]
        elif spec.get("type") in {"number", "integer"}:
            value = spec.get("minimum", 0)
        elif name == "symbol" and "{6}" not in spec.get("pattern", "{6}"):
            value = "AAPL"
        elif name == "handle":
            value = "@example"
        else:
            value = samples.get(name, "example text")
        inputs[name] = value
    return inputs


# --- service basics ----------------------------------------------------------------------------


def test_root_and_health_say_it_is_a_sandbox(http: httpx.Client):
    for path in ("/", "/api/health"):
        response = http.get(path)
        assert response.status_code == 200
        assert response.json() == {
            "sandbox": True,
            "service": "svc-console sandbox",
            "realMoney": False,
        }


def test_fresh_credentials_per_state():
    first, second = SandboxState(), SandboxState()
    assert first.api_key.startswith("sk_live_")
    assert first.api_key != second.api_key
    assert first.api_token != second.api_token
    assert first.api_token != first.api_key
    assert first.username == "sandbox-operator"
    assert first.balance == Decimal(25)


def test_unknown_route_and_method_use_the_error_shape(http: httpx.Client, rest: dict):
    missing = http.get("/api/nothing-here", headers=rest)
    assert missing.status_code == 404
    assert _error(missing)["code"] == "NOT_FOUND"
    wrong_method = http.get("/api/search", headers=rest)
    assert wrong_method.status_code == 405
    assert _error(wrong_method)["code"] == "METHOD_NOT_ALLOWED"


def test_oversized_body_is_refused(http: httpx.Client, rest: dict):
    response = http.post("/api/search", headers=rest, content=b" " * (1024 * 1024 + 1))
    assert response.status_code == 413
    assert _error(response)["code"] == "PAYLOAD_TOO_LARGE"


def test_a_crash_answers_500_and_prints_nothing(
    http: httpx.Client, bearer, actions, state: SandboxState, monkeypatch, capfd
):
    def broken(*args, **kwargs):
        raise RuntimeError("provider exploded")

    monkeypatch.setattr(upstream, "respond", broken)
    body = {"endpointId": WEBSEARCH_ID, "inputs": SEARCH_INPUTS, "approved": True}
    response = http.post(f"{actions}/x402/fetch", json=body, headers=bearer)
    assert response.status_code == 500
    assert _error(response)["code"] == "INTERNAL"
    # The answer is built before the debit: a failed call is never charged.
    assert state.executions_count() == 0
    assert state.balance == Decimal(25)
    # Garbage on the wire makes uvicorn warn; none of it may reach the terminal.
    host, port = http.base_url.host, http.base_url.port
    with socket.create_connection((host, port), timeout=5) as raw:
        raw.sendall(b"NOT HTTP AT ALL\r\n\r\n")
        raw.recv(1024)
    assert http.get("/api/health").status_code == 200
    captured = capfd.readouterr()
    assert captured.out == ""
    assert captured.err == ""


def test_server_stops_cleanly():
    running = SandboxServer()
    base_url = running.start()
    assert re.fullmatch(r"http://127\.0\.0\.1:\d+", base_url)
    assert running.state.base_url == base_url
    assert httpx.get(f"{base_url}/api/health").status_code == 200
    running.stop()
    assert running.state.base_url is None
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"{base_url}/api/health", timeout=2)


# --- REST catalogue ----------------------------------------------------------------------------


async def test_well_known_endpoint_records(market: MarketClient):
    search = await market.endpoint(WEBSEARCH_ID)
    assert isinstance(search, EndpointRecord)
    assert (search.name, search.provider, search.provider_name) == (
        "Web Search",
        "prov_searchly",
        "Searchly",
    )
    assert (search.origin, search.domain_type, search.product_class) == ("publisher", "A7", "B1")
    assert search.verified is True
    assert (search.quality_score, search.reliability) == (0.94, 0.995)
    assert (search.chains, search.protocols) == (["base"], ["x402"])
    assert search.pricing.model == "fixed"
    assert search.pricing.amount_usdc == Decimal("0.01")
    assert search.inputs["required"] == ["query"]
    assert search.inputs["properties"]["query"]["minLength"] == 1
    max_results = search.inputs["properties"]["max_results"]
    assert (max_results["minimum"], max_results["maximum"], max_results["default"]) == (1, 50, 10)

    scrape = await market.endpoint(SCRAPE_ID)
    assert (scrape.name, scrape.provider, scrape.provider_name) == (
        "Page Scraper",
        "prov_scrapeworks",
        "ScrapeWorks",
    )
    assert (scrape.origin, scrape.domain_type, scrape.verified) == ("registry", "A8", False)
    assert (scrape.quality_score, scrape.reliability) == (0.66, 0.88)
    assert (scrape.chains, scrape.protocols) == (["base", "solana"], ["x402"])
    assert scrape.pricing.model == "dynamic"
    assert (scrape.pricing.min_usdc, scrape.pricing.max_usdc) == (Decimal("0.02"), Decimal("0.1"))
    assert scrape.inputs["properties"]["url"]["pattern"] == "^https?://"
    assert scrape.inputs["required"] == ["url"]

    fx = await market.endpoint(FX_ID)
    assert (fx.name, fx.provider, fx.provider_name) == ("FX Rates", "prov_quantfeed", "QuantFeed")
    assert (fx.origin, fx.domain_type, fx.product_class) == ("publisher", "A11", "B5")
    assert (fx.verified, fx.quality_score, fx.reliability) == (True, 0.91, 0.99)
    assert (fx.chains, fx.protocols) == (["tempo"], ["mpp"])
    assert fx.pricing.amount_usdc == Decimal("0.05")
    assert fx.inputs["properties"]["symbol"]["pattern"] == "^[A-Z]{6}$"


def test_endpoint_record_wire_names(http: httpx.Client, rest: dict):
    body = http.get(f"/api/endpoints/{WEBSEARCH_ID}", headers=rest).json()
    assert body["sandbox"] is True
    assert body["providerName"] == "Searchly"
    assert body["qualityScore"] == 0.94
    assert body["pricing"]["amountUsdc"] == "0.01"


async def test_unknown_endpoint_is_not_found(market: MarketClient, http: httpx.Client, rest: dict):
    with pytest.raises(errors.EndpointNotFound):
        await market.endpoint("ep_does_not_exist")
    response = http.get("/api/endpoints/ep_does_not_exist", headers=rest)
    assert response.status_code == 404
    assert _error(response)["code"] == "NOT_FOUND"


async def test_skill_markdown(market: MarketClient, http: httpx.Client, rest: dict):
    text = await market.skill(WEBSEARCH_ID)
    first_line = text.splitlines()[0]
    assert "SANDBOX" in first_line
    assert "Web Search" in first_line
    for section in ("## When to use", "## Inputs", "## Outputs", "## Cost", "## Protocols"):
        assert section in text
    assert "## Networks" in text
    assert "`query` (string, required)" in text
    assert "`max_results` (integer, optional)" in text
    assert "0.01 USDC per call (fixed)" in text
    assert "x402/fetch" in text
    dynamic = await market.skill(SCRAPE_ID)
    assert "0.02 to 0.10 USDC per call (dynamic)" in dynamic
    mpp = await market.skill(FX_ID)
    assert "mpp/pay" in mpp and "tempo" in mpp
    response = http.get(f"/api/endpoints/{WEBSEARCH_ID}/skill.md", headers=rest)
    assert response.headers["content-type"].startswith("text/markdown")


async def test_search_filters(market: MarketClient, http: httpx.Client, rest: dict):
    found = await market.search(query="searchly")
    assert WEBSEARCH_ID in [r.id for r in found]

    a7 = await market.search(domain_type="A7", limit=50)
    assert a7 and all(r.domain_type == "A7" for r in a7)
    b5 = await market.search(product_class="B5", limit=50)
    assert b5 and all(r.product_class == "B5" for r in b5)
    solana = await market.search(chain="solana", limit=50)
    assert solana and all("solana" in r.chains for r in solana)
    verified = await market.search(verified_only=True, limit=50)
    assert verified and all(r.verified for r in verified)
    cheap = await market.search(max_price_usdc="0.005", limit=50)
    assert cheap and all(r.pricing.ceiling <= Decimal("0.005") for r in cheap)

    # Over a hundred A8 endpoints mention the web; the provider's name narrows it to ScrapeWorks.
    combined = await market.search(
        query="web scrapeworks", domain_type="A8", verified_only=False, limit=50
    )
    assert SCRAPE_ID in [r.id for r in combined]
    verified_scrapers = await market.search(domain_type="A8", verified_only=True, limit=50)
    assert SCRAPE_ID not in [r.id for r in verified_scrapers]

    body = http.post("/api/search", headers=rest, json={}).json()
    assert body["sandbox"] is True
    assert len(body["results"]) == 25
    assert body["total"] == len(catalog().endpoints)
    narrowed = http.post("/api/search", headers=rest, json={"domain_type": "A11", "limit": 2})
    assert len(narrowed.json()["results"]) == 2
    assert narrowed.json()["total"] > 2


@pytest.mark.parametrize(
    "body",
    [
        {"limit": 0},
        {"limit": 51},
        {"limit": "ten"},
        {"limit": True},
        {"domain_type": "A23"},
        {"product_class": "B7"},
        {"chain": "bitcoin"},
        {"verified_only": "yes"},
        {"max_price_usdc": "-1"},
        {"domain": "A7"},
    ],
)
def test_search_refuses_bad_filters(http: httpx.Client, rest: dict, body: dict):
    response = http.post("/api/search", headers=rest, json=body)
    assert response.status_code == 400
    assert _error(response)["code"] == "INVALID_PARAMS"


async def test_search_limit_out_of_range_through_the_client(market: MarketClient):
    with pytest.raises(errors.UpstreamError) as caught:
        await market.search(limit=51)
    assert caught.value.code == "INVALID_PARAMS"


async def test_rest_needs_the_api_key(server: SandboxServer, http: httpx.Client):
    for path in (f"/api/endpoints/{WEBSEARCH_ID}", f"/api/endpoints/{WEBSEARCH_ID}/skill.md"):
        missing = http.get(path)
        assert missing.status_code == 401
        assert _error(missing)["code"] == "UNAUTHORIZED"
        assert missing.headers["www-authenticate"].startswith("Bearer")
    wrong = http.post("/api/search", headers={"Authorization": "Bearer sk_live_wrong"}, json={})
    assert wrong.status_code == 401
    # The wallet token is a different secret: it opens nothing on the REST surface.
    token = {"Authorization": f"Bearer {server.state.api_token}"}
    assert http.get(f"/api/endpoints/{WEBSEARCH_ID}", headers=token).status_code == 401
    stranger = MarketClient(server.base_url, "sk_live_not_the_key")
    try:
        with pytest.raises(errors.Unauthorized):
            await stranger.endpoint(WEBSEARCH_ID)
    finally:
        await stranger.aclose()


# --- wallet proxy: refusals --------------------------------------------------------------------


async def test_proxy_needs_the_wallet_token(server: SandboxServer, http: httpx.Client, actions):
    state = server.state
    body = {"endpointId": WEBSEARCH_ID, "inputs": SEARCH_INPUTS, "dryRun": True}
    assert http.post(f"{actions}/x402/fetch", json=body).status_code == 401
    key_instead = {"Authorization": f"Bearer {state.api_key}"}
    response = http.post(f"{actions}/x402/fetch", json=body, headers=key_instead)
    assert response.status_code == 401
    assert _error(response)["code"] == "UNAUTHORIZED"
    intruder = WalletClient(server.base_url, state.username, "not-the-token")
    try:
        with pytest.raises(errors.Unauthorized):
            await intruder.dry_run("x402", WEBSEARCH_ID, SEARCH_INPUTS)
    finally:
        await intruder.aclose()


async def test_not_your_wallet(server: SandboxServer, http: httpx.Client, bearer: dict):
    state = server.state
    body = {"endpointId": WEBSEARCH_ID, "inputs": SEARCH_INPUTS, "dryRun": True}
    response = http.post("/api/wallets/someone-else/actions/x402/fetch", json=body, headers=bearer)
    assert response.status_code == 403
    assert _error(response)["code"] == "NOT_YOUR_WALLET"
    other = WalletClient(server.base_url, "someone-else", state.api_token)
    try:
        with pytest.raises(errors.UpstreamError) as caught:
            await other.dry_run("x402", WEBSEARCH_ID, SEARCH_INPUTS)
        assert caught.value.code == "NOT_YOUR_WALLET"
    finally:
        await other.aclose()


@pytest.mark.parametrize(
    "body",
    [
        [],
        "text",
        {"inputs": {}},
        {"endpointId": "", "inputs": {}},
        {"endpointId": WEBSEARCH_ID},
        {"endpointId": WEBSEARCH_ID, "inputs": ["query"]},
        {"endpointId": WEBSEARCH_ID, "inputs": SEARCH_INPUTS, "approved": "true"},
        {"endpointId": WEBSEARCH_ID, "inputs": SEARCH_INPUTS, "dryRun": 1},
        {"endpointId": WEBSEARCH_ID, "inputs": SEARCH_INPUTS, "maxUsdc": "lots"},
    ],
)
def test_proxy_refuses_malformed_bodies(http: httpx.Client, bearer, actions, state, body):
    response = http.post(f"{actions}/x402/fetch", json=body, headers=bearer)
    assert response.status_code == 400
    assert _error(response)["code"] == "INVALID_REQUEST"
    assert state.executions_count() == 0


def test_proxy_refuses_invalid_json(http: httpx.Client, bearer, actions):
    response = http.post(f"{actions}/x402/fetch", content=b"{not json", headers=bearer)
    assert response.status_code == 400
    assert _error(response)["code"] == "INVALID_REQUEST"


async def test_not_in_registry(wallet: WalletClient, state: SandboxState, market: MarketClient):
    with pytest.raises(errors.NotInRegistry):
        await wallet.dry_run("x402", "ep_not_listed_anywhere", {})
    await wallet.dry_run("x402", WEBSEARCH_ID, SEARCH_INPUTS)
    state.remove_from_registry(WEBSEARCH_ID)
    with pytest.raises(errors.NotInRegistry):
        await wallet.dry_run("x402", WEBSEARCH_ID, SEARCH_INPUTS)
    with pytest.raises(errors.NotInRegistry):
        await _execute(wallet)
    assert state.executions_count() == 0
    # Delisted from the proxy's registry, still described by the catalogue.
    assert (await market.endpoint(WEBSEARCH_ID)).id == WEBSEARCH_ID


def test_not_in_registry_status(http: httpx.Client, bearer, actions):
    body = {"endpointId": "ep_nowhere", "inputs": {}, "dryRun": True}
    response = http.post(f"{actions}/x402/fetch", json=body, headers=bearer)
    assert response.status_code == 403
    assert _error(response)["code"] == "NOT_IN_REGISTRY"


async def test_wrong_protocol(wallet: WalletClient, http: httpx.Client, bearer, actions):
    with pytest.raises(errors.UpstreamError) as caught:
        await wallet.dry_run("mpp", WEBSEARCH_ID, SEARCH_INPUTS)
    assert caught.value.code == "WRONG_PROTOCOL"
    body = {"endpointId": FX_ID, "inputs": {"symbol": "EURUSD"}, "dryRun": True}
    response = http.post(f"{actions}/x402/fetch", json=body, headers=bearer)
    assert response.status_code == 400
    assert _error(response)["code"] == "WRONG_PROTOCOL"
    assert _error(response)["protocols"] == ["mpp"]


async def test_invalid_inputs_name_the_fields(wallet: WalletClient, state: SandboxState):
    with pytest.raises(errors.InvalidInputs) as caught:
        await wallet.dry_run("x402", WEBSEARCH_ID, {"max_results": 99, "maxresults": 3})
    fields = {item["field"]: item["problem"] for item in caught.value.fields}
    assert fields == {
        "query": "is required",
        "max_results": "must be at most 50",
        "maxresults": "is not a known field",
    }
    assert "query" in caught.value.message and "max_results" in caught.value.message

    with pytest.raises(errors.InvalidInputs) as caught:
        await wallet.dry_run("x402", SCRAPE_ID, {"url": "ftp://example.com"})
    assert caught.value.fields == [{"field": "url", "problem": "must match ^https?://"}]
    with pytest.raises(errors.InvalidInputs) as caught:
        await wallet.dry_run("x402", WEBSEARCH_ID, {"query": ""})
    assert caught.value.fields == [{"field": "query", "problem": "must not be empty"}]
    with pytest.raises(errors.InvalidInputs):
        await wallet.dry_run("mpp", FX_ID, {"symbol": "eurusd"})
    assert state.executions_count() == 0


def test_invalid_inputs_status(http: httpx.Client, bearer, actions):
    body = {"endpointId": WEBSEARCH_ID, "inputs": {"max_results": "ten"}, "dryRun": True}
    response = http.post(f"{actions}/x402/fetch", json=body, headers=bearer)
    assert response.status_code == 422
    error = _error(response)
    assert error["code"] == "INVALID_INPUTS"
    assert {"field": "max_results", "problem": "must be an integer"} in error["fields"]


def test_approval_required(http: httpx.Client, bearer, actions, state: SandboxState):
    for extra in ({}, {"dryRun": False}, {"dryRun": False, "approved": False}):
        body = {"endpointId": WEBSEARCH_ID, "inputs": SEARCH_INPUTS, **extra}
        response = http.post(f"{actions}/x402/fetch", json=body, headers=bearer)
        assert response.status_code == 403
        assert _error(response)["code"] == "APPROVAL_REQUIRED"
    assert state.executions_count() == 0
    assert state.balance == Decimal(25)


# --- wallet proxy: dry run and execution -------------------------------------------------------


async def test_dry_run_spends_nothing(wallet: WalletClient, state: SandboxState):
    fixed = await wallet.dry_run("x402", WEBSEARCH_ID, SEARCH_INPUTS)
    assert isinstance(fixed, DryRun)
    assert (fixed.endpoint_id, fixed.protocol, fixed.chain) == (WEBSEARCH_ID, "x402", "base")
    assert fixed.estimated_usdc == Decimal("0.01")
    assert fixed.ceiling == Decimal("0.01")
    assert fixed.required_fields == ["query"]
    assert fixed.policy["requiresApproval"] is True
    assert fixed.balance_usdc == Decimal(25)

    dynamic = await wallet.dry_run("x402", SCRAPE_ID, {"url": "https://example.com"})
    assert dynamic.estimated_usdc == Decimal("0.06")
    assert (dynamic.min_usdc, dynamic.max_usdc) == (Decimal("0.02"), Decimal("0.10"))
    assert dynamic.ceiling == Decimal("0.10")

    mpp = await wallet.dry_run("mpp", FX_ID, {"symbol": "EURUSD"})
    assert (mpp.protocol, mpp.chain, mpp.estimated_usdc) == ("mpp", "tempo", Decimal("0.05"))

    assert state.balance == Decimal(25)
    assert state.executions_count() == 0


async def test_dual_protocol_endpoint_settles_per_action(wallet: WalletClient):
    dual = next(r for r in catalog().endpoints if r.protocols == ["x402", "mpp"])
    inputs = _valid_inputs(dual.inputs)
    over_x402 = await wallet.dry_run("x402", dual.id, inputs)
    over_mpp = await wallet.dry_run("mpp", dual.id, inputs)
    assert over_x402.chain == dual.chains[0] != "tempo"
    assert over_mpp.chain == "tempo"


async def test_execution_charges_once_and_replays(wallet: WalletClient, state: SandboxState):
    first = await _execute(wallet)
    assert isinstance(first, Outcome)
    assert first.status == 200
    assert first.charged_usdc == Decimal("0.01")
    assert first.chain == "base"
    assert first.content_type == "application/json"
    assert first.receipt.protocol == "x402"
    assert first.receipt.network == "eip155:8453"
    assert re.fullmatch(r"0x[0-9a-f]{64}", first.receipt.transaction)
    assert first.receipt.idempotency_key == "key-1"
    result = json.loads(first.body)
    assert result["sandbox"] is True
    assert result["query"] == "usdc settlement"
    assert len(result["results"]) == 3

    again = await _execute(wallet)
    assert again == first
    assert len(state.charges_for("key-1")) == 1
    assert state.executions_count() == 1
    assert state.balance == Decimal("24.99")

    second = await _execute(wallet, idempotency_key="key-2")
    assert second.receipt.transaction != first.receipt.transaction
    assert second.body == first.body  # the fake provider is deterministic
    assert state.executions_count() == 2
    assert state.balance == Decimal("24.98")


def test_replay_is_byte_identical(http: httpx.Client, bearer, actions, state: SandboxState):
    body = {
        "endpointId": WEBSEARCH_ID,
        "inputs": SEARCH_INPUTS,
        "dryRun": False,
        "approved": True,
    }
    headers = {**bearer, "Idempotency-Key": "header-key"}
    first = http.post(f"{actions}/x402/fetch", json=body, headers=headers)
    second = http.post(f"{actions}/x402/fetch", json=body, headers=headers)
    assert first.status_code == second.status_code == 200
    assert first.content == second.content
    assert second.headers["idempotency-replayed"] == "true"
    assert len(state.charges_for("header-key")) == 1
    mismatch = {**body, "idempotencyKey": "body-key"}
    response = http.post(f"{actions}/x402/fetch", json=mismatch, headers=headers)
    assert response.status_code == 400


def test_idempotency_key_reused_for_another_call(http, bearer, actions, state: SandboxState):
    body = {"endpointId": WEBSEARCH_ID, "dryRun": False, "approved": True, "idempotencyKey": "k"}
    assert (
        http.post(
            f"{actions}/x402/fetch", json={**body, "inputs": SEARCH_INPUTS}, headers=bearer
        ).status_code
        == 200
    )
    other = http.post(
        f"{actions}/x402/fetch", json={**body, "inputs": {"query": "else"}}, headers=bearer
    )
    assert other.status_code == 409
    assert _error(other)["code"] == "IDEMPOTENCY_CONFLICT"
    assert state.executions_count() == 1


def test_concurrent_retries_charge_once(server: SandboxServer, bearer, actions):
    body = {
        "endpointId": WEBSEARCH_ID,
        "inputs": SEARCH_INPUTS,
        "dryRun": False,
        "approved": True,
        "idempotencyKey": "race",
    }
    answers: list[bytes] = []

    def call() -> None:
        with httpx.Client(base_url=server.base_url, timeout=10) as client:
            answers.append(client.post(f"{actions}/x402/fetch", json=body, headers=bearer).content)

    threads = [threading.Thread(target=call) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(answers) == 8
    assert len(set(answers)) == 1
    assert server.state.executions_count() == 1
    assert server.state.balance == Decimal("24.99")


async def test_dynamic_price_is_deterministic_and_in_range(wallet: WalletClient, state):
    record = catalog().get(SCRAPE_ID)
    inputs = {"url": "https://example.com/a"}
    expected = runtime_price(record, inputs, Decimal(1))
    assert Decimal("0.02") <= expected <= Decimal("0.10")
    assert runtime_price(record, inputs, Decimal(1)) == expected
    outcome = await _execute(
        wallet, SCRAPE_ID, inputs=inputs, ceiling_usdc=Decimal("0.10"), idempotency_key="dyn"
    )
    assert outcome.charged_usdc == expected
    assert state.balance == Decimal(25) - expected
    prices = {
        runtime_price(record, {"url": f"https://example.com/{n}"}, Decimal(1)) for n in range(20)
    }
    assert len(prices) > 1


async def test_price_above_ceiling_charges_nothing(wallet: WalletClient, state: SandboxState):
    record = catalog().get(SCRAPE_ID)
    inputs = next(
        {"url": f"https://example.com/{n}"}
        for n in range(100)
        if runtime_price(record, {"url": f"https://example.com/{n}"}, Decimal(1)) > Decimal("0.02")
    )
    price = runtime_price(record, inputs, Decimal(1))
    with pytest.raises(errors.PriceAboveCeiling) as caught:
        await _execute(wallet, SCRAPE_ID, inputs=inputs, ceiling_usdc=Decimal("0.02"))
    assert caught.value.price == price
    assert caught.value.chain == "base"
    assert state.executions_count() == 0
    assert state.balance == Decimal(25)


async def test_unsettleable_chain_is_refused(wallet: WalletClient, state: SandboxState):
    with pytest.raises(errors.PriceAboveCeiling) as caught:
        await _execute(wallet, chain="solana")
    assert caught.value.chain == "base"
    assert caught.value.price == Decimal("0.01")
    assert state.executions_count() == 0
    outcome = await _execute(
        wallet,
        SCRAPE_ID,
        inputs={"url": "https://example.com"},
        ceiling_usdc=Decimal("0.1"),
        chain="solana",
    )
    assert outcome.chain == "solana"
    assert outcome.receipt.network == "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp"


async def test_reprice_factor_raises_the_runtime_price(wallet: WalletClient, state: SandboxState):
    state.reprice_factor = 2
    dry = await wallet.dry_run("x402", WEBSEARCH_ID, SEARCH_INPUTS)
    assert dry.estimated_usdc == Decimal("0.01")  # the estimate is the catalogue's
    with pytest.raises(errors.PriceAboveCeiling) as caught:
        await _execute(wallet)
    assert caught.value.price == Decimal("0.02")
    assert state.executions_count() == 0
    outcome = await _execute(wallet, ceiling_usdc=Decimal("0.02"))
    assert outcome.charged_usdc == Decimal("0.02")
    assert state.balance == Decimal("24.98")
    with pytest.raises(ValueError):
        state.reprice_factor = 0


async def test_wallet_unfunded(wallet: WalletClient, state: SandboxState, http: httpx.Client):
    state.set_balance(Decimal("0.005"))
    with pytest.raises(errors.WalletUnfunded) as caught:
        await _execute(wallet)
    unfunded = caught.value
    assert unfunded.funding_url == f"{state.base_url}/fund/sandbox-operator"
    assert unfunded.balance == Decimal("0.005")
    assert unfunded.required == Decimal("0.01")
    assert state.executions_count() == 0
    assert state.balance == Decimal("0.005")

    # Funding through the page, then the same key executes: a refusal stored nothing.
    token = re.search(r'name="token" value="([^"]+)"', http.get("/fund/sandbox-operator").text)
    assert token is not None
    http.post("/fund/sandbox-operator", data={"token": token.group(1), "amount": "1"})
    outcome = await _execute(wallet)
    assert outcome.charged_usdc == Decimal("0.01")
    assert state.balance == Decimal("0.995")


def test_wallet_unfunded_status(http: httpx.Client, bearer, actions, state: SandboxState):
    state.set_balance(Decimal(0))
    body = {"endpointId": FX_ID, "inputs": {"symbol": "EURUSD"}, "dryRun": False, "approved": True}
    response = http.post(f"{actions}/mpp/pay", json=body, headers=bearer)
    assert response.status_code == 402
    error = _error(response)
    assert error["code"] == "WALLET_UNFUNDED"
    assert error["fundingUrl"].endswith("/fund/sandbox-operator")
    assert (error["balanceUsdc"], error["requiredUsdc"]) == ("0.00", "0.05")


async def test_mpp_execution_settles_on_tempo(wallet: WalletClient, state: SandboxState):
    outcome = await proxy_execute(
        wallet,
        "mpp",
        FX_ID,
        {"symbol": "EURUSD"},
        ceiling_usdc=Decimal("0.05"),
        chain="tempo",
        idempotency_key="fx-1",
    )
    assert outcome.chain == "tempo"
    assert outcome.receipt.protocol == "mpp"
    assert outcome.receipt.network.startswith("tempo:")
    result = json.loads(outcome.body)
    assert (result["symbol"], result["base"], result["quote"]) == ("EURUSD", "EUR", "USD")
    assert state.charges[0].chain == "tempo"
    assert state.charges[0].price_usdc == Decimal("0.05")


async def test_image_generation_answers_a_base64_png(wallet: WalletClient):
    record = next(
        r for r in catalog().endpoints if r.domain_type == "A1" and r.protocols == ["x402"]
    )
    inputs = _valid_inputs(record.inputs)
    outcome = await _execute(
        wallet,
        record.id,
        inputs=inputs,
        ceiling_usdc=record.pricing.ceiling,
        chain=record.chains[0],
        idempotency_key="img",
    )
    assert outcome.content_type == "image/png"
    assert outcome.body_encoding == "base64"
    assert base64.b64decode(outcome.body).startswith(b"\x89PNG\r\n\x1a\n")


# --- funding page ------------------------------------------------------------------------------


def _funding_token(http: httpx.Client) -> str:
    page = http.get("/fund/sandbox-operator")
    assert page.status_code == 200
    match = re.search(r'name="token" value="([^"]+)"', page.text)
    assert match is not None
    return match.group(1)


def test_funding_page_credits_the_balance(http: httpx.Client, state: SandboxState):
    page = http.get("/fund/sandbox-operator")
    assert page.headers["content-type"].startswith("text/html")
    assert "no real money moves" in page.text
    assert 'name="amount" value="10"' in page.text
    token = _funding_token(http)

    credited = http.post("/fund/sandbox-operator", data={"token": token, "amount": "5.5"})
    assert credited.status_code == 200
    assert state.balance == Decimal("30.5")
    assert "30.50 USDC" in credited.text

    default = http.post("/fund/sandbox-operator", data={"token": token})
    assert default.status_code == 200
    assert state.balance == Decimal("40.5")


@pytest.mark.parametrize("amount", ["0", "-3", "abc", "1.0000001", "100000"])
def test_funding_refuses_bad_amounts(http: httpx.Client, state: SandboxState, amount: str):
    token = _funding_token(http)
    response = http.post("/fund/sandbox-operator", data={"token": token, "amount": amount})
    assert response.status_code == 400
    assert state.balance == Decimal(25)


def test_funding_needs_the_page_token_and_the_wallet(http: httpx.Client, state: SandboxState):
    forged = http.post("/fund/sandbox-operator", data={"token": "guess", "amount": "5"})
    assert forged.status_code == 403
    assert http.get("/fund/<script>").status_code == 404
    assert "<script>" not in http.get("/fund/<script>").text.split("<body>")[1]
    assert state.balance == Decimal(25)


# --- catalogue ---------------------------------------------------------------------------------


def test_catalogue_is_deterministic_and_large():
    # Its build time is measured by `make bench`, never asserted here.
    first = build_catalog()
    second = build_catalog()
    assert first.endpoints == second.endpoints
    assert first.provider_count >= 1400
    assert len({r.id for r in first.endpoints}) == len(first.endpoints)
    assert catalog() is catalog()


def test_catalogue_coverage():
    records = catalog().endpoints
    assert {r.domain_type for r in records} == set(DOMAIN_TYPES)
    assert {r.product_class for r in records} == set(PRODUCT_CLASSES)
    assert {r.origin for r in records} == {"publisher", "registry"}
    assert {r.pricing.model for r in records} == {"fixed", "dynamic"}
    assert {p for r in records for p in r.protocols} == {"x402", "mpp"}
    assert {r.verified for r in records} == {True, False}
    assert {c for r in records for c in r.chains} == {
        "base",
        "solana",
        "stellar",
        "ethereum",
        "tempo",
    }
    assert any(r.quality_score < 0.5 for r in records)
    assert any(r.reliability < 0.9 for r in records)
    per_provider: dict[str, int] = {}
    for record in records:
        per_provider[record.provider] = per_provider.get(record.provider, 0) + 1
    assert set(per_provider.values()) <= {1, 2, 3}


def test_catalogue_prices_chains_and_schemas_are_sound():
    for record in catalog().endpoints:
        assert Decimal("0.001") <= record.pricing.ceiling <= Decimal(2)
        if record.pricing.model == "dynamic":
            assert record.pricing.min_usdc < record.pricing.max_usdc
        if "mpp" in record.protocols:
            assert "tempo" in record.chains
        if "x402" in record.protocols:
            assert [c for c in record.chains if c != "tempo"]
        else:
            assert record.chains == ["tempo"]
        assert record.inputs["required"]
    # Templates share schemas; checking each distinct one keeps this test fast.
    distinct = {json.dumps(r.inputs, sort_keys=True) for r in catalog().endpoints}
    for schema in distinct:
        Draft202012Validator.check_schema(json.loads(schema))
    cheap = [r for r in catalog().endpoints if r.pricing.ceiling <= Decimal("0.5")]
    assert len(cheap) > 0.9 * len(catalog().endpoints)


def test_valid_inputs_helper_fits_every_schema():
    for record in catalog().endpoints:
        Draft202012Validator(record.inputs).validate(_valid_inputs(record.inputs))


def test_fake_provider_answers_are_deterministic():
    listing = catalog()
    # One endpoint of every kind, so every fake provider answers at least once.
    kinds = {(r.domain_type, listing.kind(r.id)): r for r in reversed(listing.endpoints)}
    assert len(kinds) >= 50
    for record in kinds.values():
        inputs = _valid_inputs(record.inputs)
        Draft202012Validator(record.inputs).validate(inputs)
        first = upstream.respond(record, listing.kind(record.id), inputs)
        assert first == upstream.respond(record, listing.kind(record.id), inputs)
        content_type, body, encoding = first
        if content_type == "application/json":
            assert json.loads(body)["sandbox"] is True
        assert encoding in {"utf-8", "base64"}


# --- foreground server -------------------------------------------------------------------------


def test_write_credentials_is_owner_only(tmp_path: Path):
    target = tmp_path / "fresh" / "sandbox.json"
    write_credentials(target, {"api_key": "sk_live_x"})
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert stat.S_IMODE(target.parent.stat().st_mode) == 0o700
    assert json.loads(target.read_text()) == {"api_key": "sk_live_x"}
    write_credentials(target, {"api_key": "sk_live_y"})
    assert json.loads(target.read_text()) == {"api_key": "sk_live_y"}
    assert [p.name for p in target.parent.iterdir()] == ["sandbox.json"]


def test_serve_forever(tmp_path: Path):
    credentials = tmp_path / "home" / "sandbox.json"
    code = (
        "import sys; from pathlib import Path;"
        " from svc_console.sandbox.server import serve_forever;"
        " serve_forever('127.0.0.1', 0, Path(sys.argv[1]))"
    )
    process = subprocess.Popen(
        [sys.executable, "-c", code, str(credentials)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = process.stdout.readline()
        assert "listening on http://127.0.0.1:" in line
        assert str(credentials) in line
        saved = json.loads(credentials.read_text())
        assert stat.S_IMODE(credentials.stat().st_mode) == 0o600
        assert set(saved) >= {"base_url", "wallet_api_base", "api_key", "username", "api_token"}
        assert saved["api_key"] not in line and saved["api_token"] not in line
        assert saved["base_url"] in line
        health = None
        for _ in range(200):
            try:
                health = httpx.get(f"{saved['base_url']}/api/health", timeout=2)
                break
            except httpx.ConnectError:
                time.sleep(0.05)
        assert health is not None and health.json()["sandbox"] is True
        authorised = httpx.get(
            f"{saved['base_url']}/api/endpoints/{WEBSEARCH_ID}",
            headers={"Authorization": f"Bearer {saved['api_key']}"},
        )
        assert authorised.status_code == 200
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=15)
        assert process.returncode == 0, err
        assert saved["api_token"] not in out + err
        assert not credentials.exists()
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
