"""The two loops every request runs through, written out as Python for one policy version: its
allow and deny lists, and its budgets' reads of the rolling totals.

Interpreting them (a loop over the lists, unpacking each entry, `getattr` by name) costs about
three times the lookups themselves; generated once per policy version, with each list's matcher
and each budget's window and limits bound in, they do only the lookups. `engine.py` keeps the
interpreted forms, which define what these must do (a test checks both agree on random policies
and requests). Only names, integers and this module's own text go into the generated source:
nothing a policy author writes reaches it except through `repr`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from svc_console.policy.budgets import _Bucket
from svc_console.policy.matchers import MISSING

_EMPTY = _Bucket()  # a bucket nobody has spent in: empty queues, zero sums (never written)


def list_checks(policy: Any) -> Callable[[Any, list], None]:
    """`check(facts, cites)`: the citations of the allow and deny lists, as `_list_checks`."""
    lines = ["def check(facts, cites):", "    pass"]
    names: dict[str, Any] = {"MISSING": MISSING, "CITE": policy._cite_list}

    def lookup(indent: str, n: int, attr: str) -> list[str]:
        return [
            f"{indent}value = facts.{attr}",
            f"{indent}if value is not None:",
            f"{indent}    index = K{n}.get(value, MISSING)",
            f"{indent}    if index is MISSING:",
            f"{indent}        index = M{n}.find(value)",
        ]

    n = 0
    for key, first, second, found in policy._deny:
        names[f"K{n}"], names[f"M{n}"] = found.known, found
        lines += ["    index = None", *lookup("    ", n, first)]
        if second is not None:
            lines += ["    if index is None:", *lookup("        ", n, second)]
        lines += [
            "    if index is not None:",
            f"        CITE('deny', {key!r}, value, M{n}, index, cites)",
        ]
        n += 1
    for key, first, second, found in policy._allow:
        names[f"K{n}"], names[f"M{n}"] = found.known, found
        lines += [*lookup("    ", n, first), "        if index is None:"]
        if second is not None:
            lines += [
                f"            other = facts.{second}",
                f"            if other is None or M{n}.find(other) is None:",
                f"                CITE('allow', {key!r}, value, M{n}, None, cites)",
            ]
        else:
            lines += [f"            CITE('allow', {key!r}, value, M{n}, None, cites)"]
        n += 1
    return _build("\n".join(lines), names, "check")


def budget_checks(policy: Any) -> Callable[[Any, Any, float, list, list], None]:
    """`check(facts, totals, now, cites, reads)`: each budget group's sums as the request finds
    them, and the citations of the limits it passes, as `_budget_checks` (with `now` already
    kept from running backwards). A limit costs one comparison; its words, the rest."""
    lines = [
        "def check(facts, totals, now, cites, reads):",
        "    amount = facts.amount",
        "    get = totals.buckets.get",
    ]
    names: dict[str, Any] = {"EMPTY": _EMPTY, "LIMIT": policy._limit_cite}
    for g, group in enumerate(policy._budget_groups):
        names[f"G{g}"] = group
        if group.attr is None:
            lines.append("    key = ''")
        elif group.only is None:
            lines.append(f"    key = facts.{group.attr}")
        else:
            lines.append(f"    key = G{g}.key(facts)")
        lines += [
            "    if key is not None:",
            f"        bucket = get(({group.scope!r}, key), EMPTY)",
            "        sums = bucket.sums if now < bucket.due else bucket.current(now)",
            f"        reads.append((G{g}, key, sums[:]))",
        ]
        for c, (check, window, warn, most) in enumerate(group.limits):
            least = min(limit for limit in (warn, most) if limit is not None)
            names[f"C{g}_{c}"] = check
            lines += [
                f"        if sums[{window}] + amount > {int(least)}:",
                f"            LIMIT(C{g}_{c}, key, sums[{window}], amount, cites)",
            ]
    return _build("\n".join(lines), names, "check")


def _build(source: str, names: dict[str, Any], function: str) -> Callable[..., None]:
    scope = dict(names)
    exec(compile(source, "<policy hot path>", "exec"), scope)
    return scope[function]
