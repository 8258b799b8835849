"""The one signer: it signs x402 and MPP challenges only within a mandate, says every way a
challenge falls outside one in words, and what it signs is paid by the sandbox over real HTTP.
For the wallet proxy it makes the only `approved: true` body, with the mandate's ceiling and
chain, and only for the endpoint as it was quoted."""

from __future__ import annotations

import base64
import json
import time
from decimal import Decimal
from typing import Any

import httpx
import pytest
from eth_account import Account
from mandates import BASE_USDC, mandate
from x402.schemas import SettleResponse

from svc_console.broker.secret_refusal import OwnSecrets
from svc_console.core.mandate import LIFETIME_S, inputs_digest
from svc_console.core.models import Kind
from svc_console.core.networks import USDC_ASSETS
from svc_console.market.errors import OutsideMandate
from svc_console.market.signer import Signer
from svc_console.sandbox.catalog import WEBSEARCH_ID, catalog
from svc_console.sandbox.market_routes import provider_pay_to
from svc_console.sandbox.state import SandboxState
from svc_console.sandbox.x402 import SANDBOX_PAY_TO, X402Gate

SEARCH = "/api/market/searchly/search"
SEARCH_INPUTS = {"query": "usdc settlement"}
FX = "/api/market/quantfeed/fx"
FX_INPUTS = {"symbol": "EURUSD"}
SEARCHLY = provider_pay_to("prov_searchly")
EVIL = "0xdEaD000000000000000000000000000000bEEf01"
TEMPO = "eip155:4217"


@pytest.fixture
def http(sandbox):
    with httpx.Client(base_url=sandbox.base_url, timeout=10) as client:
        yield client


@pytest.fixture
def key() -> str:
    return "0x" + Account.create().key.hex().removeprefix("0x")


@pytest.fixture
def signer(key: str) -> Signer:
    return Signer.with_key(key, time.time)


def _challenge(http: httpx.Client) -> str:
    response = http.post(SEARCH, json=SEARCH_INPUTS)
    assert response.status_code == 402
    return response.headers["payment-required"]


def _edited(header: str, **changes: Any) -> str:
    data = json.loads(base64.b64decode(header))
    data["accepts"][0].update(changes)
    return base64.b64encode(json.dumps(data).encode()).decode()


def _search_mandate(**changes: Any):
    return mandate(**{"recipient": SEARCHLY, "max_usdc": Decimal("0.02"), **changes})


@pytest.mark.parametrize(
    "bad",
    [
        "0x" + "00" * 32,  # zero
        "0x" + "ff" * 32,  # above the curve's order
        "0x" + "11" * 31,  # 31 bytes
        "0x" + "zz" * 32,  # not hex
        "",
    ],
)
def test_a_malformed_key_is_refused_at_once_as_eth_account_would(bad: str):
    with pytest.raises(ValueError, match="not a valid EVM private key"):
        Signer.with_key(bad, time.time)
    if bad:
        with pytest.raises(Exception):  # noqa: B017  (whichever its own error is)
            Account.from_key(bad)


def test_the_account_is_made_when_first_needed_with_the_address_the_key_gives(key: str):
    signer = Signer.with_key(key, time.time)
    assert signer._account is not None and signer._account._made is None  # not yet
    assert signer.address == Account.from_key(key).address
    assert signer._account._key is None  # the key is in the account object alone from now on


def test_signs_within_the_mandate_and_the_sandbox_pays_it(http, sandbox, signer):
    signed = signer.x402(_search_mandate(), _challenge(http))
    assert (signed.amount_usdc, signed.network, signed.pay_to) == (
        Decimal("0.01"),
        "eip155:8453",
        SEARCHLY,
    )
    assert signed.payer == signer.address
    paid = http.post(SEARCH, json=SEARCH_INPUTS, headers={"PAYMENT-SIGNATURE": signed.header})
    assert paid.status_code == 200, paid.text
    settled = SettleResponse.model_validate_json(base64.b64decode(paid.headers["payment-response"]))
    assert settled.success and settled.network == "eip155:8453"
    assert sandbox.state.balance == Decimal("24.99")


# Each way a challenge can leave its mandate, the words said, and whether an approval could ever
# cover it (else the request fails, rather than going back to the operator).
REWRITES = {
    "recipient": ({"payTo": EVIL}, "the recipient changed from 0x0dFE…3CC9 to 0xdEaD…Ef01", False),
    "asset": (
        {"asset": "0x" + "77" * 20},
        "the asset changed from USDC (0x8335…2913) to 0x7777…7777",
        True,
    ),
    "network": (
        {"network": "eip155:1", "asset": USDC_ASSETS["eip155:1"]},
        "the network changed from base (eip155:8453) to ethereum (eip155:1)",
        False,
    ),
    "amount": ({"amount": "30000"}, "the amount rose from at most 0.02 to 0.03 USDC", False),
    "scheme": ({"scheme": "upto"}, "the scheme changed from exact to upto", True),
    "validity": (
        {"maxTimeoutSeconds": 30 * 86_400},
        "past the mandate's",
        True,
    ),
    "EIP-712 domain": (
        {"extra": {"name": "USD Coin", "version": "1"}},
        "the EIP-712 domain changed from USD Coin version 2 to USD Coin version 1",
        True,
    ),
    "transfer method": (
        {"extra": {"name": "USD Coin", "version": "2", "assetTransferMethod": "permit2"}},
        "the transfer method changed from EIP-3009 to permit2",
        True,
    ),
}


@pytest.mark.parametrize("rewrite", list(REWRITES))
def test_every_way_out_of_the_mandate_is_refused_in_words(http, sandbox, signer, rewrite):
    changes, words, final = REWRITES[rewrite]
    challenge = _edited(_challenge(http), **changes)
    with pytest.raises(OutsideMandate) as refused:
        signer.x402(_search_mandate(), challenge)
    assert any(words in said for said in refused.value.differences), refused.value.differences
    assert refused.value.final is final
    assert refused.value.offer is not None  # what was asked, for the operator to see
    assert sandbox.state.charges == []


def test_without_the_recipient_check_the_other_address_would_be_signed(http, signer):
    """The check is the mandate's: a challenge that moved its payTo is refused even though
    everything else fits."""
    challenge = _edited(_challenge(http), payTo=EVIL)
    with pytest.raises(OutsideMandate) as refused:
        signer.x402(_search_mandate(), challenge)
    assert refused.value.differences == ["the recipient changed from 0x0dFE…3CC9 to 0xdEaD…Ef01"]
    assert refused.value.offer.recipient == EVIL


def test_an_expired_mandate_signs_nothing(http, key):
    approved = time.time() - LIFETIME_S - 60
    signer = Signer.with_key(key, time.time)
    with pytest.raises(OutsideMandate) as refused:
        signer.x402(_search_mandate(at=approved), _challenge(http))
    assert refused.value.differences[0].startswith("the mandate expired at ")
    assert not refused.value.final  # approved again, it is paid


def test_of_several_options_the_one_the_mandate_covers_is_signed(tmp_path, signer):
    gate = X402Gate(SandboxState(outbox=tmp_path / "outbox"))
    required = gate.required(
        "http://sandbox/x", Decimal("0.01"), "x", networks=["eip155:8453", "eip155:1"]
    )
    terms = mandate(
        recipient=SANDBOX_PAY_TO,
        network="eip155:1",  # not the first option offered: the one the operator approved
        asset=USDC_ASSETS["eip155:1"],
        chain="ethereum",
        max_usdc=Decimal("0.01"),
    )
    assert signer.x402(terms, required).network == "eip155:1"


def test_compute_tools_are_paid_exactly_their_price(tmp_path, signer):
    state = SandboxState(outbox=tmp_path / "outbox")
    gate = X402Gate(state)
    for kind, price in ((Kind.breed_agent, Decimal(10)), (Kind.merge_models, Decimal(15))):
        terms = mandate(kind=kind, recipient=SANDBOX_PAY_TO, max_usdc=price, exact=True)
        required = gate.required("http://sandbox/api/mcp#job", price, "a compute job")
        signed = signer.x402(terms, required)
        assert gate.settle(required, payment_signature=signed.header).amount_usdc == price
    breed = mandate(kind=Kind.breed_agent, recipient=SANDBOX_PAY_TO, max_usdc=10, exact=True)
    for price in (Decimal("9.99"), Decimal("10.01")):
        required = gate.required("http://sandbox/api/mcp#job", price, "a compute job")
        with pytest.raises(OutsideMandate) as refused:
            signer.x402(breed, required)
        assert refused.value.differences == [
            f"the amount changed from exactly 10.00 to {price} USDC"
        ]
        assert refused.value.final  # no approval pays a compute tool another price
    assert state.balance == 0


@pytest.mark.parametrize(
    "challenge",
    ["%%%", base64.b64encode(b'{"x402Version": 1}').decode(), {"x402Version": 2, "accepts": []}],
)
def test_unreadable_challenges_are_not_signed(signer, challenge):
    with pytest.raises(OutsideMandate) as refused:
        signer.x402(mandate(), challenge)
    assert refused.value.offer is None
    assert refused.value.differences[0].startswith("the payment challenge could not be read")


def test_a_mandate_for_the_proxy_signs_no_x402(http, signer):
    proxy = _search_mandate(signed_by="wallet_proxy", scheme="x402/fetch", recipient=None)
    with pytest.raises(OutsideMandate, match="allows no exact"):
        signer.x402(proxy, _challenge(http))


async def test_mpp_within_the_mandate_is_paid(http, sandbox, signer):
    challenge = http.post(FX, json=FX_INPUTS).headers["www-authenticate"]
    terms = _mpp_mandate()
    credential = await signer.mpp(terms, challenge)
    assert (credential.amount_usdc, credential.network) == (Decimal("0.05"), TEMPO)
    paid = http.post(FX, json=FX_INPUTS, headers={"Authorization": credential.header})
    assert paid.status_code == 200, paid.text
    assert sandbox.state.balance == Decimal("24.95")


def _mpp_mandate(**changes: Any):
    fields = {
        "recipient": provider_pay_to("prov_quantfeed"),
        "network": TEMPO,
        "asset": USDC_ASSETS[TEMPO],
        "chain": "tempo",
        "scheme": "evm/charge",
        "max_usdc": Decimal("0.05"),
        **changes,
    }
    return mandate(**fields)


@pytest.mark.parametrize(
    ("changes", "words"),
    [
        ({"max_usdc": Decimal("0.04")}, "the amount rose from at most 0.04 to 0.05 USDC"),
        ({"recipient": EVIL}, "the recipient changed from 0xdEaD…Ef01 to"),
        (
            {"network": "eip155:8453", "asset": BASE_USDC, "chain": "base"},
            "the network changed from base (eip155:8453) to tempo (eip155:4217)",
        ),
    ],
)
async def test_mpp_outside_the_mandate_is_refused_in_words(http, sandbox, signer, changes, words):
    challenge = http.post(FX, json=FX_INPUTS).headers["www-authenticate"]
    with pytest.raises(OutsideMandate) as refused:
        await signer.mpp(_mpp_mandate(**changes), challenge)
    assert any(said.startswith(words) for said in refused.value.differences)
    assert sandbox.state.charges == []


def test_the_key_never_shows_and_is_known_by_its_forms(key: str, signer):
    assert key not in repr(signer)
    assert key.removeprefix("0x") not in repr(signer)
    search = OwnSecrets((), signer.key_forms)
    assert search.found(key.upper().replace("0X", "")) and search.found(key[: len(key) // 2 + 2])
    assert not search.found("0x" + "ab" * 32)
    assert key.removeprefix("0x") not in str(vars(signer))
    with pytest.raises(ValueError) as refused:
        Signer.with_key(key[:-4] + "zzzz", time.time)
    assert key[:-4].removeprefix("0x") not in str(refused.value)
    assert refused.value.__cause__ is None


# -- the wallet proxy ----------------------------------------------------------------------------

SEARCH_RECORD = catalog().get(WEBSEARCH_ID)


def _proxy_mandate(**changes: Any):
    assert SEARCH_RECORD is not None
    fields = {
        "kind": Kind.market_call,
        "endpoint_id": WEBSEARCH_ID,
        "dataset_id": None,
        "inputs_sha256": inputs_digest(SEARCH_INPUTS),
        "provider": SEARCH_RECORD.provider,
        "provider_name": SEARCH_RECORD.provider_name,
        "recipient": None,
        "scheme": "x402/fetch",
        "signed_by": "wallet_proxy",
        "max_usdc": Decimal("0.01"),
        **changes,
    }
    return mandate(**fields)


def test_the_proxy_is_told_to_pay_within_the_mandate(signer):
    approved = signer.proxy_body(_proxy_mandate(), SEARCH_RECORD, SEARCH_INPUTS, "req_test-1")
    assert approved.protocol == "x402"
    assert approved.body == {
        "endpointId": WEBSEARCH_ID,
        "inputs": SEARCH_INPUTS,
        "dryRun": False,
        "approved": True,
        "maxUsdc": "0.01",
        "chain": "base",
        "idempotencyKey": "req_test-1",
    }
    assert "approved" not in repr(approved)  # the body is not in logs by accident


@pytest.mark.parametrize(
    ("record_changes", "words"),
    [
        (
            {"provider": "prov_evil", "providerName": "Evil Search"},
            "the provider changed from Searchly (prov_searchly) to Evil Search (prov_evil)",
        ),
        ({"chains": ["solana"]}, "the chain changed from base to solana"),
        (
            {"pricing": {"model": "fixed", "amountUsdc": "0.05"}},
            "the price rose from at most 0.01 to at least 0.05 USDC",
        ),
    ],
)
def test_the_proxy_is_not_told_to_pay_what_moved_since_the_quote(signer, record_changes, words):
    assert SEARCH_RECORD is not None
    record = SEARCH_RECORD.model_validate(
        {**SEARCH_RECORD.model_dump(by_alias=True), **record_changes}
    )
    with pytest.raises(OutsideMandate) as refused:
        signer.proxy_body(_proxy_mandate(), record, SEARCH_INPUTS, "req_test-1")
    assert refused.value.differences == [words]
    assert refused.value.endpoint == record  # the request goes back showing it


def test_the_proxy_pays_only_the_approved_call(signer):
    with pytest.raises(OutsideMandate, match="other inputs"):
        signer.proxy_body(_proxy_mandate(), SEARCH_RECORD, {"query": "else"}, "k")
    with pytest.raises(OutsideMandate, match="is not the proxy's"):
        signer.proxy_body(_search_mandate(), SEARCH_RECORD, SEARCH_INPUTS, "k")
    expired = _proxy_mandate(at=time.time() - LIFETIME_S - 1)
    with pytest.raises(OutsideMandate, match="the mandate expired at"):
        signer.proxy_body(expired, SEARCH_RECORD, SEARCH_INPUTS, "k")
