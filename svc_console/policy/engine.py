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
from collections.abc import Callable, Sequence
from decimal import Decimal
from typing import Any
from zoneinfo import ZoneInfo

from svc_console.core.money import format_usdc, to_atomic
from svc_console.policy import hotpath
from svc_console.policy import hours as time_windows
from svc_console.policy.brakes import Brakes
from svc_console.policy.budgets import WINDOW_NAMES, RollingTotals
from svc_console.policy.checks import (
    AutoRule,
    BudgetCheck,
    BudgetGroup,
    Cite,
    group_budgets,
    list_checks,
)
from svc_console.policy.facts import Facts
from svc_console.policy.grants import GrantBook
from svc_console.policy.loader import LoadedPolicy
from svc_console.policy.matchers import KNOWN_MAX, MISSING, InputScanner
from svc_console.policy.rules import SECRET_NAMES

_COMPUTE = {"breed_agent": "svc_breed_agent", "merge_models": "merge_models"}
WINDOWS = len(WINDOW_NAMES)
_REQUIRE_KEYS = ("verified", "min_quality", "min_reliability", "authenticated_agent")


class Evaluation:
    """What the policy found: the outcome, each rule that decided or warned, and the budgets the
    request counts in (`figures()`)."""

    __slots__ = ("amount", "citations", "impacts", "outcome", "reads", "rule", "tally")

    def __init__(self, amount: int = 0) -> None:
        self.amount = amount  # atomic USDC: what the request counts as in each budget
        self.outcome = "ask"  # or deny, auto_approve
        self.citations: list[Cite] = []
        # Each budget group the request counts in: (group, key, its windows' sums before it).
        self.reads: list[tuple[BudgetGroup, str, list[int]]] = []
        # The approving rule's own budgets, as (check, key, before, after).
        self.impacts: list[tuple] = []
        self.rule: str | None = None  # the auto-approve rule that approved
        self.tally: Any = ([], None)  # what the request counts in (the brakes' counts)

    def figures(self) -> list[tuple]:
        """Every budget the request counts in, as (check, key, before, after) in atomic USDC:
        the policy's budgets, then the approving rule's."""
        amount = self.amount
        return [
            (check, key, sums[window], sums[window] + amount)
            for group, key, sums in self.reads
            for check, window, _warn, _most in group.limits
        ] + self.impacts


class CompiledPolicy:
    def __init__(self, loaded: LoadedPolicy, *, generated: bool = True):
        """`generated=False` keeps the interpreted lists and budgets (the reference the
        generated hot path is tested against)."""
        rules, source = loaded.rules, loaded.source
        self.loaded = loaded
        self.sha256 = loaded.sha256
        self.confirm_above_usdc: Decimal | None = rules.confirm_above_usdc
        two = rules.two_person
        self.two_person_above_usdc: Decimal | None = two.above_usdc if two else None
        self._two_person = to_atomic(two.above_usdc) if two else None
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
        # Where each rule is written, looked up once here rather than when a request hits it.
        self._where = {
            **{("allow", key): source.key(("allow", key)) for key, *_ in self._allow},
            **{
                ("deny", key, index): source.value(("deny", key, index))
                for key, _, _, found in self._deny
                for index in range(len(found.entries))
            },
            **{("require", k): source.key(("require", k)) for k in _REQUIRE_KEYS},
        }
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
        self.brakes = Brakes(rules, source)
        # Auto-approve rules worth trying per domain type, in their written order.
        anywhere = [rule for rule in self.auto if rule.domains is None]
        self._auto_for: dict[str | None, list[AutoRule]] = {None: anywhere}
        for domain in {d for rule in self.auto for d in rule.domains or ()}:
            self._auto_for[domain] = [
                rule for rule in self.auto if rule.domains is None or domain in rule.domains
            ]
        self._auto_anywhere = anywhere
        # The rules a request's names and domain type let it reach, by those facts (see
        # `_reachable`): most requests reach none or one of many rules.
        self._reach: dict[tuple, tuple[AutoRule, ...]] = {}
        if generated:
            self._lists = hotpath.list_checks(self)
            self._budgets = hotpath.budget_checks(self)
            self._reachable = self._indexed
        else:
            self._lists, self._budgets = self._list_checks, self._budget_checks
            self._reachable = self._in_order

    # -- evaluation -------------------------------------------------------------------------------

    def evaluate(
        self,
        facts: Facts,
        totals: RollingTotals,
        now: float,
        *,
        auto_allowed: bool = True,
        brakes: bool = False,
        paused: str | None = None,
        grants: GrantBook | None = None,
    ) -> Evaluation:
        """`brakes`: judge a new request by the brakes too (rate limits, repeats, velocity), not
        an operator's approval of one already queued; `paused`: why the agent is paused, if it
        is (its requests wait for the operator, whatever an auto-approve rule says); `grants`:
        the operator's standing decisions, tried before the auto-approve rules."""
        result = Evaluation(facts.amount)
        cites = result.citations
        self._lists(facts, cites)
        self._deny_checks(facts, now, cites)
        if now < totals.now:
            now = totals.now  # totals never run backwards, even if the wall clock does
        self._budgets(facts, totals, now, cites, result.reads)
        if brakes:
            result.tally = self.brakes.check(facts, totals, now, cites)
        if paused is not None:
            why = f"agent {facts.agent}'s rules are paused ({paused}) until an operator resumes it"
            where = self.brakes.where("circuit_breaker")
            cites.append(Cite("ask", "circuit_breaker", why, where))
        if self._two_person is not None and facts.amount > self._two_person:
            # Before grants and auto-approve rules: two operators approve, never a rule.
            cites.append(self._two_person_cite())
        if grants is not None:
            grants.denies(facts, now, cites)
        asked = False
        for cite in cites:
            if cite.effect == "deny":
                result.outcome = "deny"
                return result
            asked = asked or cite.effect == "ask"
        if asked:
            return result
        if grants is not None and (grant := grants.approves(facts, now, cites)) is not None:
            result.outcome, result.rule = "auto_approve", grant.rule
            return result
        for rule in self._reachable(facts):
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
            result.impacts += measured
            cites.append(
                Cite("auto_approve", rule.name, "its conditions and budgets hold", rule.where)
            )
            return result
        return result

    def _in_order(self, facts: Facts) -> list[AutoRule]:
        """The auto-approve rules, in their written order, whose domain types and lists of
        agents, providers and endpoints hold for the request (unindexed: the reference)."""
        domain = facts.domain_type
        return [
            rule
            for rule in self.auto
            if (rule.domains is None or domain in rule.domains) and rule.named(facts)
        ]

    def _indexed(self, facts: Facts) -> tuple[AutoRule, ...]:
        """`_in_order`, by an index: those rules depend on the request's domain type and names
        alone, so they are found once for each combination seen (bounded, emptied when full)."""
        key = (facts.domain_type, facts.agent, facts.provider, facts.provider_name, facts.endpoint)
        found = self._reach.get(key)
        if found is None:
            if len(self._reach) >= KNOWN_MAX:
                self._reach.clear()
            rules = self._auto_for.get(facts.domain_type, self._auto_anywhere)
            found = self._reach[key] = tuple(rule for rule in rules if rule.named(facts))
        return found

    def _two_person_cite(self) -> Cite:
        above = format_usdc(self.two_person_above_usdc or Decimal(0))
        why = f"above {above} USDC two different operators approve; no rule or grant does"
        return Cite("ask", "two_person", why, self._source.key(("two_person",)))

    def _list_checks(self, facts: Facts, cites: list[Cite]) -> None:
        """The allow and deny lists (interpreted; `hotpath.list_checks` writes this out). Each
        list is read through the dict of values it has already looked up."""
        for key, first, second, found in self._deny:
            value = getattr(facts, first)
            index = None
            if value is not None:
                index = found.known.get(value, MISSING)
                if index is MISSING:
                    index = found.find(value)
            if index is None and second is not None:
                value = getattr(facts, second)
                if value is not None:
                    index = found.known.get(value, MISSING)
                    if index is MISSING:
                        index = found.find(value)
            if index is not None:
                self._cite_list("deny", key, value, found, index, cites)
        for key, first, second, found in self._allow:
            value = getattr(facts, first)
            if value is None:
                continue
            index = found.known.get(value, MISSING)
            if index is MISSING:
                index = found.find(value)
            if index is None:
                other = getattr(facts, second) if second is not None else None
                if other is None or found.find(other) is None:
                    self._cite_list("allow", key, value, found, None, cites)

    def _budget_checks(
        self, facts: Facts, totals: RollingTotals, now: float, cites: list, reads: list
    ) -> None:
        """Each budget group's sums, and a citation of each limit passed (interpreted;
        `hotpath.budget_checks` writes this out)."""
        amount = facts.amount
        for group in self._budget_groups:
            key = group.key(facts)
            if key is None:
                continue
            bucket = totals.bucket((group.scope, key))
            sums = [bucket.total(w, now) if bucket is not None else 0 for w in range(WINDOWS)]
            reads.append((group, key, sums))
            for check, window, warn, most in group.limits:
                before = sums[window]
                if (most is not None and before + amount > most) or (
                    warn is not None and before + amount > warn
                ):
                    self._limit_cite(check, key, before, amount, cites)

    @staticmethod
    def _limit_cite(check: BudgetCheck, key: str, before: int, amount: int, cites: list) -> None:
        """The citation of a budget the request would pass: its hard stop, or its warn level."""
        impact = (check, key, before, before + amount)
        if check.max is not None and before + amount > check.max:
            cites.append(_budget_cite("deny", impact, "would pass its hard stop", check.max))
        elif check.warn is not None:
            cites.append(_budget_cite("warn", impact, "passes its warn level", check.warn))

    def _deny_checks(self, facts: Facts, now: float, cites: list[Cite]) -> None:
        """The checks that are not lists: compute tools, provider quality, the per-call cap,
        dynamic pricing, hours, the inputs."""
        if self._compute is not None and facts.kind in _COMPUTE:
            tool = _COMPUTE[facts.kind]
            if tool not in self._compute:
                where = self._source.key(("compute_tools",))
                cites.append(Cite("deny", "compute_tools", f"{tool} is not allowed", where))
        require = self._require
        if require is not None and require.authenticated_agent and not facts.agent_verified:
            reason = f"agent {facts.claimed or facts.agent} did not prove its name (not registered)"
            self._cite_require("authenticated_agent", reason, cites)
        if require is not None and facts.verified is not None:
            if require.verified and not facts.verified:
                self._cite_require("verified", "the provider is not verified", cites)
            least = require.min_quality
            quality = facts.quality or 0.0
            if least is not None and quality < least:
                text = f"qualityScore {quality:.2f} is below {least}"
                self._cite_require("min_quality", text, cites)
            least_r = require.min_reliability
            reliability = facts.reliability or 0.0
            if least_r is not None and reliability < least_r:
                text = f"reliability {reliability:.3f} is below {least_r}"
                self._cite_require("min_reliability", text, cites)
        cap = self._cap
        if cap is not None and facts.amount > cap:
            amount = facts.amount
            cites.append(
                Cite(
                    "deny",
                    "per_call_max_usdc",
                    lambda: f"may cost {_usdc(amount)} USDC, above the cap of {_usdc(cap)}",
                    self._source.key(("per_call_max_usdc",)),
                )
            )
        if self._no_dynamic and facts.dynamic:
            where = self._source.key(("dynamic_pricing",))
            cites.append(Cite("deny", "dynamic_pricing", "the price is dynamic", where))
        if self._hours is not None and not self._in_hours(self._hours, now):
            where = self._source.key(("hours",))
            cites.append(Cite("deny", "hours", "outside the allowed hours", where))
        if self._scanner is not None:
            hit = self._scanner.find(facts.inputs)
            if hit is not None:
                path, name = hit
                key = ("never_send",) if name in SECRET_NAMES else ("never_send_patterns", name)
                where = self._source.key(key)
                cites.append(Cite("deny", key[0], f"input {path} holds {name}", where))

    def _cite_list(
        self, side: str, key: str, value: str, found: Any, index: int | None, cites: list
    ) -> None:
        if side == "deny":
            entry = found.entries[index]
            where = self._where.get(("deny", key, index)) or self._source.value(
                ("deny", key, index)
            )
            cites.append(Cite("deny", f"deny.{key}", lambda: f"{value} matches {entry!r}", where))
        else:
            where = self._where[("allow", key)]
            cites.append(Cite("deny", f"allow.{key}", lambda: f"{value} is not in the list", where))

    def _cite_require(self, key: str, reason: str | Callable[[], str], cites: list[Cite]) -> None:
        cites.append(Cite("deny", f"require.{key}", reason, self._where[("require", key)]))

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
