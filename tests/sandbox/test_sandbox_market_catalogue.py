"""The sandbox's market catalogue over real HTTP: its seeded size and coverage, the generated skill
files, `POST /api/search` and `GET /api/market/catalog` with every filter and limit, the API key on
the catalogue routes, the public content routes for answer engines, and the console's client."""

from decimal import Decimal

import httpx
import pytest

from svc_console.core.catalogue import CatalogPage, SearchPage
from svc_console.core.taxonomy import CHAINS, DOMAIN_TYPES, PRODUCT_CLASSES
from svc_console.market.rest import MarketClient
from svc_console.sandbox.catalog import build_catalog, catalog, skill_markdown
from svc_console.sandbox.datasets import FREE_ID, dataset_catalog
from svc_console.sandbox.queries import TOOLS_SUMMARY
from svc_console.sandbox.server import SandboxServer

NINE_TOOLS = [
    "svc_auth_start", "svc_auth_complete", "list_datasets", "search_datasets", "list_market_apis",
    "try_dataset", "get_dataset", "svc_breed_agent", "merge_models",
]  # fmt: skip


@pytest.fixture(scope="module")
def served():
    """One sandbox for this module: every test here only reads."""
    with SandboxServer() as server:
        yield server


@pytest.fixture(scope="module")
def http(served: SandboxServer):
    headers = {"Authorization": f"Bearer {served.state.api_key}"}
    with httpx.Client(base_url=served.base_url, headers=headers, timeout=10) as client:
        yield client


@pytest.fixture
async def market(served: SandboxServer):
    client = MarketClient(served.base_url, served.state.api_key)
    yield client
    await client.aclose()


def _error(response: httpx.Response) -> dict:
    body = response.json()
    assert body["sandbox"] is True
    return body["error"]


# --- the seeded market catalogue ---------------------------------------------------------------


def test_market_catalogue_size_and_coverage():
    listing = catalog()
    records = listing.endpoints
    assert listing.provider_count >= 1400
    assert len(listing.providers) == listing.provider_count
    assert {r.domain_type for r in records} == set(DOMAIN_TYPES)
    assert {r.product_class for r in records} == set(PRODUCT_CLASSES)
    assert {c for r in records for c in r.chains} == set(CHAINS)
    assert {r.origin for r in records} == {"publisher", "registry"}
    assert {r.verified for r in records} == {True, False}
    assert {r.pricing.model for r in records} == {"fixed", "dynamic"}
    assert {p for r in records for p in r.protocols} == {"x402", "mpp"}
    # Registry-synced providers are the bulk, as on a real aggregated market.
    registry = [p for p in listing.providers if p.origin == "registry"]
    assert len(registry) > listing.provider_count / 2
    for code in DOMAIN_TYPES:
        assert sum(1 for p in listing.providers if code in p.domain_types) >= 50


def test_market_catalogue_is_deterministic_and_keeps_the_named_endpoints():
    first, second = build_catalog(), build_catalog()
    assert first.endpoints == second.endpoints
    assert len({r.id for r in first.endpoints}) == len(first.endpoints)
    search, scrape, fx = (
        first.get(i) for i in ("ep_websearch_basic", "ep_scrape_page", "ep_fx_rates")
    )
    assert (search.pricing.amount_usdc, search.chains, search.verified) == (
        Decimal("0.01"),
        ["base"],
        True,
    )
    assert (scrape.pricing.min_usdc, scrape.pricing.max_usdc) == (Decimal("0.02"), Decimal("0.1"))
    assert (fx.pricing.amount_usdc, fx.protocols) == (Decimal("0.05"), ["mpp"])
    video = first.get("ep_frameify_generate")
    assert (video.provider_name, video.domain_type, video.product_class) == ("Frameify", "A2", "B3")
    assert (video.pricing.model, video.pricing.amount_usdc) == ("fixed", Decimal("1.50"))
    assert (video.chains, video.protocols, video.origin) == (
        ["base", "ethereum"],
        ["x402"],
        "registry",
    )
    assert video.inputs["required"] == ["prompt"]


def test_every_endpoint_has_a_skill_file():
    listing = catalog()
    for record in listing.endpoints:
        text = skill_markdown(record, listing.outputs[record.id])
        assert text.startswith(f"# SANDBOX LISTING: {record.name} by {record.provider_name}")
        for section in (
            "## When to use",
            "## Inputs",
            "## Outputs",
            "## Cost",
            "## Protocols",
            "## Networks",
        ):
            assert section in text
        assert ", ".join(record.chains) in text
        assert "USDC per call" in text
        for name in record.inputs["properties"]:
            assert f"`{name}`" in text


# --- the market: search and browse ---------------------------------------------------------------


def test_search_limit_boundaries_and_default(http: httpx.Client):
    assert len(http.post("/api/search", json={}).json()["results"]) == 25
    assert len(http.post("/api/search", json={"limit": 1}).json()["results"]) == 1
    assert len(http.post("/api/search", json={"limit": 50}).json()["results"]) == 50
    for bad in (0, 51):
        response = http.post("/api/search", json={"limit": bad})
        assert response.status_code == 400
        assert _error(response)["fields"] == [
            {"argument": "limit", "problem": response.json()["error"]["message"][6:]}
        ]


@pytest.mark.parametrize("chain", CHAINS)
def test_search_every_chain(http: httpx.Client, chain: str):
    results = http.post("/api/search", json={"chain": chain, "limit": 50}).json()["results"]
    assert results and all(chain in r["chains"] for r in results)


@pytest.mark.parametrize("code", list(DOMAIN_TYPES) + list(PRODUCT_CLASSES))
def test_search_every_domain_type_and_product_class(http: httpx.Client, code: str):
    key = "domain_type" if code.startswith("A") else "product_class"
    body = http.post("/api/search", json={key: code, "limit": 50}).json()
    assert body["total"] > 0 and all(r[key] == code for r in body["results"])


def test_search_verified_and_price(http: httpx.Client):
    verified = http.post("/api/search", json={"verified_only": True, "limit": 50}).json()
    assert all(r["verified"] for r in verified["results"])
    everyone = http.post("/api/search", json={"verified_only": False}).json()
    assert everyone["total"] == len(catalog().endpoints) > verified["total"]
    cheap = http.post("/api/search", json={"max_price_usdc": 0.002, "limit": 50}).json()["results"]
    for r in cheap:
        pricing = r["pricing"]
        assert Decimal(pricing["amountUsdc"] or pricing["maxUsdc"]) <= Decimal("0.002")


def test_market_catalog_pages(http: httpx.Client):
    first = CatalogPage.model_validate(http.get("/api/market/catalog").json())
    assert (first.offset, first.limit, len(first.providers)) == (0, 50, 50)
    assert first.total == catalog().provider_count and first.next_offset == 50
    names = [p.name.lower() for p in first.providers]
    assert names == sorted(names)
    last = http.get("/api/market/catalog", params={"offset": first.total - 3, "limit": 100}).json()
    assert len(last["providers"]) == 3 and last["nextOffset"] is None
    assert len(http.get("/api/market/catalog", params={"limit": 100}).json()["providers"]) == 100
    for params in (
        {"limit": 0},
        {"limit": 101},
        {"offset": -1},
        {"origin": "elsewhere"},
        {"size": 5},
    ):
        response = http.get("/api/market/catalog", params=params)
        assert response.status_code == 400, params
        assert _error(response)["code"] == "INVALID_PARAMS"


def test_market_catalog_filters(http: httpx.Client):
    def providers(**params):
        return http.get("/api/market/catalog", params={"limit": 100, **params}).json()

    registry = providers(origin="registry", verified_only="true")
    assert registry["total"] > 0
    assert all(p["origin"] == "registry" and p["verified"] for p in registry["providers"])
    a7 = providers(domain_type="A7", chain="stellar")
    assert a7["total"] > 0
    assert all("A7" in p["domainTypes"] and "stellar" in p["chains"] for p in a7["providers"])
    searchly = providers(query="searchly")
    assert [p["id"] for p in searchly["providers"]] == ["prov_searchly"]
    assert searchly["providers"][0]["endpoints"] == ["ep_websearch_basic"]
    cheap = providers(max_price_usdc="0.001")
    assert all(Decimal(p["priceFromUsdc"]) <= Decimal("0.001") for p in cheap["providers"])


# --- authentication and content routes -----------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/api/datasets"),
        ("GET", f"/api/datasets/{FREE_ID}"),
        ("POST", f"/api/datasets/{FREE_ID}/access"),
        ("GET", f"/api/datasets/{FREE_ID}/card.json"),
        ("POST", f"/api/datasets/{FREE_ID}/process"),
        ("GET", f"/api/datasets/{FREE_ID}/publish-status"),
        ("GET", "/api/market/catalog"),
    ],
)
def test_catalogue_routes_need_the_api_key(served: SandboxServer, method: str, path: str):
    for headers in (
        {},
        {"Authorization": "Bearer sk_live_wrong"},
        {"Authorization": f"Bearer {served.state.api_token}"},
    ):
        response = httpx.request(method, served.base_url + path, headers=headers)
        assert response.status_code == 401
        assert _error(response)["code"] == "UNAUTHORIZED"


def test_content_routes_are_public_and_say_sandbox(served: SandboxServer):
    base = served.base_url
    text = httpx.get(f"{base}/llms.txt")
    assert text.headers["content-type"].startswith("text/plain")
    assert text.text.startswith("# svc-console sandbox marketplace\n\n> SANDBOX")
    for name in NINE_TOOLS:
        assert f"- {name} (" in text.text
    assert "/api/datasets/{id}/card.json" in text.text
    index = httpx.get(f"{base}/api/content/index").json()
    assert index["sandbox"] is True and "SANDBOX" in index["description"]
    assert index["counts"]["providers"] == catalog().provider_count
    assert index["counts"]["datasets"] == len(dataset_catalog().datasets)
    assert {e["id"] for e in index["entries"]} >= {"domain:A22", "class:B6", "tool:merge_models"}
    glossary = httpx.get(f"{base}/api/content/glossary").json()
    assert glossary["sandbox"] is True
    assert {"x402", "MPP", "datacard", "WALLET_UNFUNDED"} <= {t["term"] for t in glossary["terms"]}
    tools = httpx.get(f"{base}/api/content/tools").json()
    assert tools["sandbox"] is True
    assert [t["name"] for t in tools["tools"]] == NINE_TOOLS
    by_name = {t["name"]: t for t in tools["tools"]}
    assert (by_name["svc_breed_agent"]["priceUsdc"], by_name["merge_models"]["priceUsdc"]) == (
        "10.00",
        "15.00",
    )
    assert by_name["svc_breed_agent"]["destructive"] and not by_name["get_dataset"]["readOnly"]
    assert all(
        by_name[n]["readOnly"]
        for n in ("list_datasets", "search_datasets", "list_market_apis", "try_dataset")
    )
    assert by_name["svc_auth_start"]["auth"] == "none"
    assert [t.name for t in TOOLS_SUMMARY] == NINE_TOOLS


# --- the console's client -----------------------------------------------------------------------


async def test_client_market_and_content_methods(market: MarketClient):
    page = await market.search_page(domain_type="A7", verified_only=True, limit=3)
    assert isinstance(page, SearchPage) and len(page.results) == 3 and page.total > 3
    records = await market.search(query="searchly", chain="base", max_price_usdc=Decimal("0.01"))
    assert [r.id for r in records] == ["ep_websearch_basic"]
    browse = await market.market_catalog(offset=10, limit=5, origin="publisher", product_class="B4")
    assert browse.offset == 10 and len(browse.providers) == 5
    assert all(p.origin == "publisher" and "B4" in p.product_classes for p in browse.providers)
    assert (await market.llms_txt()).startswith("# svc-console sandbox marketplace")
    index = await market.content_index()
    assert index.counts["tools"] == 9
    assert any(t.term == "x402" for t in (await market.glossary()).terms)
    assert [t.name for t in (await market.tools()).tools] == NINE_TOOLS
