"""The broker's settings, apart from the broker itself so that reading them (the command line
builds them before anything starts) does not import the whole decision path."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal


@dataclass(frozen=True)
class BrokerConfig:
    pending_ttl_s: float = 900.0
    # Above this ceiling the operator types the amount to approve (a policy may set it lower).
    confirm_above_usdc: Decimal | None = Decimal("1")
    expiry_tick_s: float = 0.2
    # How often the balance is read while a request waits for funds (`wallet.fund_wait`).
    funding_poll_s: float = 2.0
