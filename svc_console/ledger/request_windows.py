"""Windows over the requests table: filtered, sorted and paged in SQL, so a screen holds only the
rows it shows and never loads a queue of ten thousand requests whole (STYLE.md: big data is never
loaded whole). Counts come from SQL too.

A `RequestQuery` is plain data; it turns itself into a WHERE clause with bound parameters (never
text pasted into SQL) and an ORDER BY that is a total order, so pages never overlap or skip a row.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

from svc_console.core.states import State

# The keys a window can be sorted by, as SQL over the requests table. Each order of the pending
# list has a partial index of schema `_v5` (state, key, created_at, id) that gives its pages in
# order without sorting; the expressions here must stay those of the indexes. `estimate_usdc` is
# the estimate's amount_usdc in atomic units.
ORDERS: dict[str, str] = {
    "created": "created_at",
    "updated": "updated_at",
    "amount": "estimate_usdc",
    "expires": "expires_at",
    "agent": "agent COLLATE NOCASE",
}
# Requests rejected before pricing have no estimate: they sort last whatever the direction.
# (Expiry is sorted on for pending requests, which always have one, and is left bare.)
_NULLABLE_ORDERS = frozenset({"amount"})
VERDICTS = ("ask", "deny", "auto_approve")
RiskLevel = Literal["high", "warn", "none"]
RISK_LEVELS: tuple[RiskLevel, ...] = ("high", "warn", "none")

# What a text filter is matched against: who asked, for what, from whom.
_TEXT_FIELDS = (
    "agent",
    "endpoint_id",
    "dataset_id",
    "provider",
    "json_extract(endpoint, '$.name')",
    "json_extract(endpoint, '$.providerName')",
)
_HAS_SEVERITY = (
    "EXISTS (SELECT 1 FROM json_each(requests.risk) AS flag"
    " WHERE json_extract(flag.value, '$.severity') IN ({marks}))"
)


def _like_pattern(word: str) -> str:
    """A LIKE pattern matching `word` anywhere, with LIKE's own wildcards taken literally."""
    escaped = word.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


@dataclass(frozen=True)
class RequestQuery:
    """Which requests a window shows and in what order.

    `text`: every word must appear (case-insensitive) in the agent, the endpoint or dataset id,
    the provider or the endpoint's name. `verdict`: the policy's outcome. `risk`: "high" (a high
    flag), "warn" (a warn or high flag) or "none" (neither).
    """

    states: tuple[State, ...]
    order: str = "created"
    descending: bool = False
    text: str = ""
    verdict: str | None = None
    risk: RiskLevel | None = None

    def __post_init__(self) -> None:
        if not self.states:
            raise ValueError("a request query needs at least one state")
        if self.order not in ORDERS:
            raise ValueError(f"unknown order {self.order!r} (expected one of {', '.join(ORDERS)})")
        if self.verdict is not None and self.verdict not in VERDICTS:
            raise ValueError(f"unknown verdict {self.verdict!r}")
        if self.risk is not None and self.risk not in RISK_LEVELS:
            raise ValueError(f"unknown risk level {self.risk!r}")

    @property
    def filtered(self) -> bool:
        return bool(self.text.strip()) or self.verdict is not None or self.risk is not None

    def where(self) -> tuple[str, list[Any]]:
        """The WHERE clause (without the keyword) and its parameters."""
        names = [str(state) for state in self.states]
        # One state as `state = ?`: SQLite matches it (bound value and all) to the partial
        # indexes of the pending list's orders, which it does not do for `state IN (?)`.
        state = "state = ?" if len(names) == 1 else f"state IN ({','.join('?' * len(names))})"
        clauses = [state]
        args: list[Any] = list(names)
        for word in self.text.split():
            pattern = _like_pattern(word)
            clauses.append(
                "(" + " OR ".join(f"{field} LIKE ? ESCAPE '\\'" for field in _TEXT_FIELDS) + ")"
            )
            args += [pattern] * len(_TEXT_FIELDS)
        if self.verdict is not None:
            clauses.append("json_extract(verdict, '$.outcome') = ?")
            args.append(self.verdict)
        if self.risk is not None:
            severities = _severities(self.risk)
            clause = _HAS_SEVERITY.format(marks=",".join("?" * len(severities)))
            clauses.append(f"NOT {clause}" if self.risk == "none" else clause)
            args += severities
        return " AND ".join(clauses), args

    def order_by(self) -> str:
        """A total order: the key (NULLs last where it can be NULL), then creation time and id to
        break ties, all in one direction, so one index walked forwards or backwards serves it.
        `NULLS LAST` on the first key still lets SQLite walk the index (the NULLs in a second
        pass); a key that is never NULL is left bare."""
        key = ORDERS[self.order]
        direction = "DESC" if self.descending else "ASC"
        nulls_last = " NULLS LAST" if self.order in _NULLABLE_ORDERS else ""
        if self.order == "created":
            return f"created_at {direction}, id {direction}"
        return f"{key} {direction}{nulls_last}, created_at {direction}, id {direction}"


def _severities(risk: RiskLevel) -> list[str]:
    return ["high"] if risk == "high" else ["warn", "high"]


def states(values: Iterable[State]) -> tuple[State, ...]:
    """A query's states in a stable order (sets iterate in no particular one)."""
    return tuple(sorted(values, key=str))
