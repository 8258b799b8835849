"""Policy: what may be spent, decided before the operator sees a request.

SKILLS.md policies (`policies/README.md` documents the vocabulary) are read by `loader`, checked
against the vocabulary of `rules`, compiled and evaluated by `engine` against the rolling budget
totals of `budgets`, and kept in force by `live` (reloaded by `watch`). `simulate`, `schema`,
`drift` and `drafts` (a draft checked, compared and saved, for the policies screen) serve policy
authors.

With no policy file, `ManualReview` applies: nothing is denied or approved by a rule, every request
goes to the operator (DESIGN.md: nothing is auto-approved unless written).

The package imports nothing of the broker, the ledger or the screens.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any, Protocol

from svc_console.core.models import EndpointRecord, Estimate, SpendRequest, Verdict


class PolicyEngine(Protocol):
    """What the broker asks of a policy."""

    def evaluate(
        self,
        request: SpendRequest,
        endpoint: EndpointRecord | None,
        estimate: Estimate | None,
        *,
        now: float | None = None,
        dataset: Any = None,
    ) -> Verdict: ...

    def admit(
        self,
        request: SpendRequest,
        endpoint: EndpointRecord | None,
        estimate: Estimate | None,
        *,
        now: float,
        dataset: Any = None,
        count: bool = True,
    ) -> Verdict:
        """The verdict on a new request, brakes included, and counted in their counts; without
        `count`, the same request judged again (its budgets as they now stand), not counted."""

    def resumed(self, agent: str) -> None:
        """The operator resumed an agent the circuit breaker had paused."""

    @property
    def confirm_above_usdc(self) -> Decimal | None:
        """Above this approval ceiling the operator types the amount; None: the broker's own."""

    @property
    def two_person_above_usdc(self) -> Decimal | None:
        """Above this approval ceiling two different operators approve; None: one does."""

    @property
    def pending_ttl_s(self) -> float | None:
        """How long a request waits for the operator; None: the broker's own."""

    def approval_blocked(self, request: SpendRequest, now: float | None = None) -> str | None:
        """Why an operator's approval must be refused now (a deny, a spent budget), or None."""


class ManualReview:
    """The fail-closed default: the operator decides everything."""

    confirm_above_usdc: Decimal | None = None
    two_person_above_usdc: Decimal | None = None
    pending_ttl_s: float | None = None

    def evaluate(
        self,
        request: SpendRequest,
        endpoint: EndpointRecord | None,
        estimate: Estimate | None,
        *,
        now: float | None = None,
        dataset: Any = None,
    ) -> Verdict:
        return Verdict(outcome="ask", summary="no policy rule decides this: the operator does")

    def admit(
        self,
        request: SpendRequest,
        endpoint: EndpointRecord | None,
        estimate: Estimate | None,
        *,
        now: float,
        dataset: Any = None,
        count: bool = True,
    ) -> Verdict:
        return self.evaluate(request, endpoint, estimate, now=now, dataset=dataset)

    def resumed(self, agent: str) -> None:
        return None

    def approval_blocked(self, request: SpendRequest, now: float | None = None) -> str | None:
        return None
