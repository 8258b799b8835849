"""Execution of an approved request: the only code that makes money move, through the wallet
proxy (market calls) or a payment the console signs (charged MCP tools, see `paid_tools`).

Order matters and is the point of this module: the decision is already committed (the caller
checks), the execution row is committed as `in_flight` before the proxy is called, and the proxy is
told the approved ceiling, the approved chain and an idempotency key, so it refuses to pay more
and never pays twice for one attempt.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from svc_console.broker.paid_tools import PaidTools
from svc_console.core.models import Estimate, Kind
from svc_console.core.money import format_usdc
from svc_console.core.sanitize import inert_line
from svc_console.core.states import State
from svc_console.ledger import Ledger
from svc_console.market import errors
from svc_console.market.gateway import Marketplace

log = logging.getLogger(__name__)
MAX_ATTEMPTS = 2  # the first call and, after funding, the single retry the spec allows


class Executor:
    def __init__(
        self,
        ledger: Ledger,
        market: Marketplace,
        clock: Callable[[], float],
        pending_ttl_s: float | Callable[[], float],
        tools: PaidTools,
    ):
        self.ledger, self.market, self.clock = ledger, market, clock
        self.tools = tools
        # A number, or a function when the policy in force may change it.
        self.lifetime = pending_ttl_s if callable(pending_ttl_s) else (lambda: pending_ttl_s)

    async def run(self, request_id: str) -> State:
        request = self.ledger.get(request_id)
        latest = self.ledger.latest_decision(request_id)
        if request is None or latest is None or not latest[1].approved:
            raise RuntimeError(f"refusing to execute {request_id}: no committed approval")
        decision_id, decision = latest
        endpoint, estimate = request.endpoint, request.estimate
        if endpoint is None or estimate is None or decision.ceiling_usdc is None:
            raise RuntimeError(f"refusing to execute {request_id}: not inspected")
        # The funding retry is counted per approval: a re-priced request approved again starts anew.
        attempt = self.ledger.attempts(request_id, decision_id) + 1
        if attempt > MAX_ATTEMPTS:
            raise RuntimeError(f"refusing to execute {request_id} a third time on one approval")
        key = f"{request_id}-{self.ledger.attempts(request_id) + 1}"
        execution = self.ledger.start_execution(
            request_id, decision_id, attempt, key, at=self.clock()
        )

        def finish(state: State, error: str | None = None, **fields: object) -> State:
            self.ledger.finish_execution(execution, state, at=self.clock(), error=error, **fields)
            log.info("%s attempt %d ended %s", request_id, attempt, state)
            return state

        try:
            if request.kind == Kind.market_call:
                outcome = await self.market.wallet.execute(
                    estimate.protocol,
                    endpoint.id,
                    request.inputs,
                    ceiling_usdc=decision.ceiling_usdc,
                    chain=estimate.chain,
                    idempotency_key=key,
                )
            else:
                # Signed here with the account wallet's key, within the approval.
                outcome = await self.tools.pay(
                    request.kind,
                    request.dataset_id,
                    request.inputs,
                    ceiling_usdc=decision.ceiling_usdc,
                    chain=estimate.chain,
                    free=estimate.amount_usdc == 0,
                    idempotency_key=key,
                )
        except errors.WalletUnfunded as exc:
            state = State.awaiting_funds if attempt < MAX_ATTEMPTS else State.failed
            needed = f"needs {format_usdc(exc.required)} USDC"
            if exc.balance is not None:
                needed += f", wallet holds {format_usdc(exc.balance)}"
            reason = (
                f"wallet unfunded ({needed}); fund it, then retry once"
                if state == State.awaiting_funds
                else f"wallet still unfunded on the retry ({needed})"
            )
            return finish(state, reason, funding_url=exc.funding_url or None)
        except errors.PriceAboveCeiling as exc:
            chain = inert_line(exc.chain, 20)
            asked = f"the provider asked {format_usdc(exc.price)} USDC on {chain}"
            moved_only = exc.price <= decision.ceiling_usdc  # the same price, on another chain
            reason = (
                f"{asked}, not on the approved {estimate.chain}; nothing was paid"
                if moved_only
                else f"{asked}, above the approved {format_usdc(decision.ceiling_usdc)} USDC on"
                f" {estimate.chain}; nothing was paid"
            )
            finish(State.repriced, reason)
            repriced = Estimate(
                amount_usdc=exc.price,
                chain=exc.chain or estimate.chain,
                protocol=estimate.protocol,
            )
            now = self.clock()
            self.ledger.transition(
                request_id,
                State.pending,
                at=now,
                estimate=repriced,
                reason=reason,
                expires_at=now + self.lifetime(),
            )
            return State.pending
        except errors.ServiceUnreachable as exc:
            return finish(State.failed, f"nothing was charged: {exc.message}")
        except (errors.OutcomeUnknown, errors.MalformedResponse) as exc:
            # No answer, or one that cannot be read: the service may have executed and charged.
            return finish(
                State.unknown,
                f"{exc.message}; it may have been charged: reconcile with the usage history",
            )
        except errors.MarketError as exc:
            return finish(State.failed, f"{exc.message} ({exc.code})")

        if outcome.charged_usdc > decision.ceiling_usdc:
            # The proxy broke its promise; record the truth loudly rather than hide it.
            log.error("request %s charged above its ceiling", request_id)
            return finish(
                State.succeeded,
                f"charged {format_usdc(outcome.charged_usdc)} USDC, above the approved"
                f" {format_usdc(decision.ceiling_usdc)}: reconcile",
                outcome=outcome,
            )
        return finish(State.succeeded, outcome=outcome)
