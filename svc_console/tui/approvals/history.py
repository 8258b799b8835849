"""The history: one page of decided requests with how they ended, the ceiling the operator (or a
policy rule) approved and the amount actually charged. Who decided is in the detail.
"""

from __future__ import annotations

from rich.text import Text

from svc_console.core.models import SpendRequest
from svc_console.core.money import format_usdc
from svc_console.core.sanitize import inert_line
from svc_console.tui import present
from svc_console.tui.colors import Palette
from svc_console.tui.widgets.paged_table import PagedTable
from svc_console.tui.widgets.queue import NAME_LIMIT, endpoint_name


class HistoryTable(PagedTable):
    """Decided requests, the newest request first by default (by when it was made, not when it
    was decided: the order an index gives at once, whatever the history's length)."""

    COLUMNS = (
        ("decided", "decided"),
        ("agent", "agent"),
        ("endpoint", "endpoint"),
        ("outcome", "outcome"),
        ("approved", "approved"),
        ("charged", "charged"),
    )
    CLOCK_COLUMNS = ("decided",)
    GIVE_WAY = {"endpoint": 8, "agent": 10}

    def cells(self, request: SpendRequest, now: float, colours: Palette) -> list[Text]:
        decision = request.decision
        approved = decision.ceiling_usdc if decision is not None and decision.approved else None
        charged = request.outcome.charged_usdc if request.outcome is not None else None
        return [
            *self.clock_cells(request, now, colours),
            Text(inert_line(request.agent, NAME_LIMIT), overflow="ellipsis"),
            Text(endpoint_name(request), overflow="ellipsis"),
            Text(
                present.outcome_label(request.state),
                style=colours.tone(present.outcome_tone(request.state)),
            ),
            Text(format_usdc(approved), justify="right"),
            Text(format_usdc(charged), justify="right"),
        ]

    def clock_cells(self, request: SpendRequest, now: float, colours: Palette) -> list[Text]:
        return [Text(f"{present.duration(now - request.updated_at)} ago")]
