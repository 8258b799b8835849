"""The approval queue: one page of the requests waiting for the operator, one row each, keyed by
request id: agent, endpoint, estimated USDC, age, time left, policy verdict and risk badges.
"""

from __future__ import annotations

from collections.abc import Container

from rich.text import Text

from svc_console.core.models import Severity, SpendRequest
from svc_console.core.sanitize import inert_line
from svc_console.tui import present
from svc_console.tui.colors import Palette
from svc_console.tui.widgets.paged_table import PagedTable

# Below this many seconds left, the expiry cell is drawn as a warning.
EXPIRY_WARNING_S = 60.0


# A name is cut here at most; the table cuts it further, with an ellipsis, when room is short.
NAME_LIMIT = 40


def endpoint_name(request: SpendRequest, limit: int = NAME_LIMIT) -> str:
    if request.endpoint is not None:
        return inert_line(request.endpoint.name, limit)
    return inert_line(request.endpoint_id or request.dataset_id or request.kind, limit)


class RequestQueue(PagedTable):
    """The pending requests of the page on screen, fed by the screen."""

    COLUMNS = (
        ("agent", "agent"),
        ("endpoint", "endpoint"),
        ("usdc", "est. USDC"),
        ("age", "age"),
        ("expires", "expires"),
        ("verdict", "verdict"),
        ("risk", "risk"),
    )
    CLOCK_COLUMNS = ("age", "expires")
    # The endpoint gives way first, then the agent, then the age; never the amount, the time
    # left, the verdict or the risk.
    GIVE_WAY = {"endpoint": 8, "agent": 10, "age": 3}

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        # The ids the operator marked (the screen's own set): a mark is drawn before the agent.
        self.marks: Container[str] = ()

    def agent_cell(self, request: SpendRequest, colours: Palette) -> Text:
        agent = Text(inert_line(request.agent, NAME_LIMIT), overflow="ellipsis")
        if request.id in self.marks:
            return Text.assemble(("● ", f"bold {colours.info}"), agent)
        return agent

    def show_mark(self, request_id: str, colours: Palette) -> None:
        """Draw one row's mark again, without redrawing the page."""
        request = self.requests.get(request_id)
        if request is not None:
            cell = self.agent_cell(request, colours)
            self.update_cell(request_id, "agent", cell)
            if cell.cell_len > self._natural["agent"]:
                self._natural["agent"] = cell.cell_len
                self.fit_columns()

    def cells(self, request: SpendRequest, now: float, colours: Palette) -> list[Text]:
        age, expires = self.clock_cells(request, now, colours)
        return [
            self.agent_cell(request, colours),
            Text(endpoint_name(request), overflow="ellipsis"),
            Text(present.price(request.estimate), justify="right"),
            age,
            expires,
            Text(present.verdict(request)),
            risk_badges(request, colours),
        ]

    def clock_cells(self, request: SpendRequest, now: float, colours: Palette) -> list[Text]:
        left = present.seconds_left(request, now)
        style = colours.warn if left is not None and left < EXPIRY_WARNING_S else ""
        age = Text(present.age(request, now), overflow="ellipsis")
        return [age, Text(present.time_left(request, now), style=style)]


def risk_badges(request: SpendRequest, colours: Palette) -> Text:
    """ "H2 W1": how many high and warn flags, in their severity's colour; "-" for none."""
    counts = present.risk_counts(request.risk)
    parts: list[tuple[str, str] | str] = []
    if counts[Severity.high]:
        parts.append((f"H{counts[Severity.high]}", colours.high))
    if counts[Severity.warn]:
        parts += [" "] if parts else []
        parts.append((f"W{counts[Severity.warn]}", colours.warn))
    if not parts:
        return Text("-", style=colours.label)
    return Text.assemble(*parts)
