"""The two lists of the approvals screen, pending and history, as plain state: which requests
each shows, how they can be sorted, and which page is on screen. The screen turns this state into
a `RequestQuery` and asks the ledger for one page; nothing here touches a widget.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from svc_console.core.states import HISTORY, LIVE_FOR_OPERATOR, State
from svc_console.ledger.request_windows import RequestQuery, RiskLevel, states

PAGE_SIZE = 50


@dataclass(frozen=True)
class SortOption:
    """One way to sort a list: the ledger's order key, its natural direction, and how each
    direction reads to the operator."""

    key: str
    order: str
    descending: bool
    ascending_label: str
    descending_label: str

    def label(self, descending: bool) -> str:
        return self.descending_label if descending else self.ascending_label


AGE = SortOption("age", "created", False, "oldest first", "newest first")
AMOUNT = SortOption("amount", "amount", True, "smallest first", "largest first")
TIME_LEFT = SortOption("expires", "expires", False, "least time left first", "most time left first")
AGENT = SortOption("agent", "agent", False, "agent A to Z", "agent Z to A")
DECIDED = SortOption("decided", "updated", True, "oldest decision first", "latest decision first")
# The history opens newest first by creation, which an index serves however long it is; sorting
# by decision time reads every decided request. Its labels name the request: the history's time
# column is the decision's, and a request decided long after it came reads out of that order.
NEWEST = SortOption("age", "created", True, "oldest request first", "newest request first")


@dataclass(frozen=True)
class ListKind:
    name: str
    title: str
    states: tuple[State, ...]
    sorts: tuple[SortOption, ...]

    def sort(self, key: str) -> SortOption | None:
        return next((option for option in self.sorts if option.key == key), None)


PENDING = ListKind("pending", "Pending", states(LIVE_FOR_OPERATOR), (AGE, AMOUNT, TIME_LEFT, AGENT))
HISTORY_LIST = ListKind("history", "History", states(HISTORY), (NEWEST, DECIDED, AMOUNT, AGENT))
LISTS = (PENDING, HISTORY_LIST)


@dataclass(frozen=True)
class Filter:
    """What the operator typed in the filter bar, understood."""

    text: str = ""
    verdict: str | None = None
    risk: RiskLevel | None = None
    problem: str | None = None

    @property
    def active(self) -> bool:
        return bool(self.text) or self.verdict is not None or self.risk is not None


@dataclass
class ListState:
    kind: ListKind
    sort: SortOption = field(init=False)
    descending: bool = field(init=False)
    page: int = 0
    total: int = 0

    def __post_init__(self) -> None:
        self.sort = self.kind.sorts[0]
        self.descending = self.sort.descending

    def query(self, filter: Filter) -> RequestQuery:
        return RequestQuery(
            states=self.kind.states,
            order=self.sort.order,
            descending=self.descending,
            text=filter.text,
            verdict=filter.verdict,
            risk=filter.risk,
        )

    @property
    def offset(self) -> int:
        return self.page * PAGE_SIZE

    @property
    def pages(self) -> int:
        return max(1, -(-self.total // PAGE_SIZE))

    def settle(self, total: int) -> None:
        """Keep the page inside the list after it shrank (requests decided, a new filter)."""
        self.total = total
        self.page = min(self.page, self.pages - 1)

    def sort_by(self, key: str) -> bool:
        """Sort by `key` in its natural direction, or reverse when it is already the sort."""
        option = self.kind.sort(key)
        if option is None:
            return False
        if option == self.sort:
            self.descending = not self.descending
        else:
            self.sort, self.descending = option, option.descending
        self.page = 0
        return True

    def next_sort(self) -> None:
        index = self.kind.sorts.index(self.sort)
        option = self.kind.sorts[(index + 1) % len(self.kind.sorts)]
        self.sort, self.descending, self.page = option, option.descending, 0

    def reverse(self) -> None:
        self.descending = not self.descending
        self.page = 0

    def turn(self, delta: int) -> bool:
        """Move `delta` pages; False when there is no such page."""
        target = self.page + delta
        if not 0 <= target < self.pages:
            return False
        self.page = target
        return True

    def range_text(self, shown: int) -> str:
        if not self.total:
            return "0 of 0"
        first = self.offset + 1
        return f"{first:,}\N{EN DASH}{self.offset + shown:,} of {self.total:,}"

    @property
    def sort_text(self) -> str:
        return self.sort.label(self.descending)


def parse_filter(text: str) -> Filter:
    """`solar risk:high verdict:deny` → words to match, plus the verdict and risk wanted. A bad
    `risk:`/`verdict:` value is reported and ignored; the words still apply."""
    words: list[str] = []
    verdict: str | None = None
    risk: RiskLevel | None = None
    problem: str | None = None
    for token in text.split():
        name, colon, value = token.partition(":")
        name, value = name.lower(), value.lower()
        if colon and name == "risk":
            if value in ("high", "warn", "none"):
                risk = value  # type: ignore[assignment]
            else:
                problem = "risk: is high, warn or none"
        elif colon and name == "verdict":
            outcome = {"auto": "auto_approve", "auto_approve": "auto_approve"}.get(value, value)
            if outcome in ("ask", "deny", "auto_approve"):
                verdict = outcome
            else:
                problem = "verdict: is ask, deny or auto"
        else:
            words.append(token)
    return Filter(" ".join(words), verdict, risk, problem)


def with_token(text: str, token: str) -> str:
    """The filter text with `token` (`risk:high`) in place of any token of the same name."""
    name = token.partition(":")[0].lower()
    kept = [t for t in text.split() if t.partition(":")[0].lower() != name or ":" not in t]
    return " ".join([*kept, token])
