"""Policy: what may be spent, decided before the operator sees a request.

Until SKILLS.md policies are loaded, `ManualReview` applies: nothing is denied or approved by a
rule, every request goes to the operator (DESIGN.md: nothing is auto-approved unless written).
"""

from typing import Protocol

from svc_console.core.models import EndpointRecord, Estimate, SpendRequest, Verdict


class PolicyEngine(Protocol):
    def evaluate(
        self, request: SpendRequest, endpoint: EndpointRecord, estimate: Estimate
    ) -> Verdict: ...


class ManualReview:
    """The fail-closed default: the operator decides everything."""

    def evaluate(
        self, request: SpendRequest, endpoint: EndpointRecord, estimate: Estimate
    ) -> Verdict:
        return Verdict(outcome="ask", summary="no policy rule decides this: the operator does")
