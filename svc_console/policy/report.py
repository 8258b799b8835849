"""A policy in words, for people: what a valid policy does (`policy check`), why a request got
its verdict (`policy explain`), and what a draft would have changed (`policy simulate`). The CLI
prints these lines and the policies screen shows them; every text that came from a policy file or
the ledger is made inert here.
"""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

from svc_console.core.money import format_usdc, from_atomic
from svc_console.core.sanitize import inert_line
from svc_console.core.wording import plural
from svc_console.policy.brakes import unsuccessful
from svc_console.policy.facts import Facts
from svc_console.policy.rules import LIST_KEYS


def summary(loaded: Any) -> list[str]:
    """What a valid policy does, in a few lines."""
    rules = loaded.rules
    names = ", ".join(f.name for f in loaded.files)
    blocks = len(loaded.blocks)
    lines = [
        f"{names}: valid · {blocks} block{'s' if blocks > 1 else ''} · sha256 {loaded.sha256[:12]}"
    ]
    if rules.per_call_max_usdc is not None:
        lines.append(f"  per call: at most {format_usdc(rules.per_call_max_usdc)} USDC")
    for budget in rules.budgets:
        per = "overall" if budget.per == "overall" else f"per {budget.per}"
        only = f" for {', '.join(budget.for_)}" if budget.for_ else ""
        limits = []
        if budget.warn_usdc is not None:
            limits.append(f"warn {format_usdc(budget.warn_usdc)}")
        if budget.max_usdc is not None:
            limits.append(f"stop {format_usdc(budget.max_usdc)}")
        name = f"{budget.name!r}, " if budget.name else ""
        lines.append(f"  budget {name}{budget.window} {per}{only}: {', '.join(limits)} USDC")
    for side in ("deny", "allow"):
        lists = getattr(rules, side)
        for key in LIST_KEYS if lists is not None else ():
            entries = getattr(lists, key)
            if entries is not None:
                lines.append(f"  {side} {key}: {', '.join(entries) or '(none)'}")
    if rules.require is not None:
        required = rules.require.model_dump(mode="json", exclude_none=True)
        lines.append(f"  require: {_conditions(required)}")
    if rules.never_send or rules.never_send_patterns:
        kinds = [*(rules.never_send or []), *(rules.never_send_patterns or {})]
        lines.append(f"  never send: {', '.join(kinds)}")
    if rules.hours:
        lines.append(f"  hours: {'; '.join(rules.hours)} ({rules.timezone or 'UTC'})")
    if rules.compute_tools is not None:
        lines.append(f"  compute tools allowed: {', '.join(rules.compute_tools) or 'none'}")
    if rules.dynamic_pricing is False:
        lines.append("  dynamic pricing: denied")
    for rule in rules.auto_approve:
        conditions = _conditions(rule.when.model_dump(mode="json", exclude_none=True))
        own = f" (its own budgets: {len(rule.budgets)})" if rule.budgets else ""
        lines.append(f"  auto-approve {rule.name!r}: {conditions}{own}")
    if not rules.auto_approve:
        lines.append("  auto-approve: nothing (the operator decides what is not denied)")
    if rules.confirm_above_usdc is not None:
        lines.append(f"  typed confirmation above {format_usdc(rules.confirm_above_usdc)} USDC")
    if rules.two_person is not None:
        lines.append(
            f"  two operators approve above {format_usdc(rules.two_person.above_usdc)} USDC"
            " (never the one who registered the agent; no rule or grant approves)"
        )
    if rules.pending_lifetime is not None:
        lines.append(f"  pending requests live {_duration(rules.pending_lifetime)}")
    return lines + _brakes(rules)


def _brakes(rules: Any) -> list[str]:
    lines = []
    for limit in rules.rate_limits:
        per = "overall" if limit.per == "overall" else f"per {limit.per}"
        name = f"{limit.name!r}, " if limit.name else ""
        lines.append(
            f"  rate limit {name}{per}: {limit.max_requests} requests in"
            f" {_duration(limit.window)}, then {limit.then}"
        )
    if rules.repeats is not None:
        same = rules.repeats
        lines.append(
            f"  repeats: {same.max_same} identical calls in {_duration(same.window)},"
            f" then {same.then}"
        )
    if rules.circuit_breaker is not None:
        breaker = rules.circuit_breaker
        lines.append(
            f"  circuit breaker: {unsuccessful(breaker.failures)} within"
            f" {_duration(breaker.window)} pause the agent's rules"
        )
    if rules.velocity is not None:
        fast = rules.velocity
        lines.append(
            f"  velocity per {fast.per}: ask above {fast.factor:g} times the usual spend in"
            f" {_duration(fast.window)}"
        )
    return lines


def _conditions(values: dict[str, Any]) -> str:
    def shown(value: Any) -> str:
        if isinstance(value, list):
            return ", ".join(str(item) for item in value)
        return json.dumps(value) if isinstance(value, bool) else str(value)

    return "; ".join(f"{key} {shown(value)}" for key, value in values.items())


def _duration(seconds: int) -> str:
    for unit, size in (("d", 86_400), ("h", 3600), ("m", 60)):
        if seconds % size == 0:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def explain_lines(verdict: Any, policy: Any, facts: Facts, note: str | None) -> list[str]:
    lines = [f"verdict: {verdict.outcome}", f"  {inert_line(verdict.summary, 300)}"]
    if note:
        lines.append(f"  ({note})")
    if verdict.citations:
        lines.append("rules:")
        for cite in verdict.citations:
            where = f" ({cite.file}:{cite.line})" if cite.line else ""
            lines.append(inert_line(f"  {cite.effect:<12} {cite.rule}{where} · {cite.reason}", 300))
    if verdict.budgets:
        lines.append("budgets (reserved and settled, before → after this request):")
        for budget in verdict.budgets:
            limits = []
            if budget.max_usdc is not None:
                limits.append(f"stop {format_usdc(budget.max_usdc)}")
            if budget.warn_usdc is not None:
                limits.append(f"warn {format_usdc(budget.warn_usdc)}")
            text = (
                f"  {budget.budget}: {format_usdc(budget.before_usdc)} → "
                f"{format_usdc(budget.after_usdc)} USDC ({', '.join(limits)}) "
                f"{budget.file}:{budget.line}"
            )
            lines.append(inert_line(text, 300))
    if policy.confirm_above_usdc is not None and verdict.outcome == "ask":
        amount = from_atomic(facts.amount)
        if amount > policy.confirm_above_usdc:
            lines.append(
                f"approving asks the operator to type the amount ({format_usdc(amount)} USDC)"
            )
    two = getattr(policy, "two_person_above_usdc", None)
    if two is not None and verdict.outcome == "ask" and from_atomic(facts.amount) > two:
        lines.append(
            "approving takes two different operators, neither the one who registered the agent"
        )
    return lines


def simulation_lines(report: Any, since_text: str) -> list[str]:

    data = report.as_json()
    counts = data["counts"]
    lines = [
        f"replayed {plural(report.replayed, 'request')} of the last {since_text} against the draft",
        f"  newly denied:          {counts['newly_denied']}",
        f"  newly auto-approved:   {counts['newly_auto_approved']}",
        f"  now asking operator:   {counts['now_asks_operator']}",
        f"  USDC moved: {data['usdc_moved_actual']} actually, {data['usdc_moved_draft']} under the"
        f" draft (difference {data['usdc_difference']})",
    ]
    for title, key in (
        ("would now be denied", "newly_denied"),
        ("would now be approved automatically", "newly_auto_approved"),
        ("would now wait for the operator", "now_asks_operator"),
    ):
        if data[key]:
            lines.append(f"{title}:")
            for change in data[key]:
                lines.append(
                    inert_line(
                        f"  {change['request_id']} {change['agent']} {change['endpoint']}"
                        f" {change['amount_usdc']} USDC (was {change['was']}): {change['now']}",
                        300,
                    )
                )
            more = counts[key] - len(data[key])
            if more > 0:
                lines.append(f"  ... and {more} more")
    if data["budgets_hit"]:
        lines.append("budgets that would have been hit:")
        for hit in data["budgets_hit"]:
            lines.append(
                inert_line(
                    f"  {hit['rule']} {hit['budget']}: denied {hit['denied']},"
                    f" warned {hit['warned']}",
                    300,
                )
            )
    if data["paused_agents"]:
        lines.append("agents the circuit breaker would have paused (for the rest of the period):")
        for pause in data["paused_agents"]:
            when = dt.datetime.fromtimestamp(pause["at"], dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
            lines.append(inert_line(f"  {pause['agent']} at {when}: {pause['reason']}", 300))
    return lines
