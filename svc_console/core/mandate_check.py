"""A payment asked for, against the mandate that would pay it: every way it falls outside, in
words an operator reads ("the recipient changed from 0x5A9d…A9D0 to 0xdEaD…bEEf").

An `Offer` is what a challenge (an x402 option, an MPP challenge) or, for the wallet proxy, the
endpoint record read again before paying, asks for, in the mandate's own terms. The signer signs
only an offer with no difference; the words go back to the operator with the request.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal

from svc_console.core.mandate import Mandate, short_address, utc_text
from svc_console.core.money import format_usdc
from svc_console.core.networks import USDC_ASSETS, USDC_DOMAINS, chain_name, same_address
from svc_console.core.sanitize import inert_line

# What the x402 `exact` scheme signs when a challenge names no transfer method: EIP-3009.
EIP3009 = "eip3009"


@dataclass(frozen=True)
class Offer:
    """What one payment asks for. None: the challenge does not say (a wallet proxy's record
    names no recipient, for one)."""

    amount_usdc: Decimal | None = None
    recipient: str | None = None
    asset: str | None = None
    network: str | None = None
    scheme: str | None = None
    # Until when the signature would be valid (Unix seconds), as the challenge sets it.
    valid_until: float | None = None
    # The EIP-712 domain (name, version) the challenge asks the authorization be signed over,
    # and how the token is to be moved (EIP-3009 unless it says otherwise).
    domain: tuple[str, str] | None = None
    transfer: str = EIP3009
    provider: str | None = None
    provider_name: str | None = None
    # The least and the most the endpoint's own record says a call costs (the proxy path).
    least_usdc: Decimal | None = None
    most_usdc: Decimal | None = None
    chains: tuple[str, ...] | None = None  # the chains the endpoint's record offers


def _network(network: str | None) -> str:
    name = chain_name(network or "")
    shown = inert_line(network or "none", 60)
    return shown if name == network else f"{name} ({shown})"


def _asset(asset: str | None, network: str | None) -> str:
    if asset and same_address(asset, USDC_ASSETS.get(network or "")):
        return f"USDC ({short_address(asset)})"
    return inert_line(short_address(asset), 40)


def _where_to(mandate: Mandate, offer: Offer) -> list[str]:
    words = []
    if mandate.recipient is not None and not same_address(offer.recipient, mandate.recipient):
        words.append(
            f"the recipient changed from {short_address(mandate.recipient)} to"
            f" {inert_line(short_address(offer.recipient), 40)}"
        )
    if offer.network is not None and offer.network != mandate.network:
        words.append(
            f"the network changed from {_network(mandate.network)} to {_network(offer.network)}"
        )
    if offer.asset is not None and not same_address(offer.asset, mandate.asset):
        words.append(
            f"the asset changed from {_asset(mandate.asset, mandate.network)} to"
            f" {_asset(offer.asset, offer.network)}"
        )
    return words


def _how(mandate: Mandate, offer: Offer) -> list[str]:
    words = []
    if offer.scheme is not None and offer.scheme != mandate.scheme:
        words.append(f"the scheme changed from {mandate.scheme} to {inert_line(offer.scheme, 40)}")
    if offer.transfer != EIP3009:
        words.append(
            f"the transfer method changed from EIP-3009 to {inert_line(offer.transfer, 40)}"
        )
    expected = USDC_DOMAINS.get(offer.network or mandate.network)
    pinned = (expected.name, expected.version) if expected is not None else None
    if offer.domain is not None and offer.domain != pinned:
        was = f"{pinned[0]} version {pinned[1]}" if pinned else "none known"
        name, version = offer.domain
        words.append(
            f"the EIP-712 domain changed from {was} to {inert_line(name, 40)} version"
            f" {inert_line(version, 10)}"
        )
    return words


def _how_much(mandate: Mandate, offer: Offer) -> list[str]:
    amount, most = offer.amount_usdc, mandate.max_usdc
    if amount is None:
        return []
    if mandate.exact and amount != most:
        return [
            f"the amount changed from exactly {format_usdc(most)} to {format_usdc(amount)} USDC"
        ]
    if amount > most:
        return [f"the amount rose from at most {format_usdc(most)} to {format_usdc(amount)} USDC"]
    return []


def _until(mandate: Mandate, offer: Offer, now: float) -> list[str]:
    if now > mandate.valid_until:
        return [f"the mandate expired at {utc_text(mandate.valid_until)}"]
    if offer.valid_until is not None and offer.valid_until > mandate.valid_until:
        return [
            f"the payment would stay valid until {utc_text(offer.valid_until)}, past the"
            f" mandate's {utc_text(mandate.valid_until)}"
        ]
    return []


def _record(mandate: Mandate, offer: Offer) -> list[str]:
    """What the endpoint's record, read again before the proxy pays, says differently."""
    words = []
    if offer.provider is not None and offer.provider != mandate.provider:
        words.append(
            f"the provider changed from {inert_line(mandate.provider_name, 40)}"
            f" ({inert_line(mandate.provider, 40)}) to"
            f" {inert_line(offer.provider_name or '?', 40)} ({inert_line(offer.provider, 40)})"
        )
    if offer.chains is not None and mandate.chain not in offer.chains:
        now = ", ".join(inert_line(c, 20) for c in offer.chains[:4]) or "none"
        words.append(f"the chain changed from {mandate.chain} to {now}")
    if offer.least_usdc is not None and offer.least_usdc > mandate.max_usdc:
        words.append(
            f"the price rose from at most {format_usdc(mandate.max_usdc)} to at least"
            f" {format_usdc(offer.least_usdc)} USDC"
        )
    return words


def differences(mandate: Mandate, offer: Offer, now: float) -> list[str]:
    """Every way `offer` falls outside `mandate` at `now`, in words; empty when it fits."""
    return [
        *_until(mandate, offer, now),
        *_record(mandate, offer),
        *_where_to(mandate, offer),
        *_how(mandate, offer),
        *_how_much(mandate, offer),
    ]


def closest(mandate: Mandate, offers: Sequence[Offer], now: float) -> tuple[Offer, list[str]]:
    """The offer that fits (no differences), else the one that differs least (the first of
    those): what a challenge of several options is judged by."""
    judged = [(offer, differences(mandate, offer, now)) for offer in offers]
    return min(judged, key=lambda pair: len(pair[1]))
