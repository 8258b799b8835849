"""USDC amounts: exact decimals in the domain, integer atomic units (6 decimals) in the ledger.

Floats never carry money here: 0.1 + 0.2 must not become a charge above an approved ceiling.
"""

import re
from decimal import ROUND_CEILING, Decimal, InvalidOperation
from typing import Annotated

from pydantic import BeforeValidator, PlainSerializer

USDC_DECIMALS = 6
_QUANTUM = Decimal(1).scaleb(-USDC_DECIMALS)
MAX_USDC = Decimal(1_000_000)
# What an agent writes: ASCII digits, at most 6 decimals; no sign, exponent, space, underscore.
_PLAIN = re.compile(r"[0-9]{1,7}(\.[0-9]{1,6})?\Z")
PLAIN_RULE = (
    f'must be a plain decimal string of USDC with at most {USDC_DECIMALS} decimals, e.g. "0.50"'
)


def parse_usdc(value: object) -> Decimal:
    """A non-negative USDC amount from a number or a decimal string; rejects NaN, infinities and
    more precision than USDC has (silently rounding a ceiling would change what was approved)."""
    if isinstance(value, bool) or not isinstance(value, int | float | str | Decimal):
        raise ValueError("must be a number of USDC")
    try:
        amount = Decimal(str(value).strip())
    except InvalidOperation:
        raise ValueError(f"must be a number of USDC, got {str(value)[:40]!r}") from None
    if not amount.is_finite() or amount < 0:
        raise ValueError("must be a finite, non-negative number of USDC")
    if amount > MAX_USDC:
        raise ValueError(f"must be at most {MAX_USDC} USDC")
    if amount != amount.quantize(_QUANTUM, rounding=ROUND_CEILING):
        raise ValueError(f"has more than {USDC_DECIMALS} decimals")
    return amount.quantize(_QUANTUM)


def parse_plain_usdc(value: object) -> Decimal:
    """The most an agent will pay, as it writes it: a plain decimal string ("0.05", "12"), never
    a number, "1_000", " 1", "1e3" or full-width digits, which Decimal would all take. A Decimal
    made by the console itself passes as `parse_usdc` takes it."""
    if isinstance(value, Decimal):
        return parse_usdc(value)
    if not isinstance(value, str) or not _PLAIN.match(value):
        raise ValueError(PLAIN_RULE)
    return parse_usdc(value)


def to_atomic(amount: Decimal) -> int:
    return int(amount.scaleb(USDC_DECIMALS))


def from_atomic(units: int) -> Decimal:
    return Decimal(units).scaleb(-USDC_DECIMALS).quantize(_QUANTUM)


def format_usdc(amount: Decimal | None) -> str:
    """Human form: trailing zeros trimmed to at least two decimals ("0.01", "1.25", "0.0035")."""
    if amount is None:
        return "-"
    text = f"{amount:.6f}".rstrip("0")
    whole, _, frac = text.partition(".")
    return f"{whole}.{frac.ljust(2, '0')}"


# In JSON, amounts travel as decimal strings so no client turns them into floats by accident.
Usdc = Annotated[
    Decimal, BeforeValidator(parse_usdc), PlainSerializer(format_usdc, return_type=str)
]
# An amount an agent sends: only a plain decimal string (`parse_plain_usdc`).
PlainUsdc = Annotated[
    Decimal, BeforeValidator(parse_plain_usdc), PlainSerializer(format_usdc, return_type=str)
]
