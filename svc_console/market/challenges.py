"""x402 v2 payment challenges read as plain JSON: what each option asks for, as an `Offer` in a
mandate's terms (core/mandate_check.py). Reading needs no signing library; signing is the signer's
alone (market/signer.py).

A challenge is the base64 JSON of a `PAYMENT-REQUIRED` header, or the object itself (as the MCP
tools return it): `x402Version` 2 and `accepts`, each option with its `scheme`, CAIP-2 `network`,
`asset`, `amount` in atomic units, `payTo`, `maxTimeoutSeconds` and `extra` (the token's EIP-712
name and version, and the transfer method when not EIP-3009).
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from svc_console.core.mandate import LIFETIME_S
from svc_console.core.mandate_check import EIP3009, Offer
from svc_console.core.money import from_atomic
from svc_console.core.networks import USDC_ASSETS, USDC_DOMAINS, evm_chain_id, same_address
from svc_console.market.errors import OutsideMandate

# What the x402 package's client signs when a challenge gives no timeout (its own default).
DEFAULT_TIMEOUT_S = 3600


def unreadable(why: str) -> OutsideMandate:
    return OutsideMandate([f"the payment challenge could not be read ({why})"])


def decode(challenge: str | Mapping[str, Any]) -> dict[str, Any]:
    """The challenge as an object, x402 v2 only; raises OutsideMandate (unreadable)."""
    data: Any = challenge
    if isinstance(challenge, str):
        text = challenge.strip()
        try:
            data = json.loads(base64.b64decode(text + "=" * (-len(text) % 4)).decode("utf-8"))
        except (binascii.Error, ValueError, UnicodeDecodeError):
            raise unreadable("not base64 JSON") from None
    if not isinstance(data, Mapping) or data.get("x402Version") != 2:
        raise unreadable("only x402 v2 challenges are signed")
    accepts = data.get("accepts")
    if not isinstance(accepts, list) or not any(isinstance(a, Mapping) for a in accepts):
        raise unreadable("it offers no way to pay")
    return dict(data)


def options(required: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [dict(option) for option in required.get("accepts", []) if isinstance(option, Mapping)]


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def amount_of(value: Any) -> Decimal | None:
    """A challenge's amount (atomic units, as text) in USDC; None when it is not one."""
    return from_atomic(int(value)) if isinstance(value, str) and value.isdigit() else None


def offer_of(option: Mapping[str, Any], now: float) -> Offer:
    """What one option asks for. Its signature would stay valid `maxTimeoutSeconds` from now
    (the x402 client's own rule)."""
    amount = option.get("amount")
    extra = option.get("extra") if isinstance(option.get("extra"), Mapping) else {}
    name, version = extra.get("name"), extra.get("version")
    timeout = option.get("maxTimeoutSeconds")
    if isinstance(timeout, bool) or not isinstance(timeout, int) or timeout < 0:
        timeout = None
    return Offer(
        amount_usdc=amount_of(amount),
        recipient=_text(option.get("payTo")) or "",
        asset=_text(option.get("asset")) or "",
        network=_text(option.get("network")) or "",
        scheme=_text(option.get("scheme")) or "",
        valid_until=now + (timeout or DEFAULT_TIMEOUT_S),
        domain=(name, version) if isinstance(name, str) and isinstance(version, str) else None,
        transfer=str(extra.get("assetTransferMethod") or EIP3009),
    )


def signable(offer: Offer, scheme: str, now: float) -> bool:
    """Whether the console could sign this offer under any mandate: its `scheme` (x402's `exact`,
    MPP's `evm/charge`) by EIP-3009, USDC on an EVM network under the token's own EIP-712
    domain, an amount, a recipient, and a validity no mandate outlasts. What fails here is never
    put to the operator again: no approval could make it signable."""
    network = offer.network or ""
    domain = USDC_DOMAINS.get(network)
    return (
        offer.scheme == scheme
        and offer.transfer == EIP3009
        and evm_chain_id(network) is not None
        and same_address(offer.asset, USDC_ASSETS.get(network))
        and offer.domain in (None, (domain.name, domain.version) if domain else None)
        and offer.amount_usdc is not None
        and bool(offer.recipient)
        and (offer.valid_until is None or offer.valid_until - now <= LIFETIME_S)
    )
