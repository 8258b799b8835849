"""EIP-3009 `TransferWithAuthorization`, as both payment protocols of the sandbox carry it (x402's
`exact` scheme in `sandbox.x402`, MPP's `evm` charge in `sandbox.mpp`): reading one, recovering
who signed it (offline, eth-account), the key that makes its nonce single-use, and the made-up
transaction hash a settlement gets. No chain is ever touched.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from svc_console.core.networks import evm_chain_id

_ADDRESS = re.compile(r"^0x[0-9a-fA-F]{40}$")
_NONCE = re.compile(r"^0x[0-9a-fA-F]{64}$")
_SIGNATURE = re.compile(r"^0x[0-9a-fA-F]{130,}$")
_UINT256 = 2**256 - 1

# The EIP-712 type every USDC `transferWithAuthorization` is signed with.
AUTHORIZATION_TYPES = {
    "TransferWithAuthorization": [
        {"name": "from", "type": "address"},
        {"name": "to", "type": "address"},
        {"name": "value", "type": "uint256"},
        {"name": "validAfter", "type": "uint256"},
        {"name": "validBefore", "type": "uint256"},
        {"name": "nonce", "type": "bytes32"},
    ]
}


class MalformedAuthorization(ValueError):
    """The payload holds no well-formed authorization; the message names the field at fault."""


def _uint(value: Any, name: str) -> int:
    """An EIP-3009 number: decimal, or hex with a 0x prefix (the exact scheme allows both)."""
    if isinstance(value, str):
        text = value.strip()
        try:
            number = int(text, 16) if text[:2].lower() == "0x" else int(text, 10)
        except ValueError:
            number = -1
        if 0 <= number <= _UINT256:
            return number
    raise MalformedAuthorization(f"authorization.{name} must be an unsigned integer string")


@dataclass(frozen=True)
class Authorization:
    """An EIP-3009 `TransferWithAuthorization`, its fields checked (not yet its signature)."""

    payer: str
    to: str
    value: int
    valid_after: int
    valid_before: int
    nonce: str
    signature: str


def parse_authorization(payload: Mapping[str, Any]) -> Authorization:
    """The authorization and signature of an x402 `exact` payload; raises MalformedAuthorization."""
    authorization = payload.get("authorization")
    signature = payload.get("signature")
    if not isinstance(authorization, Mapping):
        raise MalformedAuthorization(
            "the payload holds no EIP-3009 authorization (only exact on EVM settles)"
        )
    if not isinstance(signature, str) or not _SIGNATURE.match(signature):
        raise MalformedAuthorization("payload.signature must be a 0x-prefixed signature")
    payer, to, nonce = (authorization.get(key) for key in ("from", "to", "nonce"))
    for name, value in (("from", payer), ("to", to)):
        if not isinstance(value, str) or not _ADDRESS.match(value):
            raise MalformedAuthorization(f"authorization.{name} must be an address")
    if not isinstance(nonce, str) or not _NONCE.match(nonce):
        raise MalformedAuthorization("authorization.nonce must be 32 bytes of hex")
    return Authorization(
        payer=payer,  # type: ignore[arg-type]
        to=to,  # type: ignore[arg-type]
        value=_uint(authorization.get("value"), "value"),
        valid_after=_uint(authorization.get("validAfter"), "validAfter"),
        valid_before=_uint(authorization.get("validBefore"), "validBefore"),
        nonce=nonce.lower(),
        signature=signature,
    )


def recover_payer(
    authorization: Mapping[str, Any],
    signature: str,
    *,
    network: str,
    asset: str,
    name: str,
    version: str,
) -> str:
    """The address that signed an EIP-3009 authorization (eth-account), for the token `asset` on
    `network` with EIP-712 domain `name`/`version`."""
    # Imported here: eth-account takes the better part of a second to import, and a sandbox that
    # never sees a payment should not pay for it.
    from eth_account import Account
    from eth_account.messages import encode_typed_data

    chain_id = evm_chain_id(network)
    if chain_id is None:
        raise ValueError(f"{network} is not an EVM network")
    domain = {"name": name, "version": version, "chainId": chain_id, "verifyingContract": asset}
    message = {
        "from": authorization["from"],
        "to": authorization["to"],
        "value": _uint(authorization["value"], "value"),
        "validAfter": _uint(authorization["validAfter"], "validAfter"),
        "validBefore": _uint(authorization["validBefore"], "validBefore"),
        "nonce": bytes.fromhex(authorization["nonce"][2:]),
    }
    signable = encode_typed_data(
        domain_data=domain, message_types=AUTHORIZATION_TYPES, message_data=message
    )
    return Account.recover_message(signable, signature=signature)


def nonce_key(network: str, asset: str, payer: str, nonce: str) -> str:
    """EIP-3009 nonces are single-use per token contract and authorizer."""
    return ":".join((network, asset.lower(), payer.lower(), nonce.lower()))


def fake_transaction(*parts: str) -> str:
    from hashlib import sha256

    return "0x" + sha256("|".join(("svc-console sandbox settlement", *parts)).encode()).hexdigest()
