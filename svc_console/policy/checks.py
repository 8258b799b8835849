"""The compiled pieces of a policy: list lookups, budget checks bound to their buckets, and the
conditions of auto-approve rules as small functions ordered cheapest first.

Built once per policy version; `engine.py` runs them. What a check found is kept as data (a
`Cite`, an impact tuple) and turned into words only when a verdict is written.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from svc_console.core.buckets import Bucket, rule_scope
from svc_console.core.money import to_atomic
from svc_console.policy import hours as time_windows
from svc_console.policy.budgets import WINDOW_INDEX, RollingTotals
from svc_console.policy.errors import Where
from svc_console.policy.facts import Facts
from svc_console.policy.matchers import KNOWN_MAX, Matcher
from svc_console.policy.rules import LIST_KEYS, Budget, When

# Which facts each list is matched against (providers: by id or by name).
LIST_FACTS: dict[str, tuple[str, ...]] = {
    "agents": ("agent",),
    "providers": ("provider", "provider_name"),
    "endpoints": ("endpoint",),
    "kinds": ("kind",),
    "domain_types": ("domain_type",),
    "product_classes": ("product_class",),
    "chains": ("chain",),
    "protocols": ("protocol",),
    "tiers": ("tier",),
    "categories": ("category",),
    "formats": ("format",),
}
# A deny list of agents also reads the name an unverified agent gave (allow lists and rules never
# do: a name no one proved is `(unverified)` to them).
DENY_FACTS = {**LIST_FACTS, "agents": ("agent", "claimed")}
# Lists of names written by people: matched as globs, regardless of case. The others hold codes,
# normalised on both sides (rules.py, facts.py), so a dictionary lookup is enough.
GLOB_LISTS = frozenset({"agents", "providers", "endpoints"})
_PER_FACTS = {
    "agent": ("agent",),
    "provider": ("provider", "provider_name"),
    "domain_type": ("domain_type",),
}

Check = Callable[[Facts, float], bool]
Clock = Callable[[Sequence[time_windows.Window], float], bool]


class Codes:
    """Exact codes (domain types, chains, tiers...), same interface as Matcher."""

    __slots__ = ("_index", "entries", "known")

    def __init__(self, entries: Sequence[str]):
        self.entries = tuple(entries)
        self._index: dict[str, int] = {}
        for index, entry in enumerate(entries):
            self._index.setdefault(entry, index)
        # As Matcher.known: the codes looked up, with the entry they match or None.
        self.known: dict[str, int | None] = dict(self._index)

    def find(self, value: str) -> int | None:
        index = self._index.get(value)
        if len(self.known) < KNOWN_MAX:
            self.known[value] = index
        return index

    def find_any(self, *values: str | None) -> tuple[int, str] | None:
        for value in values:
            if value is not None:
                index = self._index.get(value)
                if index is not None:
                    return index, value
        return None


def matcher(key: str, entries: Sequence[str]) -> Matcher | Codes:
    return Matcher(entries) if key in GLOB_LISTS else Codes(entries)


class Cite:
    """A rule that decided or warned; `reason` may be a function, so words cost nothing until a
    verdict is written."""

    __slots__ = ("effect", "reason", "rule", "where")

    def __init__(
        self, effect: str, rule: str, reason: str | Callable[[], str], where: Where | None
    ):
        self.effect, self.rule, self.reason, self.where = effect, rule, reason, where

    def text(self) -> str:
        return self.reason if isinstance(self.reason, str) else self.reason()


class BudgetCheck:
    """One budget bound to its bucket: which running total it reads and what it allows."""

    __slots__ = (
        "attr",
        "attrs",
        "label",
        "max",
        "only",
        "path",
        "scope",
        "warn",
        "where",
        "window",
    )

    def __init__(self, budget: Budget, where: Where, path: str, rule: str | None = None):
        self.scope = budget.per if rule is None else rule_scope(rule, budget.per)
        self.attrs = _PER_FACTS.get(budget.per, ())
        self.attr = self.attrs[0] if self.attrs else None
        self.only = Matcher(budget.for_) if budget.for_ else None
        self.window = WINDOW_INDEX[budget.window]
        self.warn = to_atomic(budget.warn_usdc) if budget.warn_usdc is not None else None
        self.max = to_atomic(budget.max_usdc) if budget.max_usdc is not None else None
        self.where, self.path = where, path
        per = "overall" if budget.per == "overall" else f"per {budget.per}"
        base = budget.name or f"{budget.window} budget {per}"
        self.label = base if rule is None else f"{base} of {rule!r}"

    def bucket(self, facts: Facts) -> Bucket | None:
        """The bucket this request counts in for this budget, or None if it does not apply."""
        if self.attr is None:
            return (self.scope, "")
        key = getattr(facts, self.attr)
        if key is None:
            return None
        only = self.only
        if only is not None and only.find_any(*(getattr(facts, a) for a in self.attrs)) is None:
            return None
        return (self.scope, key)

    def measure(self, facts: Facts, totals: RollingTotals, now: float) -> tuple | None:
        """(this check, bucket key, before, after), figures in atomic USDC; None if it does not
        apply to the request."""
        bucket = self.bucket(facts)
        if bucket is None:
            return None
        before = totals.used(bucket, self.window, now)
        return (self, bucket[1], before, before + facts.amount)

    def label_for(self, key: str) -> str:
        return f"{self.label}: {key}" if key else self.label


class BudgetGroup:
    """The budgets that read one kind of bucket (per agent, per provider for some providers...):
    the request's key and the bucket are found once for all of them."""

    __slots__ = ("_applies", "attr", "attrs", "checks", "limits", "only", "scope")

    def __init__(self, first: BudgetCheck):
        self.scope, self.attr, self.attrs, self.only = (
            first.scope,
            first.attr,
            first.attrs,
            first.only,
        )
        # What the hot loop reads, unpacked: (check, window, warn, max).
        self.limits: list[tuple[BudgetCheck, int, int | None, int | None]] = []
        self.checks = [first]
        self._applies: dict[str, bool] = {}  # whether the `for` globs match, by key

    def key(self, facts: Facts) -> str | None:
        if self.attr is None:
            return ""
        key = getattr(facts, self.attr)
        if key is None or self.only is None:
            return key
        # By the key alone: a provider's name goes with its id.
        applies = self._applies.get(key)
        if applies is None:
            if len(self._applies) > 10_000:
                self._applies.clear()
            values = [getattr(facts, attr) for attr in self.attrs]
            applies = self._applies[key] = self.only.find_any(*values) is not None
        return key if applies else None


def group_budgets(checks: list[BudgetCheck]) -> list[BudgetGroup]:
    groups: dict[tuple, BudgetGroup] = {}
    for check in checks:
        entries = check.only.entries if check.only is not None else None
        signature = (check.scope, check.attrs, entries)
        if signature in groups:
            groups[signature].checks.append(check)
        else:
            groups[signature] = BudgetGroup(check)
    for group in groups.values():
        group.limits = [(c, c.window, c.warn, c.max) for c in group.checks]
    return list(groups.values())


class AutoRule:
    __slots__ = ("budgets", "checks", "domains", "name", "names", "where")

    def __init__(
        self, name: str, where: Where, when: When, budgets: list[BudgetCheck], clock: Clock
    ):
        self.name, self.where, self.budgets = name, where, budgets
        # The engine indexes requests by the rule's domain types and by its lists of agents,
        # providers and endpoints (`names`), and tries the other conditions (`checks`) only on
        # a request these let through.
        self.domains = frozenset(when.domain_types) if when.domain_types is not None else None
        self.names = [
            _in_list(matcher(key, entries), LIST_FACTS[key])
            for key in sorted(GLOB_LISTS)
            if (entries := getattr(when, key)) is not None
        ]
        self.checks = conditions(when, clock)

    def named(self, facts: Facts) -> bool:
        """Whether the request's agent, provider and endpoint are in the rule's lists."""
        for check in self.names:  # noqa: SIM110
            if not check(facts, 0.0):
                return False
        return True

    def holds(self, facts: Facts, now: float) -> bool:
        """The conditions besides domain types and names (the engine's index checks those)."""
        # A plain loop: all() over a generator costs a frame per rule on the hot path.
        for check in self.checks:  # noqa: SIM110
            if not check(facts, now):
                return False
        return True


def conditions(when: When, clock: Clock) -> list[Check]:
    """The rule's conditions, cheapest and most selective first, but for its domain types and
    lists of agents, providers and endpoints, which the engine indexes (`AutoRule.named`)."""
    checks: list[Check] = []
    if when.max_usdc is not None:
        most = to_atomic(when.max_usdc)
        checks.append(lambda facts, now: facts.amount <= most)
    if when.authenticated_agent:
        checks.append(lambda facts, now: facts.agent_verified)
    if when.verified is not None:
        verified = when.verified
        checks.append(lambda facts, now: facts.verified is verified)
    if when.fixed_price:
        checks.append(lambda facts, now: not facts.dynamic)
    for key in LIST_KEYS:
        entries = getattr(when, key)
        if entries is not None and key != "domain_types" and key not in GLOB_LISTS:
            checks.append(_in_list(matcher(key, entries), LIST_FACTS[key]))
    if when.min_quality is not None:
        least = when.min_quality
        checks.append(lambda facts, now: facts.quality is not None and facts.quality >= least)
    if when.min_reliability is not None:
        least_r = when.min_reliability
        checks.append(
            lambda facts, now: facts.reliability is not None and facts.reliability >= least_r
        )
    if when.hours:
        windows = [time_windows.parse(text) for text in when.hours]
        checks.append(lambda facts, now: clock(windows, now))
    return checks


def _in_list(found: Matcher | Codes, attrs: tuple[str, ...]) -> Check:
    if len(attrs) == 1:
        attr = attrs[0]

        def single(facts: Facts, now: float) -> bool:
            value = getattr(facts, attr)
            return value is not None and found.find(value) is not None

        return single
    return lambda facts, now: found.find_any(*(getattr(facts, attr) for attr in attrs)) is not None


def list_checks(lists: Any, side: str) -> list[tuple[str, str, str | None, Matcher | Codes]]:
    """(list name, the fact it reads, a second fact it may read, matcher) for each list an allow
    or deny section holds."""
    if lists is None:
        return []
    checks = []
    read = DENY_FACTS if side == "deny" else LIST_FACTS
    for key in LIST_KEYS:
        entries = getattr(lists, key)
        if entries is not None:
            facts = read[key]
            checks.append(
                (key, facts[0], facts[1] if len(facts) > 1 else None, matcher(key, entries))
            )
    return checks
