"""Grants as operators make, list and revoke them (the decision "for a while"; see policy/grants.py
for what a grant approves or denies).

A grant is made with the operator's decision on one request, after that decision commits: calls
of the same agent for the same endpoint (or dataset, or tool), each at most what this approval
allows, within the total the operator set, until its time is up or the console stops. Making,
revoking and ending are events in the audit chain with who did it. A grant "until the console
stops" left open by a console that stopped without ending it is ended when the next one starts.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from decimal import Decimal

from svc_console.broker import errors
from svc_console.broker.deciders import Decider
from svc_console.core.models import Decision, SpendRequest
from svc_console.core.money import format_usdc, to_atomic
from svc_console.ledger import Ledger, grants
from svc_console.ledger.grants import GrantRow
from svc_console.policy.facts import facts_of
from svc_console.policy.grants import Grant, GrantBook

log = logging.getLogger(__name__)
SESSION = "session"  # "until the console stops"
LONGEST_S = 7 * 86_400


def to_grant(row: GrantRow) -> Grant:
    return Grant(
        id=row.id,
        agent=row.agent,
        kind=row.kind,
        target=row.target,
        effect=row.effect,
        per_call_max=row.per_call_max_usdc,
        total=row.total_usdc,
        expires_at=row.expires_at,
        created_at=row.created_at,
        by=row.created_by,
        request_id=row.request_id,
    )


class OperatorGrants:
    def __init__(self, ledger: Ledger, book: GrantBook | None, clock: Callable[[], float]):
        self.ledger, self.book, self.clock = ledger, book, clock

    def start(self) -> None:
        """End what a console that stopped left open "until the console stops"; take the
        grants in force into the policy's book."""
        for grant_id in grants.until_stop(self.ledger):
            grants.end(
                self.ledger, grant_id, by="console", reason="the console stopped", at=self.clock()
            )
        if self.book is not None:
            self.book.load(
                (to_grant(row), row.used_usdc) for row in grants.in_force(self.ledger, self.clock())
            )

    def follow(self) -> None:
        """On a shared ledger: take in the grants other brokers' operators made, and drop those
        they revoked (each tick; an approval under a grant checks it in its own transaction
        too, `Decisions.auto_approve`)."""
        if self.book is None:
            return
        in_force = {row.id: row for row in grants.in_force(self.ledger, self.clock())}
        held = {grant.id for grant in self.book.active()}
        for grant_id in held - in_force.keys():
            self.book.end(grant_id)
        for grant_id in in_force.keys() - held:
            row = in_force[grant_id]
            self.book.add(to_grant(row), row.used_usdc)

    def stop(self) -> None:
        for grant_id in grants.until_stop(self.ledger):
            grants.end(
                self.ledger, grant_id, by="console", reason="the console stopped", at=self.clock()
            )
            if self.book is not None:
                self.book.end(grant_id)

    def make(
        self,
        request: SpendRequest,
        decision: Decision,
        *,
        lasting: str,
        total: Decimal | None,
        decider: Decider,
    ) -> GrantRow:
        """A grant from the operator's `decision` on `request`, for `lasting` (seconds as text,
        or `session`), approving up to `total` in all (an approval) or denying (a denial)."""
        if self.book is None:
            raise errors.InvalidParams("grants need the console's live policy")
        now = self.clock()
        expires_at = None if lasting == SESSION else now + int(lasting)
        facts = facts_of(request, request.endpoint, request.estimate)
        per_call = to_atomic(decision.ceiling_usdc) if decision.ceiling_usdc is not None else 0
        row = grants.make(
            self.ledger,
            agent=facts.agent,  # as the policy reads it: a grant to one unverified agent is to all
            kind=str(request.kind),
            target=facts.endpoint or "",
            effect="approve" if decision.approved else "deny",
            per_call_max=per_call,
            total=to_atomic(total) if total is not None else None,
            expires_at=expires_at,
            request_id=request.id,
            evidence=decider.evidence(),
            at=now,
        )
        self.book.add(to_grant(row))
        log.info("grant %s made by %s for agent %s", row.id, decider.by, facts.agent)
        return row

    def in_force(self) -> list[GrantRow]:
        return grants.in_force(self.ledger, self.clock())

    def recent(self, limit: int = 100) -> list[GrantRow]:
        return grants.recent(self.ledger, limit)

    def revoke(self, grant_id: int, decider: Decider) -> GrantRow:
        try:
            row = grants.end(
                self.ledger,
                grant_id,
                by=decider.by,
                reason="revoked by the operator",
                at=self.clock(),
            )
        except grants.NoSuchGrant:
            raise errors.WrongState(f"no grant {grant_id} in force") from None
        if self.book is not None:
            self.book.end(grant_id)
        return row


def parse_lasting(text: str) -> str:
    """`15m`, `1h`, `2d` (seconds, as text) or `session`; ValueError with what is allowed."""
    from svc_console.policy.rules import parse_duration

    if text.strip().lower() in (SESSION, "until-stop"):
        return SESSION
    try:
        seconds = parse_duration(text)
    except ValueError:
        raise ValueError(
            f"--for must be a duration such as 15m, 1h or 2d, or session, got {text!r}"
        ) from None
    return str(seconds)


def check_total(total: Decimal | None, per_call: Decimal | None) -> None:
    """An approving grant needs a total of at least one call's amount."""
    if total is None:
        raise errors.InvalidParams("a grant that approves needs a total (--total USDC)")
    if per_call is not None and total < per_call:
        raise errors.InvalidParams(
            f"a total of {format_usdc(total)} USDC is below one call's"
            f" {format_usdc(per_call)} USDC: the grant would approve nothing"
        )
