"""Signing x402 challenges in tests the way a wallet does: the x402 package's own EVM client over
an eth-account key (real EIP-712 signatures, verified by the sandbox)."""

from __future__ import annotations

from typing import Any

from eth_account import Account
from x402.client import x402ClientSync
from x402.http.utils import encode_payment_signature_header
from x402.schemas import PaymentRequired

from svc_console.market.signer import AccountSigner, exact_evm_scheme


def sign_x402(required: dict[str, Any], account: Any | None = None) -> str:
    """The base64 `PAYMENT-SIGNATURE` answering `required` (a PaymentRequired object)."""
    account = account or Account.create()
    client = x402ClientSync().set_spend_controls(False)
    for network in {entry["network"] for entry in required["accepts"]}:
        client.register(network, exact_evm_scheme(AccountSigner(account)))
    payload = client.create_payment_payload(PaymentRequired.model_validate(required))
    return encode_payment_signature_header(payload)
