"""Intake of one request: inspect the endpoint and its skill.md, dry-run it on the wallet proxy,
assess risk, ask policy, and queue it for the operator (or reject, deny, auto-approve).

Spends nothing: the only proxy call here is `dryRun: true`.
"""

from __future__ import annotations

import difflib
import logging
from dataclasses import dataclass
from decimal import Decimal

from svc_console.broker.decisions import Decisions
from svc_console.broker.endpoint_cache import EndpointCache
from svc_console.core import risk
from svc_console.core.datasets import DatasetListing
from svc_console.core.models import (
    EndpointRecord,
    Estimate,
    Kind,
    RiskFlag,
    Severity,
    SpendRequest,
    Verdict,
)
from svc_console.core.money import format_usdc
from svc_console.core.sanitize import inert_line
from svc_console.core.states import State
from svc_console.ledger import Ledger
from svc_console.ledger.catalogue_search import endpoint_ids
from svc_console.ledger.store import BudgetSpent
from svc_console.market import errors
from svc_console.market.gateway import Marketplace
from svc_console.market.paid_tools import ToolRefused
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
    decisions: Decisions
    endpoints: EndpointCache

    async def run(self, request: SpendRequest, now: float) -> State:
        """Take a `received` (or, after a restart, `inspecting`) request as far as it can go
        without the operator; returns the state it ended in."""
        if request.state == State.received:
            self.ledger.transition(request.id, State.inspecting, at=now)
        try:
            inspected = await self._inspect(request)
        except errors.MarketError as exc:
            reason = _not_inspected(request, exc)
            if isinstance(exc, errors.EndpointNotFound):
                reason += self._did_you_mean(request.endpoint_id or "")
            return self._reject(request, now, reason)
        above = _above_agent_max(request, inspected.estimate)
        if above is not None:
            return self._reject(
                request, now, above, endpoint=inspected.endpoint, estimate=inspected.estimate
            )
        # From here to the ledger's commit nothing awaits: the budget totals the policy reads
        # cannot change before this request's reservation is in them (no cap passed together).
        return self._decide(request, inspected, now)

    def _did_you_mean(self, endpoint_id: str) -> str:
        """The cached catalogue's nearest endpoint id, as a hint (nothing before a first sync)."""
        catalogue = self.ledger.catalogue
        known = endpoint_ids(catalogue) if catalogue is not None else []
        close = difflib.get_close_matches(endpoint_id, known, n=1, cutoff=0.8)
        return f" (did you mean {close[0]}?)" if close else ""

    def _decide(self, request: SpendRequest, inspected: Inspection, now: float) -> State:
        """Risk and the policy's verdict, committed with what was learned: denied by a rule,
        approved by a rule, or queued for the operator."""
        flags = self._assess(request, inspected)
        verdict = self.policy.admit(
            request, inspected.endpoint, inspected.estimate, now=now, dataset=inspected.dataset
        )
        flags += [
            RiskFlag(code="repeated_call", severity=Severity.warn, reason=cite.reason)
            for cite in verdict.citations
            if cite.rule == "repeats"
        ]
        learned = {
            "endpoint": inspected.endpoint,
            "estimate": inspected.estimate,
            "risk": flags,
            "verdict": verdict,
            "skill": inspected.skill[:MAX_SKILL_CHARS],
        }
        return self._commit_verdict(request, learned, now, inspected.dataset)

    def _commit_verdict(
        self,
        request: SpendRequest,
        learned: dict,
        now: float,
        dataset: DatasetListing | None,
    ) -> State:
        verdict = learned["verdict"]
        if verdict.outcome == "auto_approve":
            try:
                return self.decisions.auto_approve(request, verdict, now, learned, dataset)
            except BudgetSpent as spent:
                # Another broker sharing the ledger reserved first, or ended the grant
                # (ledger/shared.py): judged again on the totals that now count it; nothing
                # was reserved. Where this broker's view still says approve, the ledger does
                # not back it: the operator decides.
                verdict = self.policy.admit(
                    request,
                    learned["endpoint"],
                    learned["estimate"],
                    now=now,
                    dataset=dataset,
                    count=False,
                )
                if verdict.outcome != "deny":
                    verdict = Verdict(outcome="ask", summary=f"{spent}: the operator decides")
                learned["verdict"] = verdict
        if verdict.outcome == "deny":
            self.ledger.transition(
                request.id, State.denied, at=now, reason=verdict.summary, **learned
            )
            return State.denied
        return self.decisions.queue(request.id, now, **learned)

    async def _inspect(self, request: SpendRequest) -> Inspection:
        if request.kind == Kind.market_call:
            return await self._inspect_endpoint(request)
        return await self._inspect_tool(request)

    def _assess(self, request: SpendRequest, inspected: Inspection) -> list[RiskFlag]:
        endpoint = inspected.endpoint
        return risk.assess(
            endpoint,
            inspected.estimate,
            request.inputs,
            first_use_of_provider=not self.ledger.provider_used_before(
                endpoint.provider, request.id
            ),
            agent_max_usdc=request.max_usdc,
            balance_usdc=inspected.balance_usdc,
        )

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
        """A charged MCP tool: quoted by its own payment challenge (see market.paid_tools)."""
        quote = await self.market.tools.quote(request.kind, request.dataset_id, request.inputs)
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


def _not_inspected(request: SpendRequest, exc: errors.MarketError) -> str:
    """Why a request that could not be inspected is rejected, in a line for people."""
    if isinstance(exc, errors.EndpointNotFound):
        return f"no endpoint {inert_line(request.endpoint_id)}"
    if isinstance(exc, errors.NotInRegistry):
        return "the endpoint is not in the marketplace's allowlisted registry"
    if isinstance(exc, errors.InvalidInputs):
        problems = "; ".join(
            f"{inert_line(f.get('field', '?'), 40)} {inert_line(f.get('problem', ''), 80)}"
            for f in exc.fields
            if isinstance(f, dict)
        )
        return f"invalid inputs: {problems or exc.message}"
    if isinstance(exc, ToolRefused):
        return exc.message
    return f"could not inspect the endpoint: {exc.message}"


def _above_agent_max(request: SpendRequest, estimate: Estimate) -> str | None:
    """Why the request costs more than the agent allowed itself, or None."""
    lowest = estimate.min_usdc if estimate.min_usdc is not None else estimate.amount_usdc
    if request.max_usdc is None or lowest <= request.max_usdc:
        return None
    return (
        f"costs at least {format_usdc(lowest)} USDC, above the agent's max_usdc"
        f" of {format_usdc(request.max_usdc)}"
    )
