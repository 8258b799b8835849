"""Decisions on a request, both kinds, and the rules they share.

A policy rule's automatic approval (at intake) and the operator's approve or deny (through the
TUI, the CLI or the operator socket) each commit a `Decision` to the ledger before anything is
paid. Both approve up to the same ceiling (`approval_ceiling`). A request waiting for the operator
lives for the pending lifetime: the policy's, else the console's setting; every way into
`pending` (intake, a re-priced challenge, recovery after a restart) goes through `queue`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from svc_console.broker import errors, two_person
from svc_console.broker.deciders import Decider, refuse_own_request
from svc_console.broker.params import ApproveParams, DenyParams
from svc_console.broker.refusal_log import RefusalAudit
from svc_console.core.mandate import Mandate, MandateDecider, mandate_for
from svc_console.core.models import (
    Decision,
    EndpointRecord,
    Estimate,
    Evidence,
    SpendRequest,
    Verdict,
)
from svc_console.core.money import format_usdc
from svc_console.core.shown_facts import approval_ceiling
from svc_console.core.states import IllegalTransition, State
from svc_console.ledger import Ledger, PastLifetime
from svc_console.ledger import grants as ledger_grants
from svc_console.ledger.store import BudgetSpent
from svc_console.policy import PolicyEngine
from svc_console.policy.grants import grant_id

log = logging.getLogger(__name__)


def mandate_of(
    request: SpendRequest,
    decision: Decision,
    deciders: list[MandateDecider],
    *,
    endpoint: EndpointRecord | None = None,
    estimate: Estimate | None = None,
    policy_sha256: str | None = None,
) -> Mandate:
    """The mandate an approving `decision` produces, from the request as quoted (or the
    `endpoint` and `estimate` intake has just learned)."""
    endpoint, estimate = endpoint or request.endpoint, estimate or request.estimate
    assert endpoint is not None and estimate is not None and decision.ceiling_usdc is not None
    return mandate_for(
        request,
        endpoint,
        estimate,
        ceiling=decision.ceiling_usdc,
        deciders=deciders,
        at=decision.at,
        policy_sha256=policy_sha256,
    )


class Decisions:
    def __init__(
        self,
        ledger: Ledger,
        policy: PolicyEngine,
        *,
        pending_ttl_s: float,
        confirm_above_usdc: Decimal | None,
        clock: Callable[[], float],
    ):
        self.ledger, self.policy, self.clock = ledger, policy, clock
        self._pending_ttl_s = pending_ttl_s
        self._confirm_above_usdc = confirm_above_usdc
        # Who registered an agent (the runtime sets it from the agent registry): under the
        # two-person rule, never one of the two who approve its requests.
        self.registrant: Callable[[str], str | None] = lambda agent: None
        # Whether an operator's account was removed (the runtime sets it from the accounts): a
        # first approval by a removed operator no longer counts.
        self.removed_operator: Callable[[str], bool] = lambda name: False
        # Who created an operator's account (the runtime sets it from the accounts): under the
        # two-person rule, accounts one of the two created never count as two people.
        self.creators: Callable[[str], frozenset[str]] = lambda name: frozenset()
        # The TUI's operator: settings.toml [operator] name, else the console owner's login.
        self.console_operator: str | None = None
        # Refused decisions, in the audit chain by bursts (a guessing loop cannot fill it).
        self.refusals = RefusalAudit(ledger, clock)

    # -- waiting for the operator -------------------------------------------------------------

    def pending_ttl_s(self) -> float:
        """How long a request waits for the operator: the policy's lifetime, else the config's."""
        return self.policy.pending_ttl_s or self._pending_ttl_s

    def queue(self, request_id: str, now: float, **fields: Any) -> State:
        """Put the request before the operator, to expire after the pending lifetime."""
        self.ledger.transition(
            request_id, State.pending, at=now, expires_at=now + self.pending_ttl_s(), **fields
        )
        return State.pending

    # -- a policy rule's decision -------------------------------------------------------------

    def auto_approve(
        self,
        request: SpendRequest,
        verdict: Verdict,
        now: float,
        learned: dict[str, Any],
        dataset: Any = None,
    ) -> State:
        """Commit the approval an auto-approve rule gave, naming the rule and its budget, with
        what intake `learned` (its estimate among them)."""
        rule_name = verdict.rules[0] if verdict.rules else "auto-approve"
        rule = next(c.rule for c in verdict.citations if c.effect == "auto_approve")
        # A grant is the operator's standing decision, not a policy rule: named as such.
        by, channel = (
            (rule_name, "grant")
            if grant_id(rule) is not None
            else (f"policy: {rule_name}", "policy")
        )
        evidence = Evidence(channel=channel, rule=rule_name, policy_version=verdict.policy_sha256)
        decision = Decision(
            approved=True,
            by=by,
            at=now,
            ceiling_usdc=approval_ceiling(request, learned["estimate"]),
            evidence=evidence,
        )
        mandate = mandate_of(
            request,
            decision,
            [MandateDecider(by=by, evidence=evidence)],
            endpoint=learned["endpoint"],
            estimate=learned["estimate"],
            policy_sha256=verdict.policy_sha256 if channel == "policy" else None,
        )
        still = lambda: self._still_auto_approved(request, learned, now, dataset)  # noqa: E731
        self.ledger.decide(
            request.id,
            decision,
            State.auto_approved,
            budget_rule=rule,
            recheck=still,
            mandate=mandate,
            **learned,
        )
        return State.auto_approved

    def _still_auto_approved(
        self, request: SpendRequest, learned: dict[str, Any], now: float, dataset: Any
    ) -> str | None:
        """Why the policy no longer auto-approves the request, with the budget totals as they
        now stand (another broker's reservations among them), or None. A grant is read from
        the ledger itself: another broker's operator may have revoked it a moment ago."""
        verdict = self.policy.admit(
            request, learned["endpoint"], learned["estimate"], now=now, dataset=dataset, count=False
        )
        if verdict.outcome != "auto_approve":
            return verdict.summary
        rule = next(c.rule for c in verdict.citations if c.effect == "auto_approve")
        made_by = grant_id(rule)
        if made_by is not None and not ledger_grants.still_in_force(self.ledger, made_by, now):
            return f"grant {made_by} has ended"
        return None

    # -- the operator's decision --------------------------------------------------------------

    def confirmation_needed(self, request: SpendRequest) -> Decimal | None:
        """The amount the operator must type to approve, or None when a keypress is enough."""
        threshold = self.policy.confirm_above_usdc
        if threshold is None:
            threshold = self._confirm_above_usdc
        if request.estimate is None or threshold is None:
            return None
        ceiling = approval_ceiling(request, request.estimate)
        return ceiling if ceiling > threshold else None

    def total_confirmation_needed(self, total: Decimal) -> bool:
        """Whether the operator must type the total of several approvals made at once: when it
        passes the threshold one request's amount would be typed above."""
        threshold = self.policy.confirm_above_usdc
        if threshold is None:
            threshold = self._confirm_above_usdc
        return threshold is not None and total > threshold

    def refuse(self, request_id: str | None, reason: str, decider: Decider) -> None:
        """Keep a refused decision in the audit chain, with who tried it: at once, or counted
        in its burst (`RefusalAudit`)."""
        peer = (decider.channel, decider.uid)
        self.refusals.refused(peer, request_id, reason, decider.evidence())

    def operator_approvals(self, request: SpendRequest) -> list[str]:
        """Who approved a pending request so far under the two-person rule (empty when it does
        not apply to it)."""
        if request.state != State.pending or request.estimate is None:
            return []
        ceiling = approval_ceiling(request, request.estimate)
        if not two_person.applies(self.policy, ceiling):
            return []
        return two_person.approvals(self.ledger, request, ceiling, self.removed_operator)

    def two_person_status(self, request: SpendRequest) -> str | None:
        """The two-person rule's line for a pending request it applies to, else None."""
        above = two_person.threshold(self.policy)
        if request.state != State.pending or request.estimate is None or above is None:
            return None
        ceiling = approval_ceiling(request, request.estimate)
        if ceiling <= above:
            return None
        return two_person.status(
            above, two_person.approvals(self.ledger, request, ceiling, self.removed_operator)
        )

    def _check_decider(self, request: SpendRequest, decider: Decider) -> None:
        try:
            refuse_own_request(request, decider)
        except errors.NotAuthorised as refused:
            self.refuse(request.id, "the submitting agent's own process tree", decider)
            raise refused

    def approve(
        self, request: SpendRequest, params: ApproveParams, decider: Decider
    ) -> Decision | None:
        """Commit the operator's approval of a pending request, or raise why it cannot be. None
        when the two-person rule applies and this was the first approval: recorded, and the
        request stays pending."""
        assert request.estimate is not None  # every pending request was priced by its dry run
        self._check_decider(request, decider)
        needed = self.confirmation_needed(request)
        if needed is not None and params.confirm_amount != needed:
            typed = params.confirm_amount
            said = (
                "type the amount to approve"
                if typed is None
                else f"{format_usdc(typed)} USDC is not the amount to approve; type"
            )
            raise errors.ConfirmationRequired(
                f"{said}: {format_usdc(needed)} USDC", amount=format_usdc(needed)
            )
        # The policy again, now: a budget may have been spent since the request was queued. No
        # await from this check to the decision's commit, which reserves the approval's ceiling.
        blocked = self.policy.approval_blocked(request, self.clock())
        if blocked is not None:
            raise errors.BlockedByPolicy(f"the policy forbids approving {request.id}: {blocked}")
        by, evidence = decider.by, decider.evidence()
        deciders = [MandateDecider(by=by, evidence=evidence)]
        ceiling = approval_ceiling(request, request.estimate)
        if two_person.applies(self.policy, ceiling):
            pair = two_person.second_needed(
                self.ledger,
                request,
                ceiling,
                decider,
                at=self.clock(),
                registrant=self.registrant,
                removed=self.removed_operator,
                refuse=lambda reason: self.refuse(request.id, reason, decider),
                creators=self.creators,
            )
            if pair is None:
                log.info("%s approved by %s; needs a second operator", request.id, decider.by)
                return None
            by = ", ".join(pair)
            first = two_person.approved_by(self.ledger, request, ceiling, self.removed_operator)
            deciders.insert(0, MandateDecider(by=pair[0], evidence=first.get(pair[0])))
        decision = Decision(
            approved=True,
            by=by,
            at=self.clock(),
            ceiling_usdc=ceiling,
            note=params.note,
            evidence=evidence,
        )
        blocked_now = lambda: self.policy.approval_blocked(request, self.clock())  # noqa: E731
        mandate = mandate_of(request, decision, deciders)
        self._commit(request, decision, State.approved, recheck=blocked_now, mandate=mandate)
        log.info("%s approved by %s up to %s USDC", request.id, decider.by, decision.ceiling_usdc)
        return decision

    def deny(self, request: SpendRequest, params: DenyParams, decider: Decider) -> Decision:
        """Commit the operator's deny of a pending request."""
        self._check_decider(request, decider)
        decision = Decision(
            approved=False,
            by=decider.by,
            at=self.clock(),
            note=params.reason,
            evidence=decider.evidence(),
        )
        self._commit(request, decision, State.denied)
        log.info("%s denied by %s", request.id, decider.by)
        return decision

    def _commit(
        self,
        request: SpendRequest,
        decision: Decision,
        target: State,
        recheck: Callable[[], str | None] | None = None,
        mandate: Mandate | None = None,
    ) -> None:
        try:
            self.ledger.decide(request.id, decision, target, recheck=recheck, mandate=mandate)
        except BudgetSpent as spent:
            raise errors.BlockedByPolicy(
                f"the policy forbids approving {request.id}: {spent}"
            ) from None
        except PastLifetime:
            raise errors.WrongState(
                f"request {request.id} ran out of time before this decision; nothing was decided"
            ) from None
        except IllegalTransition:  # decided meanwhile, by an operator of another broker
            raise errors.WrongState(
                f"request {request.id} was decided meanwhile; nothing more was decided"
            ) from None
