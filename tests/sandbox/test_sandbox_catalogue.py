"""The sandbox's dataset catalogue over real HTTP: its seeded size and coverage, the argument models
and limits of SPEC.md's tables, every dataset route (list, listing, datacard, free and paid access,
publishing), spoken by httpx and by the console's own MarketClient. The market side is in
test_sandbox_market_catalogue.py."""

import base64
import csv
import io
import json
from decimal import Decimal

import httpx
import pytest

from svc_console.core.datasets import (
    FORMATS,
    MODALITIES,
    SORT_ORDERS,
    TIERS,
    Datacard,
    DatasetAccess,
    DatasetListing,
    DatasetPage,
    PublishStatus,
)
from svc_console.market import errors
from svc_console.market.rest import MarketClient
from svc_console.sandbox.datasets import (
    DRAFT_ID,
    ENTERPRISE_ID,
    FAILING_DRAFT_ID,
    FREE_ID,
    PREMIUM_ID,
    STANDARD_ID,
    build_datasets,
    dataset_catalog,
)
from svc_console.sandbox.queries import (
    DatasetQuery,
    InvalidArguments,
    MarketQuery,
    TryDatasetArgs,
    parse_arguments,
)
from svc_console.sandbox.server import SandboxServer


@pytest.fixture(scope="module")
def served():
    """One sandbox for the read-only tests of this module (tests that change state use the
    function-scoped `sandbox` fixture)."""
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


def _datasets(http: httpx.Client, **params) -> dict:
    response = http.get("/api/datasets", params=params)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["sandbox"] is True
    return body


# --- the seeded dataset catalogue --------------------------------------------------------------


def test_dataset_catalogue_size_and_coverage():
    datasets = dataset_catalog().datasets
    assert len(datasets) >= 300
    assert {d.tier for d in datasets} == set(TIERS)
    assert {d.modality for d in datasets} == set(MODALITIES)
    assert {d.format for d in datasets} == set(FORMATS)
    assert len({d.category for d in datasets}) >= 10
    assert len({d.id for d in datasets}) == len(datasets)
    for d in datasets:
        assert d.title and d.description and d.tags and d.columns
        assert (d.price_usdc == 0) == (d.tier == "free")
        if d.modality == "document":
            assert d.format in {"txt", "md", "pdf", "jsonl"}
        else:
            assert d.format in {"csv", "tsv", "json", "jsonl", "parquet"}
    assert build_datasets().datasets == build_datasets().datasets


def test_the_well_known_datasets():
    listing = dataset_catalog()
    expected = {
        FREE_ID: ("free", "structured", "csv", Decimal(0)),
        STANDARD_ID: ("standard", "structured", "jsonl", Decimal("0.25")),
        PREMIUM_ID: ("premium", "document", "pdf", Decimal(10)),
        ENTERPRISE_ID: ("enterprise", "structured", "parquet", Decimal(250)),
    }
    for dataset_id, (tier, modality, fmt, price) in expected.items():
        d = listing.get(dataset_id)
        assert (d.tier, d.modality, d.format, d.price_usdc) == (tier, modality, fmt, price)
    # Drafts are found by publishing, never listed.
    assert listing.get(DRAFT_ID) is None and listing.find(DRAFT_ID).draft
    assert listing.query(DatasetQuery(query="city budgets"))[1] == 0


def test_trial_preview_coverage_and_datacard_of_every_dataset():
    listing = dataset_catalog()
    for d in listing.datasets:
        trial = listing.trial(d.id, [d.columns[0].name.upper(), "no_such_field"])
        assert trial["datasetId"] == d.id
        assert trial["preview"]["columns"] == d.column_names
        assert len(trial["preview"]["rows"]) == 5
        assert all(set(row) == set(d.column_names) for row in trial["preview"]["rows"])
        coverage = trial["coverage"]
        assert coverage["present"] == [d.columns[0].name.upper()]
        assert coverage["missing"] == ["no_such_field"]
        assert (coverage["coverage"], coverage["complete"]) == (0.5, False)
        assert trial["datacard"] == listing.card(d.id)
        assert trial["datacard"]["sandbox"] is True
    none_asked = listing.trial(FREE_ID, None)["coverage"]
    assert (none_asked["requiredFields"], none_asked["coverage"], none_asked["complete"]) == (
        [],
        1.0,
        True,
    )


# --- argument models ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("model", "arguments", "argument"),
    [
        (DatasetQuery, {"limit": 0}, "limit"),
        (DatasetQuery, {"limit": 101}, "limit"),
        (DatasetQuery, {"limit": True}, "limit"),
        (DatasetQuery, {"limit": "20"}, "limit"),
        (DatasetQuery, {"tier": "gold"}, "tier"),
        (DatasetQuery, {"modality": "image"}, "modality"),
        (DatasetQuery, {"format": "xlsx"}, "format"),
        (DatasetQuery, {"sort_by": "oldest"}, "sort_by"),
        (DatasetQuery, {"max_price_usdc": -1}, "max_price_usdc"),
        (DatasetQuery, {"required_fields": "date"}, "required_fields"),
        (DatasetQuery, {"page": 2}, "page"),
        (MarketQuery, {"limit": 0}, "limit"),
        (MarketQuery, {"limit": 51}, "limit"),
        (MarketQuery, {"domain_type": "A23"}, "domain_type"),
        (MarketQuery, {"product_class": "B7"}, "product_class"),
        (MarketQuery, {"chain": "bitcoin"}, "chain"),
        (MarketQuery, {"verified_only": "yes"}, "verified_only"),
        (MarketQuery, {"offset": 5}, "offset"),
        (TryDatasetArgs, {}, "dataset_id"),
        (TryDatasetArgs, {"dataset_id": FREE_ID, "fields": []}, "fields"),
    ],
)
def test_arguments_out_of_range_are_refused_naming_the_argument(model, arguments, argument):
    with pytest.raises(InvalidArguments) as caught:
        parse_arguments(model, arguments)
    assert [name for name, _ in caught.value.problems] == [argument]
    assert caught.value.message.startswith(argument)


def test_argument_defaults_and_schemas_state_the_limits():
    assert parse_arguments(DatasetQuery, {}).limit == 20
    assert parse_arguments(DatasetQuery, {}).sort_by == "newest"
    assert parse_arguments(MarketQuery, {}).limit == 25
    assert parse_arguments(DatasetQuery, {"limit": 100}).limit == 100
    assert parse_arguments(MarketQuery, {"limit": 50}).limit == 50
    assert parse_arguments(TryDatasetArgs, {"dataset_id": FREE_ID}).required_fields is None
    datasets = DatasetQuery.model_json_schema()
    assert datasets["additionalProperties"] is False
    limit = datasets["properties"]["limit"]
    assert (limit["minimum"], limit["maximum"], limit["default"]) == (1, 100, 20)
    market = MarketQuery.model_json_schema()["properties"]["limit"]
    assert (market["minimum"], market["maximum"], market["default"]) == (1, 50, 25)


# --- GET /api/datasets: every argument, default and limit --------------------------------------


def test_datasets_limit_boundaries_and_default(http: httpx.Client):
    assert len(_datasets(http)["datasets"]) == 20
    assert _datasets(http)["limit"] == 20
    assert len(_datasets(http, limit=1)["datasets"]) == 1
    full = _datasets(http, limit=100)
    assert len(full["datasets"]) == 100 and full["total"] >= 300
    for bad in (0, 101, -1, "ten"):
        response = http.get("/api/datasets", params={"limit": bad})
        assert response.status_code == 400
        error = _error(response)
        assert error["code"] == "INVALID_PARAMS"
        assert error["message"].startswith("limit")


@pytest.mark.parametrize("tier", TIERS)
def test_datasets_tier_filter(http: httpx.Client, tier: str):
    body = _datasets(http, tier=tier, limit=100)
    assert body["datasets"] and all(d["tier"] == tier for d in body["datasets"])


@pytest.mark.parametrize("modality", MODALITIES)
def test_datasets_modality_filter(http: httpx.Client, modality: str):
    body = _datasets(http, modality=modality, limit=100)
    assert body["datasets"] and all(d["modality"] == modality for d in body["datasets"])


@pytest.mark.parametrize("fmt", FORMATS)
def test_datasets_format_filter(http: httpx.Client, fmt: str):
    body = _datasets(http, format=fmt, limit=100)
    assert body["datasets"] and all(d["format"] == fmt for d in body["datasets"])


@pytest.mark.parametrize(
    ("sort_by", "key", "descending"),
    [
        ("newest", "createdAt", True),
        ("popular", "downloads", True),
        ("price_asc", "priceUsdc", False),
        ("price_desc", "priceUsdc", True),
    ],
)
def test_datasets_sort_orders(http: httpx.Client, sort_by: str, key: str, descending: bool):
    # Documents only: more than 100 datasets are free, which would hide the price order.
    rows = _datasets(http, sort_by=sort_by, modality="document", limit=100)["datasets"]
    values = [Decimal(r[key]) if key == "priceUsdc" else r[key] for r in rows]
    assert values == sorted(values, reverse=descending)
    assert len(set(values)) > 1


def test_datasets_default_order_is_newest(http: httpx.Client):
    assert _datasets(http)["datasets"] == _datasets(http, sort_by="newest")["datasets"]
    assert set(SORT_ORDERS) == {"newest", "popular", "price_asc", "price_desc"}


def test_datasets_search_category_price_and_required_fields(http: httpx.Client):
    fx = _datasets(http, search="fx rates", limit=100)["datasets"]
    assert FREE_ID in [d["id"] for d in fx]
    for d in fx:
        text = " ".join((d["title"], d["description"], *d["tags"])).lower()
        assert "fx" in text and "rates" in text
    # A word found only in the tags still matches.
    tagged = _datasets(http, search="parquet", limit=100)["datasets"]
    assert tagged and all(d["format"] == "parquet" or "parquet" in d["tags"] for d in tagged)
    legal = _datasets(http, category="legal", limit=100)["datasets"]
    assert legal and all(d["category"] == "legal" for d in legal)
    assert _datasets(http, category="no-such-category")["total"] == 0
    cheap = _datasets(http, max_price_usdc="0.5", limit=100)
    assert all(Decimal(d["priceUsdc"]) <= Decimal("0.5") for d in cheap["datasets"])
    assert {d["tier"] for d in cheap["datasets"]} == {"free", "standard"}
    free = _datasets(http, max_price_usdc="0", limit=100)["datasets"]
    assert free and {d["tier"] for d in free} == {"free"}
    needs = _datasets(http, required_fields="lat,LON", limit=100)
    assert needs["total"] > 0
    assert all({"lat", "lon"} <= set(d["columns"]) for d in needs["datasets"])
    repeated = http.get(
        "/api/datasets", params=[("required_fields", "lat"), ("required_fields", "lon")]
    )
    assert repeated.json()["total"] == needs["total"]
    assert _datasets(http, required_fields="lat,no_such_column")["total"] == 0


def test_datasets_unknown_or_bad_parameters_are_refused(http: httpx.Client):
    for params in (
        {"page": 2},
        {"tier": "gold"},
        {"sort_by": "oldest"},
        {"max_price_usdc": "-1"},
        {"format": "xlsx"},
        {"modality": "image"},
        {"search": "x" * 501},
    ):
        response = http.get("/api/datasets", params=params)
        assert response.status_code == 400, params
        assert _error(response)["code"] == "INVALID_PARAMS"
    twice = http.get("/api/datasets", params=[("tier", "free"), ("tier", "premium")])
    assert twice.status_code == 400


# --- one dataset: listing, card, access, publishing ---------------------------------------------


def test_dataset_listing_and_card(http: httpx.Client):
    listing = http.get(f"/api/datasets/{STANDARD_ID}").json()
    assert listing["sandbox"] is True
    parsed = DatasetListing.model_validate(listing)
    assert (parsed.tier, parsed.price_usdc, parsed.format) == ("standard", Decimal("0.25"), "jsonl")
    assert set(listing["qualitySignals"]) >= {
        "score",
        "completeness",
        "schemaAccuracy",
        "freshnessDays",
    }
    card = http.get(f"/api/datasets/{STANDARD_ID}/card.json").json()
    assert card == dataset_catalog().card(STANDARD_ID)
    datacard = Datacard.model_validate(card)
    assert [c.name for c in datacard.columns] == parsed.columns
    assert datacard.pricing.networks == ["eip155:8453"] and datacard.pricing.protocols == ["x402"]
    assert datacard.limitations[0].startswith("Sandbox data")
    for path in (
        "/api/datasets/ds_nope",
        "/api/datasets/ds_nope/card.json",
        f"/api/datasets/{DRAFT_ID}",
    ):
        response = http.get(path)
        assert response.status_code == 404
        assert _error(response)["code"] == "NOT_FOUND"


@pytest.mark.parametrize("dataset_id", [FREE_ID])
def test_free_access_delivers_content(http: httpx.Client, dataset_id: str):
    response = http.post(f"/api/datasets/{dataset_id}/access")
    assert response.status_code == 200
    access = DatasetAccess.model_validate(response.json())
    assert access.charged_usdc == 0 and access.payment is None
    content = access.content
    assert (content.format, content.delivered_as, content.rows_delivered) == ("csv", "csv", 25)
    rows = list(csv.DictReader(io.StringIO(content.body)))
    assert len(rows) == 25 and list(rows[0]) == dataset_catalog().get(dataset_id).column_names
    assert response.json()["sandbox"] is True


def test_deliveries_are_in_each_format():
    listing = dataset_catalog()
    seen = set()
    for d in listing.datasets:
        if d.format in seen:
            continue
        seen.add(d.format)
        content = listing.content(d.id)
        body = content["body"]
        if content["deliveredAs"] == "json":
            assert len(json.loads(body)) == content["rowsDelivered"]
        elif content["deliveredAs"] == "jsonl":
            assert len([json.loads(line) for line in body.splitlines()]) == content["rowsDelivered"]
        elif content["deliveredAs"] in {"csv", "tsv"}:
            delimiter = "," if content["deliveredAs"] == "csv" else "\t"
            assert (
                len(list(csv.reader(io.StringIO(body), delimiter=delimiter)))
                == content["rowsDelivered"] + 1
            )
        else:
            assert content["deliveredAs"] in {"txt", "md"} and body.strip()
    assert seen == set(FORMATS)


def test_paid_access_without_payment_is_a_402_challenge(http: httpx.Client, served: SandboxServer):
    response = http.post(f"/api/datasets/{STANDARD_ID}/access")
    assert response.status_code == 402
    required = json.loads(base64.b64decode(response.headers["payment-required"]))
    assert required["x402Version"] == 2
    assert required["resource"]["url"] == f"{served.base_url}/api/datasets/{STANDARD_ID}/access"
    (offer,) = required["accepts"]
    assert (offer["scheme"], offer["network"], offer["amount"]) == (
        "exact",
        "eip155:8453",
        "250000",
    )
    error = _error(response)
    assert error["code"] == "PAYMENT_REQUIRED"
    assert error["paymentRequired"] == required
    enterprise = http.post(f"/api/datasets/{ENTERPRISE_ID}/access")
    assert (
        json.loads(base64.b64decode(enterprise.headers["payment-required"]))["accepts"][0]["amount"]
        == "250000000"
    )


def _sign(required: dict, private_key: str) -> str:
    """A PAYMENT-SIGNATURE made by the x402 package's own client."""
    from eth_account import Account
    from x402 import x402ClientSync
    from x402.http.utils import encode_payment_signature_header
    from x402.schemas import PaymentRequired

    from svc_console.market.signer import AccountSigner, exact_evm_scheme

    client = x402ClientSync()
    client.register("eip155:8453", exact_evm_scheme(AccountSigner(Account.from_key(private_key))))
    payload = client.create_payment_payload(PaymentRequired.model_validate(required))
    return encode_payment_signature_header(payload)


def test_paid_access_with_a_signed_payment(sandbox):
    key = "0x" + "11" * 32
    headers = {"Authorization": f"Bearer {sandbox.state.api_key}"}
    with httpx.Client(base_url=sandbox.base_url, headers=headers, timeout=10) as http:
        challenge = http.post(f"/api/datasets/{STANDARD_ID}/access")
        required = json.loads(base64.b64decode(challenge.headers["payment-required"]))
        signature = _sign(required, key)
        balance = sandbox.state.balance
        paid = http.post(
            f"/api/datasets/{STANDARD_ID}/access", headers={"PAYMENT-SIGNATURE": signature}
        )
        assert paid.status_code == 200, paid.text
        settled = json.loads(base64.b64decode(paid.headers["payment-response"]))
        assert settled["success"] is True and settled["network"] == "eip155:8453"
        body = paid.json()
        assert body["chargedUsdc"] == "0.25" and body["content"]["deliveredAs"] == "jsonl"
        assert sandbox.state.balance == balance - Decimal("0.25")
        replay = http.post(
            f"/api/datasets/{STANDARD_ID}/access", headers={"PAYMENT-SIGNATURE": signature}
        )
        assert replay.status_code == 402
        assert _error(replay)["code"] == "PAYMENT_INVALID"
        assert _error(replay)["reason"] == "nonce_reused"
        assert sandbox.state.balance == balance - Decimal("0.25")
        garbage = http.post(
            f"/api/datasets/{STANDARD_ID}/access", headers={"PAYMENT-SIGNATURE": "bm9wZQ=="}
        )
        assert _error(garbage)["code"] == "PAYMENT_INVALID"
        sandbox.state.set_balance(0)
        poor = http.post(
            f"/api/datasets/{STANDARD_ID}/access",
            headers={"PAYMENT-SIGNATURE": _sign(required, key)},
        )
        assert poor.status_code == 402
        assert _error(poor)["code"] == "WALLET_UNFUNDED"
        assert "payment-required" in poor.headers


def test_publishing_a_draft(sandbox):
    headers = {"Authorization": f"Bearer {sandbox.state.api_key}"}
    with httpx.Client(base_url=sandbox.base_url, headers=headers, timeout=10) as http:
        status = http.get(f"/api/datasets/{DRAFT_ID}/publish-status").json()
        assert (status["state"], status["version"], status["datacardUrl"]) == ("draft", 0, None)
        assert http.get(f"/api/datasets/{DRAFT_ID}/card.json").status_code == 404
        started = http.post(f"/api/datasets/{DRAFT_ID}/process")
        assert started.status_code == 202 and started.json()["state"] == "processing"
        again = http.post(f"/api/datasets/{DRAFT_ID}/process")
        assert again.status_code == 409 and _error(again)["code"] == "PUBLISH_IN_PROGRESS"
        done = PublishStatus.model_validate(
            http.get(f"/api/datasets/{DRAFT_ID}/publish-status").json()
        )
        assert (done.state, done.version) == ("published", 1)
        assert [e.state for e in done.history] == ["draft", "processing", "published"]
        assert http.get(done.datacard_url).json()["datasetId"] == DRAFT_ID
        assert http.get(f"/api/datasets/{DRAFT_ID}").status_code == 200
        assert DRAFT_ID in [
            d["id"]
            for d in http.get("/api/datasets", params={"search": "city budgets"}).json()["datasets"]
        ]

        http.post(f"/api/datasets/{FAILING_DRAFT_ID}/process")
        failed = http.get(f"/api/datasets/{FAILING_DRAFT_ID}/publish-status").json()
        assert failed["state"] == "failed" and "no schema" in failed["reason"]
        assert http.get(f"/api/datasets/{FAILING_DRAFT_ID}").status_code == 404

        republished = http.post(f"/api/datasets/{FREE_ID}/process").json()
        assert republished["state"] == "processing"
        assert http.get(f"/api/datasets/{FREE_ID}/publish-status").json()["version"] == 2
        assert http.post("/api/datasets/ds_nope/process").status_code == 404
        assert http.get("/api/datasets/ds_nope/publish-status").status_code == 404


def test_publishing_is_per_sandbox(served: SandboxServer, http: httpx.Client):
    # Nothing published in another sandbox shows here.
    assert http.get(f"/api/datasets/{DRAFT_ID}/publish-status").json()["state"] == "draft"


# --- the console's client -----------------------------------------------------------------------


async def test_client_dataset_methods(market: MarketClient):
    page = await market.datasets(search="fx", tier="free", limit=5)
    assert isinstance(page, DatasetPage) and page.limit == 5
    assert FREE_ID in [d.id for d in page.datasets]
    filtered = await market.datasets(
        modality="structured", format="csv", max_price_usdc=Decimal("0.5"),
        required_fields=["date"], sort_by="price_asc", category="finance", limit=100,
    )  # fmt: skip
    assert filtered.datasets
    assert all(d.format == "csv" and "date" in d.columns for d in filtered.datasets)
    listing = await market.dataset(PREMIUM_ID)
    assert (listing.modality, listing.format, listing.price_usdc) == (
        "document",
        "pdf",
        Decimal(10),
    )
    card = await market.dataset_card(PREMIUM_ID)
    assert card.dataset_id == PREMIUM_ID and card.statistics.column_count == len(listing.columns)
    free = await market.dataset_access(FREE_ID)
    assert free.content.rows_delivered == 25 and free.charged_usdc == 0
    status = await market.publish_status(FREE_ID)
    assert isinstance(status, PublishStatus) and status.state == "published"


async def test_client_typed_errors(market: MarketClient, served: SandboxServer):
    with pytest.raises(errors.PaymentRequired) as caught:
        await market.dataset_access(PREMIUM_ID)
    assert type(caught.value) is errors.PaymentRequired
    assert caught.value.amount_usdc == Decimal(10)
    assert caught.value.network == "eip155:8453"
    assert caught.value.resource == f"{served.base_url}/api/datasets/{PREMIUM_ID}/access"
    assert caught.value.required["x402Version"] == 2
    with pytest.raises(errors.PaymentInvalid) as invalid:
        await market.dataset_access(PREMIUM_ID, payment_signature="bm9wZQ==")
    assert invalid.value.reason and invalid.value.accepts
    with pytest.raises(errors.DatasetNotFound):
        await market.dataset("ds_nope")
    with pytest.raises(errors.DatasetNotFound):
        await market.dataset_card("ds_nope?limit=1#x")
    # An id can never walk to another route: it stays one path segment.
    with pytest.raises(errors.EndpointNotFound):
        await market.dataset_card("../../api/search")
    with pytest.raises(errors.InvalidParams) as bad:
        await market.datasets(limit=101)
    assert bad.value.fields == [{"argument": "limit", "problem": "must be at most 100 (got 101)"}]
    with pytest.raises(errors.InvalidParams):
        await market.search(limit=51)
    with pytest.raises(errors.InvalidParams):
        await market.market_catalog(limit=0)
    stranger = MarketClient(served.base_url, "sk_live_not_the_key")
    try:
        with pytest.raises(errors.Unauthorized):
            await stranger.datasets()
    finally:
        await stranger.aclose()


async def test_client_publishing(sandbox):
    client = MarketClient(sandbox.base_url, sandbox.state.api_key)
    try:
        started = await client.process_dataset(DRAFT_ID)
        assert started.state == "processing"
        with pytest.raises(errors.PublishInProgress):
            await client.process_dataset(DRAFT_ID)
        assert (await client.publish_status(DRAFT_ID)).state == "published"
        assert (await client.dataset(DRAFT_ID)).id == DRAFT_ID
    finally:
        await client.aclose()
