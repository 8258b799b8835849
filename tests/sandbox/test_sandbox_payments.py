"""Payments in the sandbox over real HTTP: x402 v2 challenges and their signed answers (the x402
package's own client, hand-signed authorizations, the specification's published example), MPP
challenges, credentials and receipts with pympp, the paid market route, and funding checkout."""

from __future__ import annotations

import base64
import json
import os
import re
import time
from decimal import Decimal
from typing import Any

import httpx
import pytest
from eth_account import Account
from mpp import Challenge
from mpp import Receipt as MppReceipt
from mpp.methods.evm import client as evm_client
from mpp.runtime import CredentialParams
from x402 import x402Client
from x402.http.clients.httpx import x402HttpxClient

from svc_console.core.networks import USDC_ASSETS
from svc_console.market.signer import AccountSigner, exact_evm_scheme
from svc_console.market.wallet import WalletClient
from svc_console.sandbox.market_routes import provider_pay_to
from svc_console.sandbox.state import SandboxState
from svc_console.sandbox.x402 import PaymentInvalid, X402Gate

BASE_USDC = USDC_ASSETS["eip155:8453"]
ETHEREUM_USDC = USDC_ASSETS["eip155:1"]
TEMPO_USDC = USDC_ASSETS["eip155:4217"]
SEARCH = "/api/market/searchly/search"
SEARCH_INPUTS = {"query": "usdc settlement"}
FX = "/api/market/quantfeed/fx"
FX_INPUTS = {"symbol": "EURUSD"}
TYPES = {
    "TransferWithAuthorization": [
        {"name": "from", "type": "address"},
        {"name": "to", "type": "address"},
        {"name": "value", "type": "uint256"},
        {"name": "validAfter", "type": "uint256"},
        {"name": "validBefore", "type": "uint256"},
        {"name": "nonce", "type": "bytes32"},
    ]
}

# The x402 v2 specification's published example (specs/x402-specification-v2.md, sections 5.1
# and 5.2; the same authorization is the X-PAYMENT example of specs/schemes/exact/
# scheme_exact_evm.md). Its window closed in February 2025, so the verifier's clock is set inside.
PUBLISHED_REQUIRED = {
    "x402Version": 2,
    "error": "PAYMENT-SIGNATURE header is required",
    "resource": {
        "url": "https://api.example.com/premium-data",
        "description": "Access to premium market data",
        "mimeType": "application/json",
    },
    "accepts": [
        {
            "scheme": "exact",
            "network": "eip155:84532",
            "amount": "10000",
            "asset": "0x036CbD53842c5426634e7929541eC2318f3dCF7e",
            "payTo": "0x209693Bc6afc0C5328bA36FaF03C514EF312287C",
            "maxTimeoutSeconds": 60,
            "extra": {"name": "USDC", "version": "2"},
        }
    ],
    "extensions": {},
}
PUBLISHED_PAYLOAD = {
    "signature": "0x2d6a7588d6acca505cbf0d9a4a227e0c52c6c34008c8e8986a1283259764173608a2ce6496642e"
    "377d6da8dbbf5836e9bd15092f9ecab05ded3d6293af148b571c",
    "authorization": {
        "from": "0x857b06519E91e3A54538791bDbb0E22373e36b66",
        "to": "0x209693Bc6afc0C5328bA36FaF03C514EF312287C",
        "value": "10000",
        "validAfter": "1740672089",
        "validBefore": "1740672154",
        "nonce": "0xf3746613c2d920b5fdabc0856f2aeb2d4f88ee6037b8cc5d04a71a4462f13480",
    },
}
PUBLISHED_PAYER = "0x857b06519E91e3A54538791bDbb0E22373e36b66"
INSIDE_PUBLISHED_WINDOW = 1740672100


def _b64(data: Any) -> str:
    return base64.b64encode(json.dumps(data).encode()).decode()


def _unb64(value: str) -> Any:
    return json.loads(base64.b64decode(value))


def _error(response: httpx.Response) -> dict:
    body = response.json()
    assert body["sandbox"] is True
    return body["error"]


@pytest.fixture
def http(sandbox):
    with httpx.Client(base_url=sandbox.base_url, timeout=10) as client:
        yield client


@pytest.fixture
def payer():
    return Account.create()


def _challenge(http: httpx.Client, path: str = SEARCH, inputs: dict | None = None) -> dict:
    response = http.post(path, json=SEARCH_INPUTS if inputs is None else inputs)
    assert response.status_code == 402
    return _unb64(response.headers["payment-required"])


def _authorize(
    account: Any,
    requirement: dict,
    *,
    signer: Any = None,
    value: int | None = None,
    to: str | None = None,
    valid_after: int = 0,
    valid_before: int | None = None,
    nonce: str | None = None,
    version: int = 2,
) -> str:
    """A PAYMENT-SIGNATURE (or v1 X-PAYMENT) value signing an EIP-3009 authorization for
    `requirement`, with any term changed; `signer` signs in `account`'s name."""
    authorization = {
        "from": account.address,
        "to": to or requirement["payTo"],
        "value": str(int(requirement["amount"]) if value is None else value),
        "validAfter": str(valid_after),
        "validBefore": str(valid_before or int(time.time()) + 300),
        "nonce": nonce or "0x" + os.urandom(32).hex(),
    }
    domain = {
        "name": requirement["extra"]["name"],
        "version": requirement["extra"]["version"],
        "chainId": int(requirement["network"].split(":")[1]),
        "verifyingContract": requirement["asset"],
    }
    message = {
        **authorization,
        "value": int(authorization["value"]),
        "validAfter": int(authorization["validAfter"]),
        "validBefore": int(authorization["validBefore"]),
        "nonce": bytes.fromhex(authorization["nonce"][2:]),
    }
    signed = (signer or account).sign_typed_data(
        domain_data=domain, message_types=TYPES, message_data=message
    )
    payload = {"authorization": authorization, "signature": "0x" + bytes(signed.signature).hex()}
    if version == 1:
        names = {"eip155:8453": "base", "eip155:84532": "base-sepolia"}
        network = names[requirement["network"]]
        return _b64({"x402Version": 1, "scheme": "exact", "network": network, "payload": payload})
    accepted = {**requirement, "amount": authorization["value"], "payTo": authorization["to"]}
    return _b64({"x402Version": 2, "accepted": accepted, "payload": payload})


# --- x402: the challenge ---------------------------------------------------------------------


def test_x402_challenge_has_every_field(http: httpx.Client, sandbox):
    response = http.post(SEARCH, json=SEARCH_INPUTS)
    assert response.status_code == 402
    error = _error(response)
    assert error["code"] == "PAYMENT_REQUIRED"
    assert error["priceUsdc"] == "0.01"
    required = _unb64(response.headers["payment-required"])
    assert required == error["paymentRequired"]
    assert required["x402Version"] == 2
    assert required["error"] == "PAYMENT-SIGNATURE header is required"
    assert required["resource"] == {
        "url": f"{sandbox.base_url}{SEARCH}",
        "description": "Searchly: Web Search",
        "mimeType": "application/json",
    }
    assert required["accepts"] == [
        {
            "scheme": "exact",
            "network": "eip155:8453",
            "amount": "10000",
            "asset": BASE_USDC,
            "payTo": provider_pay_to("prov_searchly"),
            "maxTimeoutSeconds": 300,
            "extra": {"name": "USD Coin", "version": "2"},
        }
    ]
    assert re.fullmatch(r"0x[0-9a-fA-F]{40}", required["accepts"][0]["payTo"])
    assert response.headers["cache-control"] == "no-store"
    assert sandbox.state.charges == []


def test_a_valid_signature_settles_and_answers_payment_response(http: httpx.Client, sandbox, payer):
    requirement = _challenge(http)["accepts"][0]
    response = http.post(
        SEARCH, json=SEARCH_INPUTS, headers={"PAYMENT-SIGNATURE": _authorize(payer, requirement)}
    )
    assert response.status_code == 200, response.text
    assert response.headers["x-sandbox"] == "true"
    assert response.json()["provider"] == "Searchly"
    settled = _unb64(response.headers["payment-response"])
    assert settled["success"] is True
    assert settled["payer"] == payer.address
    assert settled["network"] == "eip155:8453"
    assert settled["amount"] == "10000"
    assert re.fullmatch(r"0x[0-9a-f]{64}", settled["transaction"])
    assert sandbox.state.balance == Decimal("24.99")
    [charge] = sandbox.state.charges
    assert (charge.endpoint_id, charge.protocol, charge.chain) == (
        "ep_websearch_basic",
        "x402",
        "base",
    )
    assert charge.price_usdc == Decimal("0.01")


def _refusals() -> list:
    now = int(time.time())
    return [
        pytest.param({"value": 5000}, "wrong_amount", id="wrong amount"),
        pytest.param({"value": 20000}, "wrong_amount", id="more than asked"),
        pytest.param({"to": "0x" + "12" * 20}, "wrong_recipient", id="wrong recipient"),
        pytest.param({"valid_before": now - 5}, "expired", id="expired"),
        pytest.param({"valid_after": now + 3600}, "not_yet_valid", id="not yet valid"),
        pytest.param({"signer": Account.create()}, "invalid_signature", id="bad signature"),
    ]


@pytest.mark.parametrize(("change", "reason"), _refusals())
def test_bad_payments_are_refused_with_their_reason_and_nothing_debited(
    http: httpx.Client, sandbox, payer, change: dict, reason: str
):
    requirement = _challenge(http)["accepts"][0]
    header = _authorize(payer, requirement, **change)
    response = http.post(SEARCH, json=SEARCH_INPUTS, headers={"PAYMENT-SIGNATURE": header})
    assert response.status_code == 402
    error = _error(response)
    assert (error["code"], error["reason"]) == ("PAYMENT_INVALID", reason)
    # The challenge comes back, so a client can sign again.
    assert _unb64(response.headers["payment-required"])["accepts"] == [requirement]
    assert sandbox.state.balance == Decimal(25)
    assert sandbox.state.charges == []
    assert sandbox.state.payment_nonces == set()


def test_a_payment_on_another_network_is_refused(http: httpx.Client, sandbox, payer):
    requirement = _challenge(http)["accepts"][0]
    on_ethereum = {**requirement, "network": "eip155:1", "asset": ETHEREUM_USDC}
    response = http.post(
        SEARCH, json=SEARCH_INPUTS, headers={"PAYMENT-SIGNATURE": _authorize(payer, on_ethereum)}
    )
    assert response.status_code == 402
    assert _error(response)["reason"] == "wrong_network"
    assert sandbox.state.balance == Decimal(25)


def test_a_payment_in_another_token_is_refused(http: httpx.Client, sandbox, payer):
    requirement = _challenge(http)["accepts"][0]
    other_token = {**requirement, "asset": "0x" + "34" * 20}
    response = http.post(
        SEARCH, json=SEARCH_INPUTS, headers={"PAYMENT-SIGNATURE": _authorize(payer, other_token)}
    )
    assert _error(response)["reason"] == "wrong_asset"
    assert sandbox.state.charges == []


def test_a_replayed_nonce_is_refused_and_charged_once(http: httpx.Client, sandbox, payer):
    requirement = _challenge(http)["accepts"][0]
    header = _authorize(payer, requirement)
    assert http.post(SEARCH, json=SEARCH_INPUTS, headers={"PAYMENT-SIGNATURE": header}).is_success
    again = http.post(SEARCH, json=SEARCH_INPUTS, headers={"PAYMENT-SIGNATURE": header})
    assert again.status_code == 402
    assert _error(again)["reason"] == "nonce_reused"
    # A new authorization reusing the nonce is refused too: nonces are single-use per payer.
    nonce = _unb64(header)["payload"]["authorization"]["nonce"]
    reused = _authorize(payer, requirement, nonce=nonce)
    third = http.post(SEARCH, json=SEARCH_INPUTS, headers={"PAYMENT-SIGNATURE": reused})
    assert _error(third)["reason"] == "nonce_reused"
    assert sandbox.state.balance == Decimal("24.99")
    assert len(sandbox.state.charges) == 1


@pytest.mark.parametrize(
    "header",
    ["not base64 at all!", _b64({"x402Version": 2}), _b64([1, 2]), _b64({"x402Version": 1})],
)
def test_malformed_payments_are_refused(http: httpx.Client, sandbox, header: str):
    response = http.post(SEARCH, json=SEARCH_INPUTS, headers={"PAYMENT-SIGNATURE": header})
    assert response.status_code == 402
    assert _error(response)["reason"] == "malformed"
    assert sandbox.state.charges == []


async def test_the_x402_package_client_pays_a_sandbox_challenge(sandbox, payer):
    client = x402Client()
    client.register("eip155:*", exact_evm_scheme(AccountSigner(payer)))
    async with x402HttpxClient(client, base_url=sandbox.base_url, timeout=10) as http:
        response = await http.post(SEARCH, json=SEARCH_INPUTS)
    assert response.status_code == 200, response.text
    settled = _unb64(response.headers["payment-response"])
    assert settled["payer"] == payer.address
    assert settled["success"] is True
    assert sandbox.state.balance == Decimal("24.99")


def test_a_v1_x_payment_header_is_verified_the_same_way(http: httpx.Client, sandbox, payer):
    requirement = _challenge(http)["accepts"][0]
    header = _authorize(payer, requirement, version=1)
    response = http.post(SEARCH, json=SEARCH_INPUTS, headers={"X-PAYMENT": header})
    assert response.status_code == 200, response.text
    assert _unb64(response.headers["x-payment-response"])["payer"] == payer.address
    bad = _authorize(payer, requirement, version=1, value=1)
    refused = http.post(SEARCH, json=SEARCH_INPUTS, headers={"X-PAYMENT": bad})
    assert _error(refused)["reason"] == "wrong_amount"
    assert sandbox.state.balance == Decimal("24.99")


# --- x402: the verifier and the legacy inputs ------------------------------------------------


def _offline(tmp_path, **kwargs: Any) -> SandboxState:
    return SandboxState(outbox=tmp_path / "outbox", **kwargs)


def test_the_published_example_authorization_verifies(tmp_path):
    state = _offline(tmp_path)
    gate = X402Gate(state, clock=lambda: INSIDE_PUBLISHED_WINDOW)
    payment = {
        "x402Version": 2,
        "resource": PUBLISHED_REQUIRED["resource"],
        "accepted": PUBLISHED_REQUIRED["accepts"][0],
        "payload": PUBLISHED_PAYLOAD,
        "extensions": {},
    }
    settlement = gate.settle(PUBLISHED_REQUIRED, payment_signature=_b64(payment))
    assert settlement.payer == PUBLISHED_PAYER
    assert settlement.amount_usdc == Decimal("0.01")
    assert settlement.network == "eip155:84532"
    assert state.balance == Decimal("24.99")


def test_the_published_v1_x_payment_example_verifies(tmp_path):
    state = _offline(tmp_path)
    gate = X402Gate(state, clock=lambda: INSIDE_PUBLISHED_WINDOW)
    x_payment = {
        "x402Version": 1,
        "scheme": "exact",
        "network": "base-sepolia",
        "payload": PUBLISHED_PAYLOAD,
    }
    settlement = gate.settle(PUBLISHED_REQUIRED, x_payment=_b64(x_payment))
    assert (settlement.payer, settlement.x402_version) == (PUBLISHED_PAYER, 1)


def test_the_published_example_is_refused_outside_its_window_or_tampered(tmp_path):
    payment = {"x402Version": 2, "accepted": PUBLISHED_REQUIRED["accepts"][0]}
    late = X402Gate(_offline(tmp_path), clock=lambda: 1740672154)
    with pytest.raises(PaymentInvalid) as refused:
        late.settle(
            PUBLISHED_REQUIRED, payment_signature=_b64({**payment, "payload": PUBLISHED_PAYLOAD})
        )
    assert refused.value.reason == "expired"
    tampered = json.loads(json.dumps(PUBLISHED_PAYLOAD))
    tampered["authorization"]["validBefore"] = "1740672155"
    gate = X402Gate(_offline(tmp_path), clock=lambda: INSIDE_PUBLISHED_WINDOW)
    with pytest.raises(PaymentInvalid) as refused:
        gate.settle(PUBLISHED_REQUIRED, payment_signature=_b64({**payment, "payload": tampered}))
    assert refused.value.reason == "invalid_signature"


def test_a_payment_proof_re_presents_a_settlement_without_charging_again(tmp_path, payer):
    state = _offline(tmp_path)
    gate = X402Gate(state)
    required = gate.required("http://sandbox/api/datasets/ds_1/access", Decimal("2.5"), "a dataset")
    header = _authorize(payer, required["accepts"][0])
    paid = gate.settle(required, payment_signature=header)
    assert state.balance == Decimal("22.5")

    again = gate.settle(required, payment_proof=paid.response_header())
    assert again.proof is True
    assert (again.transaction, again.payer) == (paid.transaction, payer.address)
    assert gate.settle(required, payment_proof=paid.transaction).proof is True
    assert state.balance == Decimal("22.5")
    assert len(state.charges) == 1

    other = gate.required("http://sandbox/api/datasets/ds_2/access", Decimal("2.5"), "another")
    with pytest.raises(PaymentInvalid) as refused:
        gate.settle(other, payment_proof=paid.response_header())
    assert refused.value.reason == "wrong_resource"
    with pytest.raises(PaymentInvalid) as refused:
        gate.settle(required, payment_proof="0x" + "ab" * 32)
    assert refused.value.reason == "unknown_proof"


def test_insufficient_funds_keeps_the_nonce_for_a_retry(tmp_path, payer):
    state = _offline(tmp_path, balance=Decimal(1))
    gate = X402Gate(state)
    required = gate.required("http://sandbox/api/jobs", Decimal(10), "a breed job")
    header = _authorize(payer, required["accepts"][0])
    with pytest.raises(PaymentInvalid) as refused:
        gate.settle(required, payment_signature=header)
    assert refused.value.reason == "insufficient_funds"
    assert (refused.value.balance_usdc, refused.value.required_usdc) == (Decimal(1), Decimal(10))
    state.credit(Decimal(9))
    assert gate.settle(required, payment_signature=header).amount_usdc == Decimal(10)
    assert state.balance == 0


# --- MPP -------------------------------------------------------------------------------------


def _mpp_method(account: Any) -> Any:
    return evm_client.charge(
        currency=TEMPO_USDC,
        account=account,
        chain_id=4217,
        decimals=6,
        authorization={"name": "USD Coin", "version": "2"},
    )


async def _credential(account: Any, www_authenticate: str) -> str:
    challenge = Challenge.from_www_authenticate(www_authenticate)
    return await _mpp_method(account).create_credential(CredentialParams(challenge=challenge))


async def test_mpp_challenge_credential_and_receipt(http: httpx.Client, sandbox, payer):
    response = http.post(FX, json=FX_INPUTS)
    assert response.status_code == 402
    error = _error(response)
    assert (error["code"], error["protocols"]) == ("PAYMENT_REQUIRED", ["mpp"])
    assert "payment-required" not in response.headers
    challenge = Challenge.from_www_authenticate(response.headers["www-authenticate"])
    assert (challenge.method, challenge.intent, challenge.realm) == (
        "evm",
        "charge",
        "svc-console-sandbox",
    )
    assert challenge.request["amount"] == "50000"
    assert challenge.request["currency"] == TEMPO_USDC
    assert challenge.request["recipient"] == provider_pay_to("prov_quantfeed")
    assert challenge.request["methodDetails"]["chainId"] == 4217
    assert challenge.expires

    credential = await _credential(payer, response.headers["www-authenticate"])
    assert credential.startswith("Payment ")
    paid = http.post(FX, json=FX_INPUTS, headers={"Authorization": credential})
    assert paid.status_code == 200, paid.text
    assert paid.json()["sandbox"] is True
    receipt = MppReceipt.from_payment_receipt(paid.headers["payment-receipt"])
    assert receipt.status == "success"
    assert re.fullmatch(r"0x[0-9a-f]{64}", receipt.reference)
    assert sandbox.state.balance == Decimal("24.95")
    [charge] = sandbox.state.charges
    assert (charge.endpoint_id, charge.protocol, charge.chain) == ("ep_fx_rates", "mpp", "tempo")

    replay = http.post(FX, json=FX_INPUTS, headers={"Authorization": credential})
    assert replay.status_code == 403
    assert _error(replay)["code"] == "PAYMENT_INVALID"
    assert sandbox.state.balance == Decimal("24.95")


async def test_an_mpp_credential_for_another_route_or_amount_is_refused(
    http: httpx.Client, sandbox, payer
):
    first = http.post(FX, json=FX_INPUTS)
    credential = await _credential(payer, first.headers["www-authenticate"])
    # Another provider's challenge cannot be paid with it (bound to its route and amount).
    elsewhere = "/api/market/neurongrid/complete"
    other = http.post(elsewhere, json={"prompt": "hi"}, headers={"Authorization": credential})
    assert other.status_code == 402
    assert _error(other)["code"] == "PAYMENT_INVALID"
    assert "www-authenticate" in other.headers
    assert sandbox.state.charges == []


async def test_mpp_wallet_unfunded_then_funded(http: httpx.Client, sandbox, payer):
    sandbox.state.set_balance(0)
    credential = await _credential(payer, http.post(FX, json=FX_INPUTS).headers["www-authenticate"])
    short = http.post(FX, json=FX_INPUTS, headers={"Authorization": credential})
    assert short.status_code == 402
    error = _error(short)
    assert error["code"] == "WALLET_UNFUNDED"
    assert error["requiredUsdc"] == "0.05"
    assert "www-authenticate" in short.headers
    sandbox.state.credit(Decimal(1))
    # The same credential pays once the wallet is funded.
    assert http.post(FX, json=FX_INPUTS, headers={"Authorization": credential}).status_code == 200
    assert sandbox.state.balance == Decimal("0.95")


# --- the market route ------------------------------------------------------------------------


def test_a_provider_on_both_protocols_offers_both(http: httpx.Client, sandbox):
    response = http.post("/api/market/neurongrid/complete", json={"prompt": "hello"})
    assert response.status_code == 402
    assert _error(response)["protocols"] == ["x402", "mpp"]
    required = _unb64(response.headers["payment-required"])
    # x402 settles on its other chains (EVM first); MPP on Tempo.
    assert [a["network"] for a in required["accepts"]] == [
        "eip155:1",
        "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp",
    ]
    assert (
        Challenge.from_www_authenticate(response.headers["www-authenticate"]).request[
            "methodDetails"
        ]["chainId"]
        == 4217
    )


def test_market_route_refuses_unknown_unlisted_and_invalid_calls(http: httpx.Client, sandbox):
    unknown = http.post("/api/market/searchly/nothing-here", json={})
    assert (unknown.status_code, _error(unknown)["code"]) == (404, "NOT_FOUND")
    assert http.post("/api/market/nobody/search", json={}).status_code == 404
    invalid = http.post(SEARCH, json={"query": ""})
    assert (invalid.status_code, _error(invalid)["code"]) == (422, "INVALID_INPUTS")
    assert http.post(SEARCH, content=b"[1]").status_code == 400
    sandbox.state.remove_from_registry("ep_websearch_basic")
    gone = http.post(SEARCH, json=SEARCH_INPUTS)
    assert (gone.status_code, _error(gone)["code"]) == (403, "NOT_IN_REGISTRY")
    # The endpoint id works as the path too.
    sandbox.state.add_to_registry("ep_websearch_basic")
    assert (
        http.post("/api/market/prov_searchly/ep_websearch_basic", json=SEARCH_INPUTS).status_code
        == 402
    )
    assert sandbox.state.charges == []


# --- funding ---------------------------------------------------------------------------------


def _fund_through_the_page(http: httpx.Client, checkout_url: str, amount: str) -> httpx.Response:
    page = http.get(checkout_url)
    assert page.status_code == 200
    assert f'name="amount" value="{amount}"' in page.text
    token = re.search(r'name="token" value="([^"]+)"', page.text)
    assert token is not None
    return http.post(checkout_url, data={"token": token.group(1), "amount": amount})


async def test_funding_checkout_credits_and_stops_wallet_unfunded(
    http: httpx.Client, sandbox, payer
):
    state = sandbox.state
    state.set_balance(0)
    requirement = _challenge(http)["accepts"][0]
    header = _authorize(payer, requirement)
    short = http.post(SEARCH, json=SEARCH_INPUTS, headers={"PAYMENT-SIGNATURE": header})
    assert short.status_code == 402
    error = _error(short)
    assert error["code"] == "WALLET_UNFUNDED"
    assert (error["balanceUsdc"], error["requiredUsdc"]) == ("0.00", "0.01")
    assert error["fundingUrl"] == f"{sandbox.base_url}/fund/{state.username}"
    assert "payment-required" in short.headers

    wallet = WalletClient(sandbox.base_url, state.username, state.api_token)
    try:
        checkout = await wallet.funding_checkout(Decimal(5))
    finally:
        await wallet.aclose()
    assert checkout.checkout_url == f"{sandbox.base_url}/fund/{state.username}?amount=5.00"
    assert (checkout.amount_usdc, checkout.balance_usdc) == (Decimal(5), Decimal(0))
    credited = _fund_through_the_page(http, checkout.checkout_url, "5.00")
    assert credited.status_code == 200
    assert state.balance == Decimal(5)

    paid = http.post(SEARCH, json=SEARCH_INPUTS, headers={"PAYMENT-SIGNATURE": header})
    assert paid.status_code == 200, paid.text
    assert state.balance == Decimal("4.99")


def test_funding_checkout_needs_a_credential_and_a_sound_amount(http: httpx.Client, sandbox):
    state = sandbox.state
    assert http.post("/api/funding/checkout", json={}).status_code == 401
    key = {"Authorization": f"Bearer {state.api_key}"}
    default = http.post("/api/funding/checkout", headers=key)
    assert default.status_code == 201
    assert default.json()["amountUsdc"] == "10.00"
    assert default.json()["sandbox"] is True
    for amount in ("0", "-1", "abc", "20000"):
        bad = http.post("/api/funding/checkout", headers=key, json={"amountUsdc": amount})
        assert (bad.status_code, _error(bad)["code"]) == (400, "INVALID_REQUEST")
    stray = http.post("/api/funding/checkout", headers=key, json={"amount": "5"})
    assert stray.status_code == 400
    nobody = http.post("/api/funding/checkout", headers=key, json={"username": "nobody"})
    assert nobody.status_code == 404
    assert state.balance == Decimal(25)
