"""Evaluation of one request against a compiled policy: deny wins; else the first auto-approve
rule whose conditions and budgets all hold approves; else the operator decides.

`CompiledPolicy` turns validated rules into lookups once (dictionaries, one regex per glob list,
budget checks bound to their buckets, auto-approve rules indexed by domain type), so evaluating
reads a few dictionaries and the rolling totals and never the ledger. The result is plain data
(`Evaluation`); `verdicts.py` turns it into the `Verdict` the ledger and the screens show, citing
every rule that decided or warned with the file and line it is written at.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from decimal import Decimal
from zoneinfo import ZoneInfo

from svc_console.core.money import format_usdc, to_atomic
from svc_console.policy import hours as time_windows
from svc_console.policy.budgets import WINDOW_SECONDS, RollingTotals
from svc_console.policy.checks import AutoRule, BudgetCheck, Cite, group_budgets, list_checks
from svc_console.policy.facts import Facts
from svc_console.policy.loader import LoadedPolicy
from svc_console.policy.matchers import InputScanner
from svc_console.policy.rules import SECRET_NAMES

_COMPUTE = {"breed_agent": "svc_breed_agent", "merge_models": "merge_models"}


class Evaluation:
    """What the policy found: the outcome, each rule that decided or warned, and the budgets the
    request counts in as (check, key, before, after) in atomic USDC."""

    __slots__ = ("citations", "impacts", "outcome", "rule")

    def __init__(self) -> None:
        self.outcome = "ask"  # or deny, auto_approve
        self.citations: list[Cite] = []
        self.impacts: list[tuple] = []
        self.rule: str | None = None  # the auto-approve rule that approved


class CompiledPolicy:
    def __init__(self, loaded: LoadedPolicy):
        rules, source = loaded.rules, loaded.source
        self.loaded = loaded
        self.sha256 = loaded.sha256
        self.confirm_above_usdc: Decimal | None = rules.confirm_above_usdc
        self.pending_ttl_s: float | None = rules.pending_lifetime
        self._tz = ZoneInfo(rules.timezone or "UTC")
        self._clock_minute, self._clock = -1, (0, 0)
        # Whether each list of windows (by id: the lists live as long as the policy) holds now.
        self._inside: dict[int, bool] = {}
        cap = rules.per_call_max_usdc
        self._cap = to_atomic(cap) if cap is not None else None
        self._deny = list_checks(rules.deny, "deny")
        self._allow = list_checks(rules.allow, "allow")
        self._require = rules.require
        self._compute = set(rules.compute_tools) if rules.compute_tools is not None else None
        self._no_dynamic = rules.dynamic_pricing is False
        self._hours = [time_windows.parse(text) for text in rules.hours] if rules.hours else None
        kinds = [(name, SECRET_NAMES[name]) for name in rules.never_send or ()]
        patterns = rules.never_send_patterns or {}
        self._scanner = InputScanner(kinds, patterns) if kinds or patterns else None
        self._source = source
        self.budgets = [
            BudgetCheck(budget, source.value(("budgets", i)), f"budgets[{i}]")
            for i, budget in enumerate(rules.budgets)
        ]
        self.auto = [
            AutoRule(
                rule.name,
                source.value(("auto_approve", i)),
                rule.when,
                [
                    BudgetCheck(b, source.value(("auto_approve", i, "budgets", j)), "", rule.name)
                    for j, b in enumerate(rule.budgets)
                ],
                self._in_hours,
            )
            for i, rule in enumerate(rules.auto_approve)
        ]
        self._budget_groups = group_budgets(self.budgets)
        # Auto-approve rules worth trying per domain type, in their written order.
        anywhere = [rule for rule in self.auto if rule.domains is None]
        self._auto_for: dict[str | None, list[AutoRule]] = {None: anywhere}
        for domain in {d for rule in self.auto for d in rule.domains or ()}:
            self._auto_for[domain] = [
                rule for rule in self.auto if rule.domains is None or domain in rule.domains
            ]
        self._auto_anywhere = anywhere

    # -- evaluation -------------------------------------------------------------------------------

    def evaluate(
        self, facts: Facts, totals: RollingTotals, now: float, *, auto_allowed: bool = True
    ) -> Evaluation:
        result = Evaluation()
        cites = result.citations
        self._deny_checks(facts, now, cites)
        impacts = result.impacts
        amount = facts.amount
        if now < totals.now:
            now = totals.now  # totals never run backwards, even if the wall clock does
        for group in self._budget_groups:
            key = group.key(facts)
            if key is None:
                continue
            bucket = totals.bucket((group.scope, key))
            for budget, window, warn, most in group.limits:
                if bucket is None:
                    before = 0
                else:  # inline of bucket.total(): this loop is the hot path of every request
                    queue = bucket.queues[window]
                    if queue and queue[0][0] <= now - WINDOW_SECONDS[window]:
                        bucket.expire(window, now)
                    before = bucket.sums[window]
                after = before + amount
                impact = (budget, key, before, after)
                impacts.append(impact)
                if most is not None and after > most:
                    cites.append(_budget_cite("deny", impact, "would pass its hard stop", most))
                elif warn is not None and after > warn:
                    cites.append(_budget_cite("warn", impact, "passes its warn level", warn))
        for cite in cites:
            if cite.effect == "deny":
                result.outcome = "deny"
                return result
        for rule in self._auto_for.get(facts.domain_type, self._auto_anywhere):
            if not rule.holds(facts, now):
                continue
            measured = [m for b in rule.budgets if (m := b.measure(facts, totals, now))]
            spent = next((m for m in measured if m[0].max is not None and m[3] > m[0].max), None)
            if spent is not None:
                cites.append(
                    _budget_cite(
                        "note", spent, "is spent, so it does not approve", spent[0].max, rule.name
                    )
                )
                continue
            if not auto_allowed:
                why = "would approve, but auto-approval is suspended until the policy is fixed"
                cites.append(Cite("note", rule.name, why, rule.where))
                return result
            result.outcome, result.rule = "auto_approve", rule.name
            impacts += measured
            cites.append(
                Cite("auto_approve", rule.name, "its conditions and budgets hold", rule.where)
            )
            return result
        return result

    def _deny_checks(self, facts: Facts, now: float, cites: list[Cite]) -> None:
        at = self._source
        if self._compute is not None and facts.kind in _COMPUTE:
            tool = _COMPUTE[facts.kind]
            if tool not in self._compute:
                where = at.key(("compute_tools",))
                cites.append(Cite("deny", "compute_tools", f"{tool} is not allowed", where))
        for key, first, second, found in self._deny:
            value = getattr(facts, first)
            index = found.find(value) if value is not None else None
            if index is None and second is not None:
                value = getattr(facts, second)
                index = found.find(value) if value is not None else None
            if index is not None:
                reason = f"{value} matches {found.entries[index]!r}"
                cites.append(Cite("deny", f"deny.{key}", reason, at.value(("deny", key, index))))
        for key, first, second, found in self._allow:
            value = getattr(facts, first)
            if value is None or found.find(value) is not None:
                continue
            other = getattr(facts, second) if second is not None else None
            if other is None or found.find(other) is None:
                reason = f"{value} is not in the list"
                cites.append(Cite("deny", f"allow.{key}", reason, at.key(("allow", key))))
        if self._require is not None and facts.verified is not None:
            self._require_checks(facts, cites)
        if self._cap is not None and facts.amount > self._cap:
            amount, cap = facts.amount, self._cap
            cites.append(
                Cite(
                    "deny",
                    "per_call_max_usdc",
                    lambda: f"may cost {_usdc(amount)} USDC, above the cap of {_usdc(cap)}",
                    at.key(("per_call_max_usdc",)),
                )
            )
        if self._no_dynamic and facts.dynamic:
            where = at.key(("dynamic_pricing",))
            cites.append(Cite("deny", "dynamic_pricing", "the price is dynamic", where))
        if self._hours is not None and not self._in_hours(self._hours, now):
            cites.append(Cite("deny", "hours", "outside the allowed hours", at.key(("hours",))))
        if self._scanner is not None:
            found = self._scanner.find(facts.inputs)
            if found is not None:
                path, name = found
                key = ("never_send",) if name in SECRET_NAMES else ("never_send_patterns", name)
                cites.append(Cite("deny", key[0], f"input {path} holds {name}", at.key(key)))

    def _require_checks(self, facts: Facts, cites: list[Cite]) -> None:
        require, at = self._require, self._source
        assert require is not None
        if require.verified and not facts.verified:
            where = at.key(("require", "verified"))
            cites.append(Cite("deny", "require.verified", "the provider is not verified", where))
        quality, least = facts.quality or 0.0, require.min_quality
        if least is not None and quality < least:
            where = at.key(("require", "min_quality"))
            reason = f"qualityScore {quality:.2f} is below {least}"
            cites.append(Cite("deny", "require.min_quality", reason, where))
        reliability, least = facts.reliability or 0.0, require.min_reliability
        if least is not None and reliability < least:
            where = at.key(("require", "min_reliability"))
            reason = f"reliability {reliability:.3f} is below {least}"
            cites.append(Cite("deny", "require.min_reliability", reason, where))

    def _in_hours(self, windows: Sequence[time_windows.Window], now: float) -> bool:
        minute = int(now // 60)
        if minute != self._clock_minute:  # the local day and time change once a minute
            local = dt.datetime.fromtimestamp(now, self._tz)
            self._clock = (local.weekday(), local.hour * 60 + local.minute)
            self._clock_minute = minute
            self._inside.clear()
        inside = self._inside.get(id(windows))
        if inside is None:
            weekday, minute_of_day = self._clock
            inside = any(window.contains(weekday, minute_of_day) for window in windows)
            self._inside[id(windows)] = inside
        return inside


def _usdc(atomic: int) -> str:
    return format_usdc(Decimal(atomic).scaleb(-6))


def _budget_cite(
    effect: str, impact: tuple, what: str, limit: int, rule: str | None = None
) -> Cite:
    check, key, before, after = impact

    def reason() -> str:
        return (
            f"{check.label_for(key)} {what}: {_usdc(before)} → {_usdc(after)}"
            f" of {_usdc(limit)} USDC"
        )

    return Cite(effect, rule or check.path or check.label, reason, check.where)
