"""Grants: an operator's decision that stands for a while ("approve calls like this one for an
hour, up to 2 USDC in all"; "deny them until the console stops").

A grant names one agent and one thing it asks for (an endpoint, a dataset or a compute tool). An
approving grant approves a request of that agent for that thing that costs at most what the
operator approved (`per_call_max`), while what it approved in all (reserved and settled, as
budgets count) stays within `total`; a denying grant denies them. Grants are cited in verdicts as
rules are. Deny rules, budgets' hard stops and the brakes are judged first: a grant widens nothing
the policy forbids. A grant ends when its time is up, when the console stops (a grant "until the
console stops"), or when an operator revokes it.

`GrantBook` holds the grants in force and what each has approved, following the ledger's budget
changes as the rolling totals do; like them it is read and changed on the broker's loop only, with
no pause between a check and the reservation it leads to, so concurrent requests cannot pass a
grant's total together.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal

from svc_console.core.buckets import Change
from svc_console.core.money import format_usdc
from svc_console.policy.checks import Cite
from svc_console.policy.facts import Facts

PREFIX = "grant:"  # the budget rule of what a grant approved: `grant:7`


@dataclass(frozen=True)
class Grant:
    id: int
    agent: str
    kind: str
    target: str  # the endpoint, dataset or tool (`Facts.endpoint`)
    effect: str  # approve or deny
    per_call_max: int  # atomic USDC: the most one call may cost (approve)
    total: int | None  # atomic USDC: the most it approves in all (approve)
    expires_at: float | None  # None: until the console stops
    created_at: float
    by: str
    request_id: str

    @property
    def rule(self) -> str:
        return f"{PREFIX}{self.id}"

    def until(self) -> str:
        if self.expires_at is None:
            return "until the console stops"
        return "until " + dt.datetime.fromtimestamp(self.expires_at, dt.UTC).strftime("%H:%M UTC")


def grant_name(rule: str) -> str:
    """`grant:7` as verdicts and decisions name it: `grant 7`."""
    return rule.replace(PREFIX, "grant ", 1)


def grant_id(rule: str | None) -> int | None:
    """The grant a budget rule names (`grant:7`), or None."""
    if rule is None or not rule.startswith(PREFIX):
        return None
    return int(rule.removeprefix(PREFIX))


class GrantBook:
    def __init__(self) -> None:
        self._by_key: dict[tuple[str, str, str], list[Grant]] = {}
        self._grants: dict[int, Grant] = {}
        self.used: dict[int, int] = {}  # atomic USDC reserved and settled under each grant

    def load(self, grants: Iterable[tuple[Grant, int]]) -> None:
        for grant, used in grants:
            self.add(grant, used)

    def add(self, grant: Grant, used: int = 0) -> None:
        self._grants[grant.id] = grant
        self._by_key.setdefault((grant.agent, grant.kind, grant.target), []).append(grant)
        self.used[grant.id] = used

    def end(self, grant_id: int) -> None:
        grant = self._grants.pop(grant_id, None)
        if grant is None:
            return
        key = (grant.agent, grant.kind, grant.target)
        kept = [g for g in self._by_key.get(key, ()) if g.id != grant_id]
        if kept:
            self._by_key[key] = kept
        else:
            self._by_key.pop(key, None)
        self.used.pop(grant_id, None)

    def apply(self, changes: Iterable[Change]) -> None:
        """Follow the ledger's committed budget changes: those in a grant's buckets are its own."""
        for buckets, _slot, delta in changes:
            for scope, _key in buckets:
                if scope.startswith("auto:" + PREFIX) and scope.endswith("/overall"):
                    found = grant_id(scope[len("auto:") : -len("/overall")])
                    if found is not None and found in self.used:
                        self.used[found] += delta

    def _live(self, facts: Facts, now: float) -> list[Grant]:
        found = self._by_key.get((facts.agent, facts.kind, facts.endpoint or "")) or ()
        return [g for g in found if g.expires_at is None or now < g.expires_at]

    def denies(self, facts: Facts, now: float, cites: list[Cite]) -> Grant | None:
        """A denying grant for this request (cited), or None."""
        if not self._by_key:
            return None
        for grant in self._live(facts, now):
            if grant.effect == "deny":
                why = f"denied by the operator ({grant.by}), {grant.until()}"
                cites.append(Cite("deny", f"grant {grant.id}", why, None))
                return grant
        return None

    def approves(self, facts: Facts, now: float, cites: list[Cite]) -> Grant | None:
        """The oldest approving grant with room for this request (cited), or None; one without
        room is cited as a note, saying why."""
        if not self._by_key:
            return None
        for grant in self._live(facts, now):
            if grant.effect != "approve":
                continue
            used = self.used.get(grant.id, 0)
            if facts.amount > grant.per_call_max:
                why = (
                    f"may cost {_usdc(facts.amount)} USDC, above the {_usdc(grant.per_call_max)}"
                    " a call it approves"
                )
                cites.append(Cite("note", f"grant {grant.id}", why, None))
                continue
            if grant.total is not None and used + facts.amount > grant.total:
                why = (
                    f"has approved {_usdc(used)} of its {_usdc(grant.total)} USDC: this call"
                    " would pass it"
                )
                cites.append(Cite("note", f"grant {grant.id}", why, None))
                continue
            total = f" of {_usdc(grant.total)}" if grant.total is not None else ""
            why = (
                f"the operator's grant ({grant.by}), {grant.until()}: {_usdc(used)}{total} USDC"
                " approved before this call"
            )
            cites.append(Cite("auto_approve", grant.rule, why, None))
            return grant
        return None

    def active(self) -> list[Grant]:
        return sorted(self._grants.values(), key=lambda g: g.id)


def _usdc(atomic: int) -> str:
    return format_usdc(Decimal(atomic).scaleb(-6))
