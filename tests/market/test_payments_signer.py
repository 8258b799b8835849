"""The console's signer: it signs x402 and MPP challenges only within the approval, and what it
signs is paid by the sandbox over real HTTP."""

from __future__ import annotations

import base64
import json
from decimal import Decimal

import httpx
import pytest
from eth_account import Account

from svc_console.core.models import Kind
from svc_console.core.networks import USDC_ASSETS
from svc_console.market.payments import (
    Approval,
    ChallengeRejected,
    PaymentSigner,
    check_challenge,
    receipt_from_mpp,
    receipt_from_payment_response,
)
from svc_console.sandbox.market_routes import provider_pay_to
from svc_console.sandbox.state import SandboxState
from svc_console.sandbox.x402 import X402Gate

SEARCH = "/api/market/searchly/search"
SEARCH_INPUTS = {"query": "usdc settlement"}
FX = "/api/market/quantfeed/fx"
FX_INPUTS = {"symbol": "EURUSD"}


@pytest.fixture
def http(sandbox):
    with httpx.Client(base_url=sandbox.base_url, timeout=10) as client:
        yield client


@pytest.fixture
def key() -> str:
    return "0x" + Account.create().key.hex().removeprefix("0x")


@pytest.fixture
def signer(key: str) -> PaymentSigner:
    return PaymentSigner(key)


def _challenge(http: httpx.Client) -> str:
    response = http.post(SEARCH, json=SEARCH_INPUTS)
    assert response.status_code == 402
    return response.headers["payment-required"]


def _edited(header: str, **changes: str) -> str:
    data = json.loads(base64.b64decode(header))
    data["accepts"][0].update(changes)
    return base64.b64encode(json.dumps(data).encode()).decode()


def test_signs_within_the_ceiling_and_the_sandbox_pays_it(http, sandbox, signer):
    approval = Approval(Decimal("0.02"), "base", pay_to=provider_pay_to("prov_searchly"))
    signed = signer.sign(_challenge(http), approval)
    assert (signed.amount_usdc, signed.network) == (Decimal("0.01"), "eip155:8453")
    assert signed.payer == signer.address
    paid = http.post(SEARCH, json=SEARCH_INPUTS, headers={"PAYMENT-SIGNATURE": signed.header})
    assert paid.status_code == 200, paid.text
    receipt = receipt_from_payment_response(paid.headers["payment-response"], "req_1-1")
    assert (receipt.protocol, receipt.network) == ("x402", "eip155:8453")
    assert receipt.idempotency_key == "req_1-1"
    assert receipt.transaction.startswith("0x")
    assert sandbox.state.balance == Decimal("24.99")


@pytest.mark.parametrize(
    ("approval", "reason"),
    [
        pytest.param(Approval(Decimal("0.005"), "base"), "above_ceiling", id="above ceiling"),
        pytest.param(Approval(Decimal("1"), "ethereum"), "wrong_network", id="other chain"),
        pytest.param(Approval(Decimal("1"), "solana"), "wrong_network", id="not EVM"),
        pytest.param(
            Approval(Decimal("1"), "base", pay_to="0x" + "11" * 20),
            "wrong_recipient",
            id="other recipient",
        ),
    ],
)
def test_refuses_what_was_not_approved(http, sandbox, signer, approval: Approval, reason: str):
    with pytest.raises(ChallengeRejected) as refused:
        signer.sign(_challenge(http), approval)
    assert refused.value.reason == reason
    # The challenge's own figures, for the operator to approve again.
    assert refused.value.amount_usdc == Decimal("0.01")
    assert refused.value.network == "eip155:8453"
    assert refused.value.pay_to == provider_pay_to("prov_searchly")
    assert sandbox.state.charges == []


def test_refuses_another_asset(http, signer):
    challenge = _edited(_challenge(http), asset=USDC_ASSETS["eip155:1"])
    with pytest.raises(ChallengeRejected) as refused:
        signer.sign(challenge, Approval(Decimal("1"), "base"))
    assert refused.value.reason == "wrong_asset"
    assert refused.value.asset == USDC_ASSETS["eip155:1"]


def test_a_repriced_challenge_is_refused_with_its_new_price(http, sandbox, signer):
    sandbox.state.faults.add("reprice", routes=["market"], factor=2, count=1)
    with pytest.raises(ChallengeRejected) as refused:
        signer.sign(_challenge(http), Approval(Decimal("0.01"), "base"))
    assert (refused.value.reason, refused.value.amount_usdc) == ("above_ceiling", Decimal("0.02"))


def test_several_options_pick_the_approved_one(http, signer):
    response = http.post("/api/market/neurongrid/complete", json={"prompt": "hi"})
    header = response.headers["payment-required"]
    networks = [a["network"] for a in json.loads(base64.b64decode(header))["accepts"]]
    assert "eip155:1" in networks and len(networks) > 1
    requirement = check_challenge(header, Approval(Decimal("0.01"), "ethereum"))
    assert requirement.network == "eip155:1"
    with pytest.raises(ChallengeRejected) as refused:
        check_challenge(header, Approval(Decimal("0.001"), "ethereum"))
    assert refused.value.reason == "above_ceiling"


def test_fixed_prices_are_paid_exactly(tmp_path, signer):
    state = SandboxState(outbox=tmp_path / "outbox")
    gate = X402Gate(state)
    breed = Approval.fixed_price(Kind.breed_agent)
    merge = Approval.fixed_price(Kind.merge_models)
    assert (breed.ceiling_usdc, merge.ceiling_usdc, breed.exact) == (10, 15, True)
    for price, approval in ((Decimal(10), breed), (Decimal(15), merge)):
        required = gate.required("http://sandbox/api/mcp#job", price, "a compute job")
        signed = signer.sign(required, approval)
        assert gate.settle(required, payment_signature=signed.header).amount_usdc == price
    for price in (Decimal("9.99"), Decimal("10.01")):
        required = gate.required("http://sandbox/api/mcp#job", price, "a compute job")
        with pytest.raises(ChallengeRejected) as refused:
            signer.sign(required, breed)
        assert (refused.value.reason, refused.value.amount_usdc) == ("not_fixed_price", price)
    assert state.balance == 0


def test_malformed_and_v1_challenges_are_not_signed(signer):
    for challenge in ("%%%", base64.b64encode(b'{"x402Version": 1}').decode(), {"accepts": []}):
        with pytest.raises(ChallengeRejected) as refused:
            signer.sign(challenge, Approval(Decimal(1), "base"))
        assert refused.value.reason in {"malformed", "unsupported"}


async def test_mpp_credential_within_the_approval_is_paid(http, sandbox, signer):
    challenge = http.post(FX, json=FX_INPUTS).headers["www-authenticate"]
    credential = await signer.mpp_credential(challenge, Approval(Decimal("0.05"), "tempo"))
    assert (credential.amount_usdc, credential.network) == (Decimal("0.05"), "eip155:4217")
    paid = http.post(FX, json=FX_INPUTS, headers={"Authorization": credential.header})
    assert paid.status_code == 200, paid.text
    receipt = receipt_from_mpp(paid.headers["payment-receipt"], "req_2-1", "tempo")
    assert (receipt.protocol, receipt.network) == ("mpp", "eip155:4217")
    assert sandbox.state.balance == Decimal("24.95")


@pytest.mark.parametrize(
    ("approval", "reason"),
    [
        (Approval(Decimal("0.04"), "tempo"), "above_ceiling"),
        (Approval(Decimal("1"), "base"), "wrong_network"),
        (Approval(Decimal("1"), "tempo", pay_to="0x" + "22" * 20), "wrong_recipient"),
    ],
)
async def test_mpp_challenges_outside_the_approval_are_refused(
    http, sandbox, signer, approval: Approval, reason: str
):
    challenge = http.post(FX, json=FX_INPUTS).headers["www-authenticate"]
    with pytest.raises(ChallengeRejected) as refused:
        await signer.mpp_credential(challenge, approval)
    assert refused.value.reason == reason
    assert refused.value.amount_usdc == Decimal("0.05")


def test_the_key_never_shows(key: str, signer):
    assert key not in repr(signer)
    assert key.removeprefix("0x") not in repr(signer)
    with pytest.raises(ValueError) as refused:
        PaymentSigner(key[:-4] + "zzzz")
    assert key[:-4].removeprefix("0x") not in str(refused.value)
    assert refused.value.__cause__ is None


def test_receipts_refuse_garbage():
    with pytest.raises(ChallengeRejected):
        receipt_from_payment_response("not base64!", "k")
    failed = base64.b64encode(
        json.dumps({"success": False, "transaction": "", "network": "eip155:8453"}).encode()
    ).decode()
    with pytest.raises(ChallengeRejected):
        receipt_from_payment_response(failed, "k")
    with pytest.raises(ChallengeRejected):
        receipt_from_mpp("garbage", "k", "tempo")
