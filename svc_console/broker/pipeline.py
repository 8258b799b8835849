"""Intake of one request: inspect the endpoint and its skill.md, dry-run it on the wallet proxy,
assess risk, ask policy, and queue it for the operator (or reject, deny, auto-approve).

Spends nothing: the only proxy call here is `dryRun: true`.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from decimal import Decimal

from svc_console.broker.endpoint_cache import EndpointCache
from svc_console.broker.paid_tools import PaidTools, ToolRefused
from svc_console.core import risk
from svc_console.core.datasets import DatasetListing
from svc_console.core.models import Decision, EndpointRecord, Estimate, Kind, SpendRequest
from svc_console.core.money import format_usdc
from svc_console.core.sanitize import inert_line
from svc_console.core.states import State
from svc_console.ledger import Ledger
from svc_console.market import errors
from svc_console.market.gateway import Marketplace
from svc_console.policy import PolicyEngine

log = logging.getLogger(__name__)
MAX_SKILL_CHARS = 20_000


@dataclass(frozen=True)
class Inspection:
    """What intake learned before asking policy: the same shape for endpoints and tools."""

    endpoint: EndpointRecord
    estimate: Estimate
    skill: str
    balance_usdc: Decimal | None = None
    dataset: DatasetListing | None = None


@dataclass
class Intake:
    ledger: Ledger
    market: Marketplace
    policy: PolicyEngine
    pending_ttl_s: float
    tools: PaidTools
    endpoints: EndpointCache

    async def run(self, request: SpendRequest, now: float) -> State:
        """Take a `received` (or, after a restart, `inspecting`) request as far as it can go
        without the operator; returns the state it ended in."""
        if request.state == State.received:
            self.ledger.transition(request.id, State.inspecting, at=now)
        try:
            if request.kind == Kind.market_call:
                inspected = await self._inspect_endpoint(request)
            else:
                inspected = await self._inspect_tool(request)
        except errors.EndpointNotFound:
            return self._reject(request, now, f"no endpoint {inert_line(request.endpoint_id)}")
        except errors.NotInRegistry:
            return self._reject(
                request, now, "the endpoint is not in the marketplace's allowlisted registry"
            )
        except errors.InvalidInputs as exc:
            problems = "; ".join(
                f"{inert_line(f.get('field', '?'), 40)} {inert_line(f.get('problem', ''), 80)}"
                for f in exc.fields
                if isinstance(f, dict)
            )
            return self._reject(request, now, f"invalid inputs: {problems or exc.message}")
        except ToolRefused as exc:
            return self._reject(request, now, exc.message)
        except errors.MarketError as exc:
            return self._reject(request, now, f"could not inspect the endpoint: {exc.message}")
        endpoint, estimate, skill = inspected.endpoint, inspected.estimate, inspected.skill

        lowest = estimate.min_usdc if estimate.min_usdc is not None else estimate.amount_usdc
        if request.max_usdc is not None and lowest > request.max_usdc:
            return self._reject(
                request,
                now,
                f"costs at least {format_usdc(lowest)} USDC, above the agent's max_usdc"
                f" of {format_usdc(request.max_usdc)}",
                endpoint=endpoint,
                estimate=estimate,
            )
        flags = risk.assess(
            endpoint,
            estimate,
            request.inputs,
            first_use_of_provider=not self.ledger.provider_used_before(
                endpoint.provider, request.id
            ),
            agent_max_usdc=request.max_usdc,
            balance_usdc=inspected.balance_usdc,
        )
        # From here to the ledger's commit nothing awaits: the budget totals the policy reads
        # cannot change before this request's reservation is in them (no cap passed together).
        verdict = self.policy.evaluate(
            request, endpoint, estimate, now=now, dataset=inspected.dataset
        )
        learned = {
            "endpoint": endpoint,
            "estimate": estimate,
            "risk": flags,
            "verdict": verdict,
            "skill": skill[:MAX_SKILL_CHARS],
        }
        if verdict.outcome == "deny":
            self.ledger.transition(
                request.id, State.denied, at=now, reason=verdict.summary, **learned
            )
            return State.denied
        if verdict.outcome == "auto_approve":
            decision = Decision(
                approved=True,
                by=f"policy: {verdict.rules[0] if verdict.rules else 'auto-approve'}",
                at=now,
                ceiling_usdc=approval_ceiling(request, estimate),
            )
            rule = next(c.rule for c in verdict.citations if c.effect == "auto_approve")
            self.ledger.decide(
                request.id, decision, State.auto_approved, budget_rule=rule, **learned
            )
            return State.auto_approved
        lifetime = self.policy.pending_ttl_s or self.pending_ttl_s
        self.ledger.transition(
            request.id, State.pending, at=now, expires_at=now + lifetime, **learned
        )
        return State.pending

    async def _inspect_endpoint(self, request: SpendRequest) -> Inspection:
        """A market call: the endpoint record and its skill.md (known from an earlier request
        for a few minutes) and the wallet proxy's dry run of these inputs (always asked)."""
        known = await self.endpoints.get(request.endpoint_id or "")
        endpoint, skill = known.record, known.skill
        try:
            dry_run = await self.market.wallet.dry_run(
                endpoint.protocols[0], endpoint.id, request.inputs
            )
        except (errors.NotInRegistry, errors.EndpointNotFound):
            self.endpoints.forget(request.endpoint_id or "")
            raise
        estimate = Estimate(
            amount_usdc=dry_run.estimated_usdc,
            min_usdc=dry_run.min_usdc,
            max_usdc=dry_run.max_usdc,
            chain=dry_run.chain,
            protocol=dry_run.protocol,
        )
        return Inspection(endpoint, estimate, skill, dry_run.balance_usdc)

    async def _inspect_tool(self, request: SpendRequest) -> Inspection:
        """A charged MCP tool: quoted by its own payment challenge (see broker.paid_tools)."""
        quote = await self.tools.quote(request.kind, request.dataset_id, request.inputs)
        return Inspection(quote.endpoint, quote.estimate, quote.skill, None, quote.dataset)

    def _reject(
        self,
        request: SpendRequest,
        now: float,
        reason: str,
        *,
        endpoint: EndpointRecord | None = None,
        estimate: Estimate | None = None,
    ) -> State:
        log.info("request %s rejected: %s", request.id, reason)
        self.ledger.transition(
            request.id, State.rejected, at=now, reason=reason, endpoint=endpoint, estimate=estimate
        )
        return State.rejected


def approval_ceiling(request: SpendRequest, estimate: Estimate) -> Decimal:
    """The most this approval lets the console pay: the estimate's upper bound, never above the
    agent's own max_usdc."""
    ceiling = estimate.ceiling
    if request.max_usdc is not None:
        ceiling = min(ceiling, request.max_usdc)
    return ceiling
