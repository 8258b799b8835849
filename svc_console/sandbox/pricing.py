"""What an endpoint of the sandbox costs: the dry run's quote and the payment challenge's price.

Shared by the wallet proxy (`sandbox.wallet_proxy`) and the direct market calls
(`sandbox.market_routes`), so both ask the same price for the same call.
"""

from __future__ import annotations

from decimal import ROUND_CEILING, ROUND_HALF_UP, Decimal
from typing import Any

from svc_console.core.canonical_json import canonical_json
from svc_console.core.models import EndpointRecord
from svc_console.sandbox import upstream

# Dynamic prices resolve to this granularity: the challenge reads like a real one (0.0437 USDC).
PRICE_STEP = Decimal("0.0001")
_MICRO = Decimal("0.000001")


def estimate(record: EndpointRecord) -> Decimal:
    """What a dry run quotes: the fixed price, or the middle of a dynamic range."""
    pricing = record.pricing
    if pricing.model == "fixed":
        return pricing.amount_usdc  # type: ignore[return-value]
    middle = (pricing.min_usdc + pricing.max_usdc) / 2  # type: ignore[operator]
    return middle.quantize(_MICRO, rounding=ROUND_HALF_UP)


def runtime_price(record: EndpointRecord, inputs: dict[str, Any], factor: Decimal) -> Decimal:
    """What the payment challenge asks for: the fixed price, or a point of the dynamic range picked
    by a hash of the inputs (the same call always costs the same), times the reprice factor."""
    pricing = record.pricing
    if pricing.model == "fixed":
        base: Decimal = pricing.amount_usdc  # type: ignore[assignment]
    else:
        low, high = pricing.min_usdc, pricing.max_usdc
        steps = int((high - low) / PRICE_STEP)  # type: ignore[operator]
        seed = upstream.digest("price", record.id, canonical_json(inputs))
        base = low + PRICE_STEP * (int.from_bytes(seed[:8], "big") % (steps + 1))  # type: ignore[operator]
    return times(base, factor)


def times(amount: Decimal, factor: Decimal) -> Decimal:
    """`amount` times `factor`, to the micro-USDC, rounded up: a repriced or overbilled call is
    never made cheaper by the rounding."""
    return (amount * factor).quantize(_MICRO, rounding=ROUND_CEILING)
