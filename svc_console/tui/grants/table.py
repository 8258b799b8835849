"""The grants as a table, one row each keyed by grant id: whose calls, to what, approved or denied,
each at most how much, how much of its total is used, and until when (or how it ended).

Grants are few (the operator makes each by hand), so the table is drawn whole, and only when
a row's text changed: the screen reads the grants every second, and most seconds nothing changes.
Agent names and targets are the agents' and the catalogue's words, shown through `inert_line`.
"""

from __future__ import annotations

import math
import time

from rich.text import Text
from textual.widgets.data_table import RowKey

from svc_console.core.money import format_usdc, from_atomic
from svc_console.core.sanitize import inert_line
from svc_console.ledger.grants import GrantRow
from svc_console.tui.colors import Palette
from svc_console.tui.widgets.giving_way import fit_table
from svc_console.tui.widgets.text_cells import TextCells

COLUMNS = (
    ("id", "grant"),
    ("agent", "agent"),
    ("target", "calls to"),
    ("effect", "effect"),
    ("per_call", "per call"),
    ("used", "used / total"),
    ("until", "until"),
)
# On a narrow terminal what the row names gives way (down to these widths) before what it
# allows and until when; the detail line under the table says it whole.
GIVE_WAY = {"target": 6, "agent": 6}


def usdc(units: int | None) -> str:
    return "-" if units is None else format_usdc(from_atomic(units))


def clock_time(at: float) -> str:
    return time.strftime("%H:%M UTC", time.gmtime(at))


def until(grant: GrantRow, now: float) -> str:
    """Until when it stands, or how it ended; the time left in whole minutes, so the cell
    changes once a minute, not every second."""
    if grant.ended_at is not None:
        return f"ended {clock_time(grant.ended_at)}"
    if grant.expires_at is None:
        return "the console stops"
    minutes = max(0, math.ceil((grant.expires_at - now) / 60))
    return f"{clock_time(grant.expires_at)} ({minutes}m left)"


def cells(grant: GrantRow, now: float, colours: Palette) -> list[Text]:
    ended = grant.ended_at is not None or (grant.expires_at is not None and grant.expires_at <= now)
    dim = colours.label if ended else ""
    effect_tone = colours.good if grant.effect == "approve" else colours.warn
    used = (
        f"{usdc(grant.used_usdc)} / {usdc(grant.total_usdc)}" if grant.effect == "approve" else "-"
    )
    per_call = usdc(grant.per_call_max_usdc) if grant.effect == "approve" else "-"
    return [
        Text(str(grant.id), style=dim, justify="right"),
        Text(inert_line(grant.agent, 24), style=dim, overflow="ellipsis"),
        Text(inert_line(grant.target, 32), style=dim, overflow="ellipsis"),
        Text(grant.effect, style=dim or effect_tone),
        Text(per_call, style=dim, justify="right"),
        Text(used, style=dim, justify="right"),
        Text(until(grant, now), style=dim),
    ]


class GrantsTable(TextCells):
    """The grants shown, drawn again only when their rows read differently."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, cursor_type="row", zebra_stripes=True)
        self.grants: dict[int, GrantRow] = {}
        self._drawn: list[tuple[str, ...]] = []
        self._natural = {key: len(label) for key, label in COLUMNS}

    def on_mount(self) -> None:
        for key, label in COLUMNS:
            self.add_column(label, key=key)

    def on_resize(self) -> None:
        self.fit_columns()

    def fit_columns(self) -> None:
        fit_table(self, self._natural, GIVE_WAY)

    @property
    def selected(self) -> GrantRow | None:
        if self.row_count == 0:
            return None
        row_key, _ = self.coordinate_to_cell_key(self.cursor_coordinate)
        return self.grants.get(int(row_key.value or 0))

    def show(
        self, grants: list[GrantRow], now: float, colours: Palette, *, force: bool = False
    ) -> bool:
        """Show these grants; False when every row reads as it is drawn (nothing redrawn)."""
        rows = [cells(grant, now, colours) for grant in grants]
        drawn = [tuple(f"{cell.plain}\0{cell.style}" for cell in row) for row in rows]
        if drawn == self._drawn and not force:
            return False
        keep = self.selected.id if self.selected is not None else None
        self._drawn = drawn
        self.grants = {grant.id: grant for grant in grants}
        self._natural = {key: len(label) for key, label in COLUMNS}
        with self.app.batch_update():
            self.clear()
            for grant, row in zip(grants, rows, strict=True):
                for (key, _), cell in zip(COLUMNS, row, strict=True):
                    self._natural[key] = max(self._natural[key], cell.cell_len)
                self.add_row(*row, key=str(grant.id))
            self.fit_columns()
            if keep is not None and keep in self.grants:
                self.move_cursor(row=self.get_row_index(RowKey(str(keep))))
        return True
