"""Execution of an approved request: the only code that makes money move, through a
`market.payer.Payer` (`Marketplace.payer`): the wallet proxy (market calls) or a payment the
console signs (charged MCP tools, see `market.paid_tools`).

Order matters and is the point of this module: the decision is already committed (the caller
checks), the execution row is committed as `in_flight` before the payer is called, and the payer
is given the approval's mandate (what may be paid, to whom, until when) and an idempotency key, so
the signer refuses anything else and nothing is paid twice for one attempt.

The executor records the attempt's end in the ledger and returns it; an attempt re-priced, or
refused as outside its mandate, is returned with what was asked for the broker to put before the
operator again.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal

from svc_console.core.mandate import Mandate
from svc_console.core.mandate_check import Offer
from svc_console.core.models import EndpointRecord, Estimate, Outcome, SpendRequest
from svc_console.core.money import format_usdc
from svc_console.core.networks import chain_name
from svc_console.core.sanitize import inert_line
from svc_console.core.states import State
from svc_console.ledger import Ledger, mandates
from svc_console.market import errors
from svc_console.market.gateway import Marketplace
from svc_console.market.payer import Order

log = logging.getLogger(__name__)
MAX_ATTEMPTS = 2  # the first call and, after funding, the single retry the spec allows


@dataclass(frozen=True)
class Executed:
    """How an attempt ended. `repriced`: the new price to ask the operator about, and why;
    `endpoint`, the endpoint as it now reads, when that changed too."""

    state: State
    repriced: Estimate | None = None
    reason: str | None = None
    endpoint: EndpointRecord | None = None

    def asked(self) -> dict[str, object]:
        """What the request goes back to the operator with."""
        asked: dict[str, object] = {"estimate": self.repriced, "reason": self.reason}
        if self.endpoint is not None:
            asked["endpoint"] = self.endpoint
        return asked


@dataclass(frozen=True)
class _Attempt:
    """One attempt at paying for an approved request, its execution row committed."""

    request: SpendRequest
    estimate: Estimate
    ceiling_usdc: Decimal
    mandate: Mandate | None  # None: approved before mandates were made
    number: int  # within its approval: the funding retry is the second
    key: str  # the idempotency key, unique over the request's attempts
    execution: int  # the ledger's execution row


class Executor:
    def __init__(
        self,
        ledger: Ledger,
        market: Marketplace,
        clock: Callable[[], float],
        started: Callable[[str], None] = lambda request_id: None,
    ):
        self.ledger, self.market, self.clock = ledger, market, clock
        # Told once an attempt is committed as executing, before anything is paid: the state
        # can last as long as the provider takes, and watchers must see it while it does.
        self.started = started

    async def run(self, request_id: str) -> Executed:
        attempt = self._start(request_id)
        # The execution row may be a write of a group transaction (ledger/group_commit.py):
        # nothing is paid before it is committed.
        await self.ledger.committed()
        self.started(request_id)
        request = attempt.request
        try:
            outcome = await self.market.payer(request.kind).pay(_order(attempt))
        except errors.WalletUnfunded as exc:
            return self._unfunded(attempt, exc)
        except errors.OutsideMandate as exc:
            return self._outside(attempt, exc)
        except errors.PriceAboveCeiling as exc:
            return self._repriced(attempt, exc)
        except errors.ServiceUnreachable as exc:
            return self._finish(attempt, State.failed, f"nothing was charged: {exc.message}")
        except (errors.OutcomeUnknown, errors.MalformedResponse) as exc:
            # No answer, or one that cannot be read: the service may have executed and charged.
            return self._finish(
                attempt,
                State.unknown,
                f"{exc.message}; it may have been charged: reconcile with the usage history",
            )
        except errors.MarketError as exc:
            return self._finish(attempt, State.failed, f"{exc.message} ({exc.code})")
        return self._succeeded(attempt, outcome)

    def _start(self, request_id: str) -> _Attempt:
        """Commit the execution row of the next attempt, or refuse one the ledger does not
        allow: no committed approval, not inspected, or past the funding retry."""
        request = self.ledger.get(request_id)
        latest = self.ledger.latest_decision(request_id)
        if request is None or latest is None or not latest[1].approved:
            raise RuntimeError(f"refusing to execute {request_id}: no committed approval")
        decision_id, decision = latest
        endpoint, estimate = request.endpoint, request.estimate
        if endpoint is None or estimate is None or decision.ceiling_usdc is None:
            raise RuntimeError(f"refusing to execute {request_id}: not inspected")
        # The funding retry is counted per approval: a re-priced request approved again starts anew.
        number = self.ledger.attempts(request_id, decision_id) + 1
        if number > MAX_ATTEMPTS:
            raise RuntimeError(f"refusing to execute {request_id} a third time on one approval")
        key = f"{request_id}-{self.ledger.attempts(request_id) + 1}"
        execution = self.ledger.start_execution(
            request_id, decision_id, number, key, at=self.clock()
        )
        mandate = mandates.of_decision(self.ledger.db, decision_id)
        return _Attempt(request, estimate, decision.ceiling_usdc, mandate, number, key, execution)

    def _finish(
        self, attempt: _Attempt, state: State, error: str | None = None, **fields: object
    ) -> Executed:
        self.ledger.finish_execution(
            attempt.execution, state, at=self.clock(), error=error, **fields
        )
        log.info("%s attempt %d ended %s", attempt.request.id, attempt.number, state)
        return Executed(state)

    def _unfunded(self, attempt: _Attempt, exc: errors.WalletUnfunded) -> Executed:
        state = State.awaiting_funds if attempt.number < MAX_ATTEMPTS else State.failed
        needed = f"needs {format_usdc(exc.required)} USDC"
        if exc.balance is not None:
            needed += f", wallet holds {format_usdc(exc.balance)}"
        reason = (
            f"wallet unfunded ({needed}); fund it, then retry once"
            if state == State.awaiting_funds
            else f"wallet still unfunded on the retry ({needed})"
        )
        return self._finish(attempt, state, reason, funding_url=exc.funding_url or None)

    def _repriced(self, attempt: _Attempt, exc: errors.PriceAboveCeiling) -> Executed:
        """Nothing was paid: the attempt ends `repriced`, with the price asked for the
        operator to approve again (or not)."""
        estimate, ceiling = attempt.estimate, attempt.ceiling_usdc
        chain = inert_line(exc.chain, 20)
        asked = f"the provider asked {format_usdc(exc.price)} USDC on {chain}"
        moved_only = exc.price <= ceiling  # the same price, on another chain
        reason = (
            f"{asked}, not on the approved {estimate.chain}; nothing was paid"
            if moved_only
            else f"{asked}, above the approved {format_usdc(ceiling)} USDC on"
            f" {estimate.chain}; nothing was paid"
        )
        self._finish(attempt, State.repriced, reason)
        repriced = Estimate(
            amount_usdc=exc.price,
            chain=exc.chain or estimate.chain,
            protocol=estimate.protocol,
        )
        return Executed(State.repriced, repriced, reason)

    def _outside(self, attempt: _Attempt, exc: errors.OutsideMandate) -> Executed:
        """The signer refused what was asked: nothing was signed. What can be approved goes
        back to the operator with the difference in words and what is asked now; what no
        approval could cover (an unreadable challenge, a compute tool off its fixed price)
        fails."""
        said = "; ".join(inert_line(words, 200) for words in exc.differences)
        offer = exc.offer
        if offer is None or exc.final:
            return self._finish(attempt, State.failed, f"{said}; nothing was signed or paid")
        reason = f"{said}; nothing was signed, so nothing was paid: approve it again or deny it"
        self._finish(attempt, State.repriced, reason)
        asked = asked_again(attempt.estimate, offer)
        return Executed(State.repriced, asked, reason, exc.endpoint)

    def _succeeded(self, attempt: _Attempt, outcome: Outcome) -> Executed:
        ceiling = attempt.ceiling_usdc
        if outcome.charged_usdc > ceiling:
            # The payer broke its promise; record the truth loudly rather than hide it.
            log.error("request %s charged above its ceiling", attempt.request.id)
            return self._finish(
                attempt,
                State.succeeded,
                f"charged {format_usdc(outcome.charged_usdc)} USDC, above the approved"
                f" {format_usdc(ceiling)}: reconcile",
                outcome=outcome,
            )
        return self._finish(attempt, State.succeeded, outcome=outcome)


def asked_again(estimate: Estimate, offer: Offer) -> Estimate:
    """The estimate the operator is asked to approve again: the terms asked now where the
    refusal knows them, the quote's elsewhere."""
    pinned = {
        "pay_to": offer.recipient or estimate.pay_to,
        "asset": offer.asset or estimate.asset,
        "network": offer.network or estimate.network,
        "scheme": offer.scheme if estimate.scheme else None,
    }
    chain = chain_name(offer.network) if offer.network else estimate.chain
    if offer.chains and chain not in offer.chains:  # the proxy's: the record offers others
        chain = offer.chains[0]
    changed: dict[str, object] = {**pinned, "chain": chain}
    if offer.amount_usdc is not None:
        changed.update(amount_usdc=offer.amount_usdc, min_usdc=None, max_usdc=None)
    elif offer.least_usdc is not None and offer.least_usdc > estimate.ceiling:
        changed.update(
            amount_usdc=offer.least_usdc, min_usdc=offer.least_usdc, max_usdc=offer.most_usdc
        )
    return estimate.model_copy(update=changed)


def _order(attempt: _Attempt) -> Order:
    if attempt.mandate is None:
        raise errors.OutsideMandate(
            ["this approval was made before mandates and names no recipient"],
            Offer(),
        )
    return Order(
        mandate=attempt.mandate,
        inputs=attempt.request.inputs,
        # Nothing to sign: a free dataset, quoted at nothing.
        free=attempt.estimate.amount_usdc == 0,
        idempotency_key=attempt.key,
    )
