"""Trying a draft policy on past requests before it goes live (`svc-console policy simulate`).

Requests are replayed in the order they came, against the draft and against budget totals of the
world the draft would have made: what the draft denies never counts, what it approves counts at
what was charged (or, for a request that was never paid, at its estimate). Spend from before the
period (one longest window back) warms the totals up, so a monthly budget starts where it stood.

What it cannot know it says: the operator's answer to a request the draft would send them is
assumed to be the one they gave (or, for a request that was approved automatically, to approve).
The draft's brakes count the replayed requests as they would have: an agent its circuit breaker
pauses stays paused for the rest of the period (no operator resumes it in a replay).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from svc_console.core.buckets import buckets_for, slot_of
from svc_console.core.money import format_usdc, to_atomic
from svc_console.policy.brakes import FAILURES, SUCCESS
from svc_console.policy.budgets import LONGEST, RollingTotals
from svc_console.policy.engine import CompiledPolicy
from svc_console.policy.facts import facts_of_record
from svc_console.policy.loader import LoadedPolicy
from svc_console.policy.verdicts import cited, to_verdict

_SINCE = re.compile(r"^\s*(\d+)\s*([hdw])\s*$")
_UNITS = {"h": 3600, "d": 86_400, "w": 7 * 86_400}
# States in which money moved (or may have) on the request's approval.
_PAID = {"succeeded", "unknown"}
MAX_LISTED = 200


def parse_since(text: str) -> int:
    """`30d`, `12h`, `2w` in seconds; raises ValueError."""
    match = _SINCE.match(text)
    if match is None or int(match[1]) == 0:
        raise ValueError(f"--since must be a period such as 30d, 12h or 2w, got {text!r}")
    return int(match[1]) * _UNITS[match[2]]


@dataclass
class Change:
    request_id: str
    agent: str
    endpoint: str
    at: float
    amount: int  # atomic USDC: charged, or the estimate's ceiling when nothing was charged
    was: str
    now: str  # what the draft says: its verdict summary


@dataclass
class BudgetHit:
    budget: str
    rule: str  # `budgets[0] (SKILLS.md:12)`
    denied: int = 0
    warned: int = 0
    first_at: float | None = None


@dataclass
class Simulation:
    since: float
    until: float
    replayed: int = 0
    newly_denied: list[Change] = field(default_factory=list)
    newly_auto_approved: list[Change] = field(default_factory=list)
    now_asks_operator: list[Change] = field(default_factory=list)
    budgets: dict[str, BudgetHit] = field(default_factory=dict)
    moved_actual: int = 0  # atomic USDC charged in the period
    moved_draft: int = 0  # what would have been charged under the draft
    counts: dict[str, int] = field(default_factory=dict)  # newly denied etc., beyond the lists
    paused: list[tuple[str, float, str]] = field(default_factory=list)  # agent, when, why

    @property
    def difference(self) -> int:
        return self.moved_draft - self.moved_actual

    def as_json(self) -> dict[str, Any]:
        def change(c: Change) -> dict[str, Any]:
            return {**c.__dict__, "amount_usdc": _usdc(c.amount)}

        return {
            "since": self.since,
            "until": self.until,
            "replayed": self.replayed,
            "newly_denied": [change(c) for c in self.newly_denied],
            "newly_auto_approved": [change(c) for c in self.newly_auto_approved],
            "now_asks_operator": [change(c) for c in self.now_asks_operator],
            "counts": self.counts,
            "budgets_hit": [hit.__dict__ for hit in self.budgets.values()],
            "paused_agents": [
                {"agent": agent, "at": at, "reason": why} for agent, at, why in self.paused
            ],
            "usdc_moved_actual": _usdc(self.moved_actual),
            "usdc_moved_draft": _usdc(self.moved_draft),
            "usdc_difference": _usdc(self.difference),
        }


def simulate(draft: LoadedPolicy, past: Iterable[Any], *, since: float, until: float) -> Simulation:
    """`past`: records like `ledger.replay.PastRequest`, oldest first, from one longest window
    before `since` (the warm-up) to `until`."""
    policy = CompiledPolicy(draft)
    totals = RollingTotals()
    report = Simulation(since, until)
    counts = {"newly_denied": 0, "newly_auto_approved": 0, "now_asks_operator": 0}
    brakes, paused = policy.brakes, dict[str, str]()
    for record in past:
        at = record.created_at
        facts = facts_of_record(record)
        was = _actual(record)
        charged = record.charged or 0
        if at < since:  # warm-up: what really moved counts in the windows that reach the period
            if was in ("auto_approved", "approved") or record.state in _PAID:
                _count(totals, facts, at, charged or facts.amount, None)
            if at >= since - brakes.horizon and record.verdict is not None:
                tally = brakes.tally(facts)
                brakes.count(tally, record.id, at, denied=was == "denied_by_policy")
            continue
        report.replayed += 1
        report.moved_actual += charged
        agent = facts.agent  # as the brakes count it: (unverified) for any unverified agent
        result = policy.evaluate(facts, totals, at, brakes=True, paused=paused.get(agent))
        brakes.count(result.tally, record.id, at, denied=result.outcome == "deny")
        failed = _failed(result.outcome, was, record.state)
        why = brakes.ended(agent, failed, at) if failed is not None else None
        if why is not None and agent not in paused:
            paused[agent] = why
            report.paused.append((agent, at, why))
        verdict = to_verdict(result) if result.outcome != "ask" or result.citations else None
        summary = verdict.summary if verdict else "the operator decides"
        _note_budgets(report, policy, result, at)
        moved = 0
        paid_before = record.state in _PAID or was in ("approved", "auto_approved")
        if result.outcome == "deny":
            if was != "denied_by_policy":
                _list(report.newly_denied, counts, "newly_denied", record, facts, at, was, summary)
        elif result.outcome == "auto_approve":
            moved = charged if record.state in _PAID else _estimate(record, facts)
            if was != "auto_approved":
                changes = report.newly_auto_approved
                _list(changes, counts, "newly_auto_approved", record, facts, at, was, summary)
        else:
            if was == "auto_approved":
                changes = report.now_asks_operator
                _list(changes, counts, "now_asks_operator", record, facts, at, was, summary)
            moved = charged if paid_before else 0
        if moved:
            _count(totals, facts, at, moved, result.rule)
        report.moved_draft += moved
    report.counts = counts
    return report


def warmup_start(since: float) -> float:
    return since - LONGEST


def _actual(record: Any) -> str:
    """What really happened to a request, in the terms of the comparison."""
    verdict = record.verdict or {}
    if record.approved is True:
        by = record.decided_by or ""
        return "auto_approved" if by.startswith("policy") else "approved"
    if record.approved is False:
        return "operator_denied"
    if record.state == "denied" and verdict.get("outcome") == "deny":
        return "denied_by_policy"
    return record.state  # pending, expired, cancelled, rejected...


def _failed(outcome: str, was: str, state: str) -> bool | None:
    """Whether the request failed under the draft (for the circuit breaker), None when unknown:
    a request the draft lets go on that really was denied by a rule never ran."""
    if outcome == "deny":
        return True
    if was == "denied_by_policy":
        return None
    if state in FAILURES:
        return True
    return False if state == SUCCESS else None


def _estimate(record: Any, facts: Any) -> int:
    amount = record.estimate.get("amount_usdc")
    return min(to_atomic(Decimal(str(amount))), facts.amount) if amount else facts.amount


def _count(totals: RollingTotals, facts: Any, at: float, amount: int, rule: str | None) -> None:
    buckets = buckets_for(facts.agent, facts.provider, facts.domain_type, rule)
    totals.apply([(buckets, slot_of(at), amount)], at)


def _note_budgets(report: Simulation, policy: CompiledPolicy, result: Any, at: float) -> None:
    labels = {check.path: check.label for check in policy.budgets}
    for cite in result.citations:
        if cite.effect not in ("deny", "warn") or cite.rule not in labels:
            continue
        key = cited(cite.rule, cite.where)
        hit = report.budgets.setdefault(key, BudgetHit(labels[cite.rule], key))
        if cite.effect == "deny":
            hit.denied += 1
        else:
            hit.warned += 1
        if hit.first_at is None:
            hit.first_at = at


def _list(
    changes: list[Change],
    counts: dict[str, int],
    name: str,
    record: Any,
    facts: Any,
    at: float,
    was: str,
    summary: str,
) -> None:
    counts[name] += 1
    if len(changes) < MAX_LISTED:
        amount = record.charged if record.charged else facts.amount
        changes.append(
            Change(record.id, record.agent, facts.endpoint or "-", at, amount, was, summary)
        )


def _usdc(atomic: int) -> str:
    return format_usdc(Decimal(atomic).scaleb(-6))
