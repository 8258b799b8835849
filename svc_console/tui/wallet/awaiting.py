"""The requests that wait for funds: what each was approved for and how much the wallet lacks.

The balance is one number for the whole wallet, so each row's shortfall is measured against it
alone (funding one request may cover the next as well). An unknown balance shows "?".
"""

from __future__ import annotations

from decimal import Decimal

from rich.text import Text

from svc_console.core.funding import required, shortfall
from svc_console.core.models import SpendRequest
from svc_console.core.money import format_usdc
from svc_console.core.sanitize import inert_line
from svc_console.tui import present
from svc_console.tui.colors import Palette
from svc_console.tui.widgets.paged_table import PagedTable
from svc_console.tui.widgets.queue import endpoint_name


class AwaitingFunds(PagedTable):
    """One row per request in `awaiting_funds`, oldest first."""

    COLUMNS = (
        ("request", "request"),
        ("agent", "agent"),
        ("endpoint", "endpoint"),
        ("needs", "approved up to"),
        ("short", "short by"),
        ("waiting", "waiting"),
    )
    CLOCK_COLUMNS = ("waiting",)

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.balance: Decimal | None = None

    def cells(self, request: SpendRequest, now: float, colours: Palette) -> list[Text]:
        missing = shortfall(request, self.balance)
        if missing is None:
            short = Text("?", style=colours.label, justify="right")
        elif missing > 0:
            short = Text(format_usdc(missing), style=colours.high, justify="right")
        else:
            short = Text("covered", style=colours.good, justify="right")
        return [
            Text(inert_line(request.id, 20)),
            Text(inert_line(request.agent, 20)),
            Text(endpoint_name(request)),
            Text(format_usdc(required(request)), justify="right"),
            short,
            *self.clock_cells(request, now, colours),
        ]

    def clock_cells(self, request: SpendRequest, now: float, colours: Palette) -> list[Text]:
        return [Text(present.duration(now - request.updated_at))]

    # One short list: the cursor stops at its ends rather than asking for another page.
    def action_cursor_down(self) -> None:
        super(PagedTable, self).action_cursor_down()

    def action_cursor_up(self) -> None:
        super(PagedTable, self).action_cursor_up()
