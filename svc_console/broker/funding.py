"""Funding a request that waits for funds, through to its single retry: read the balance, start a
funding checkout for what is missing (`WalletClient.funding_checkout`), read the balance again
until it covers what the request was approved for, then the one retry the spec allows
(`Broker.retry_funded`).

The wallet screen drives these steps from a worker; headless, the operator socket's
`wallet.fund_start`, `wallet.fund_wait` and `wallet.fund_retry` (`Funding`) serve them to
`svc-console wallet fund`. Nothing here moves money: a checkout is an address the operator opens,
and the retry runs within the approval already committed. What a request needs is its approved
ceiling (`core.funding.required`), so a balance that covers it is sure to cover the retry.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from decimal import Decimal
from typing import Any

from svc_console.broker import errors
from svc_console.broker.service import Broker
from svc_console.core.account import AgentWallets
from svc_console.core.funding import required, safe_link
from svc_console.core.models import FundingCheckout, SpendRequest
from svc_console.core.money import format_usdc
from svc_console.core.sanitize import inert_line
from svc_console.core.states import State
from svc_console.market.errors import MarketError
from svc_console.market.gateway import Marketplace


def describe(exc: MarketError) -> str:
    """A market error in one line; its text came from the network."""
    return inert_line(exc.message, 200)


async def read_balance(market: Marketplace) -> Decimal:
    try:
        return (await market.account.wallets()).balance_usdc
    except MarketError as exc:
        raise errors.MarketFailed(f"the balance could not be read: {describe(exc)}") from None


async def open_checkout(
    market: Marketplace, needed: Decimal
) -> tuple[Decimal, FundingCheckout | None]:
    """The balance, and a checkout for what it lacks of `needed` (None: it covers it already).
    A failure is a `MarketFailed` that says which step failed."""
    balance = await read_balance(market)
    if balance >= needed:
        return balance, None
    try:
        return balance, await market.wallet.funding_checkout(needed - balance)
    except MarketError as exc:
        raise errors.MarketFailed(f"the checkout failed: {describe(exc)}") from None


async def balance_reads(
    market: Marketplace, poll_s: float
) -> AsyncIterator[AgentWallets | MarketError]:
    """Every `poll_s` seconds, the wallet as the service reports it, or why it could not be read
    (a passing problem: the next read may work)."""
    while True:
        await asyncio.sleep(poll_s)
        try:
            wallets = await market.account.wallets()
        except MarketError as exc:
            yield exc
            continue
        yield wallets


def _usdc(amount: Decimal | None) -> str | None:
    return None if amount is None else format_usdc(amount)


class Funding:
    """The funding steps as the operator socket serves them, one call each; the CLI drives them
    and prints each step (`core.funding.FundingFlow`)."""

    def __init__(self, broker: Broker):
        self.broker = broker
        self.market = broker.market

    def _awaiting(self, request_id: str) -> tuple[SpendRequest, Decimal]:
        """The request, which must wait for funds, and what the wallet must hold for it."""
        request = self.broker.get(request_id)
        if request.state != State.awaiting_funds:
            raise errors.WrongState(f"request {request_id} is {request.state}, not awaiting funds")
        needed = required(request)
        if needed is None:  # an approved request always has its ceiling
            raise errors.WrongState(f"request {request_id} has no approved amount to fund")
        return request, needed

    async def start(self, request_id: str) -> dict[str, Any]:
        """`wallet.fund_start`: a checkout for what the wallet lacks (none when it covers it)."""
        request, needed = self._awaiting(request_id)
        balance, checkout = await open_checkout(self.market, needed)
        shown = None if checkout is None else checkout.model_dump(mode="json", by_alias=False)
        return {
            "request_id": request.id,
            "state": request.state,
            "required_usdc": format_usdc(needed),
            "balance_usdc": format_usdc(balance),
            "shortfall_usdc": format_usdc(max(Decimal(0), needed - balance)),
            "checkout": shown,
            # The address only when it may become a link (and a QR code): plain http(s).
            "link": None if checkout is None else safe_link(checkout.checkout_url),
        }

    async def wait(
        self, request_id: str, timeout_s: float, since: Decimal | None = None
    ) -> dict[str, Any]:
        """`wallet.fund_wait`: read the balance until it covers what the request needs, differs
        from `since` (what the caller last saw), cannot be read, or the request stops waiting
        for funds (cancelled, expired); at most `timeout_s`. Retries nothing."""
        request, needed = self._awaiting(request_id)
        balance, note = since, None
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout_s):
                reads = balance_reads(self.market, self.broker.config.funding_poll_s)
                async with contextlib.aclosing(reads):
                    async for read in reads:
                        request = self.broker.get(request_id)
                        if request.state != State.awaiting_funds:
                            break
                        if isinstance(read, MarketError):
                            note = f"the balance could not be read ({describe(read)}); trying again"
                            break
                        changed, balance = read.balance_usdc != since, read.balance_usdc
                        if balance >= needed or changed:
                            break
        request = self.broker.get(request_id)
        return {
            "request_id": request.id,
            "state": request.state,
            "required_usdc": format_usdc(needed),
            "balance_usdc": _usdc(balance),
            "covered": balance is not None and balance >= needed,
            "note": note,
        }

    async def retry(self, request_id: str, timeout_s: float) -> SpendRequest:
        """`wallet.fund_retry`: once the balance covers what the request needs, its single retry,
        and the request when that retry has ended (or at `timeout_s`)."""
        _request, needed = self._awaiting(request_id)
        balance = await read_balance(self.market)
        if balance < needed:
            raise errors.WrongState(
                f"the wallet holds {format_usdc(balance)} USDC of the {format_usdc(needed)}"
                f" USDC request {request_id} needs: fund it first (its one retry is kept)"
            )
        await self.broker.retry_funded(request_id)
        return await self.broker.retried(request_id, timeout_s)
