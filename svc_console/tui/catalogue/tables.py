"""The catalogue's two lists: one window of matching endpoints or datasets, keyed by id.

A table holds the rows of one search's window (a page of `PAGE_SIZE`), never the catalogue: the
cache answers each keystroke with that window and the total. Every cell is a `rich.text.Text` of a
sanitised value, since a DataTable would read a plain string as markup.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from rich.text import Text

from svc_console.core.money import format_usdc, from_atomic
from svc_console.core.sanitize import inert_line
from svc_console.ledger.catalogue_search import DatasetRow, EndpointRow, price_text
from svc_console.tui.colors import Palette
from svc_console.tui.widgets.text_cells import TextCells

PAGE_SIZE = 50
Row = TypeVar("Row", EndpointRow, DatasetRow)


def cut(value: object, width: int) -> str:
    """Untrusted text for a cell: sanitised, then cut to `width` with an ellipsis."""
    text = inert_line(value, 400)
    return text if len(text) <= width else text[: width - 1] + "…"


def _right(text: str, style: str = "") -> Text:
    return Text(text, style=style, justify="right")


def _count(value: int) -> str:
    """A row count in at most 5 characters ("1.2M", "350k", "9,999")."""
    if value >= 1_000_000:
        return f"{value / 1_000_000:.1f}M"
    if value >= 10_000:
        return f"{value // 1000}k"
    return f"{value:,}"


@dataclass(frozen=True)
class Column:
    key: str
    label: str
    width: int  # 0: the one column that takes the room the others leave
    min_table: int = 0  # shown only when the table is at least this wide


class CatalogueTable(TextCells, Generic[Row]):
    """One page of matches; `selected_id` is the id under the cursor. The columns follow the
    table's width: optional ones appear when there is room, the first one takes the rest."""

    COLUMNS: tuple[Column, ...] = ()
    MIN_FLEX = 16

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, cursor_type="row", zebra_stripes=True)
        self.ids: list[str] = []
        self.flex = self.MIN_FLEX
        self._laid_out_for: int | None = None
        self._shown: tuple[Sequence[Row], Palette] | None = None

    def on_resize(self) -> None:
        if self._shown is not None and self.size.width != self._laid_out_for:
            rows, colours = self._shown
            self.show(rows, colours, keep=self.selected_id)

    def _set_columns(self) -> None:
        width = self.size.width
        if width == self._laid_out_for:
            return
        self._laid_out_for = width
        shown = [c for c in self.COLUMNS if c.min_table <= width]
        # Each column has one cell of padding on either side; keep room for the scrollbar.
        fixed = sum(c.width + 2 for c in shown if c.width)
        self.flex = max(self.MIN_FLEX, width - fixed - 2 - self.styles.scrollbar_size_vertical)
        self.clear(columns=True)
        for column in shown:
            self.add_column(column.label, key=column.key, width=column.width or self.flex)

    def cells(self, row: Row, colours: Palette) -> dict[str, Text]:
        raise NotImplementedError

    def show(self, rows: Sequence[Row], colours: Palette, *, keep: str | None = None) -> None:
        """Replace the rows; the cursor goes to `keep` when it is among them, else to the top."""
        self._shown = (rows, colours)
        with self.app.batch_update():
            self.clear()
            self._set_columns()
            self.ids = [row.id for row in rows]
            keys = [str(column.key.value) for column in self.ordered_columns]
            for row in rows:
                cells = self.cells(row, colours)
                self.add_row(*(cells[key] for key in keys), key=row.id)
            if rows:
                index = self.ids.index(keep) if keep in self.ids else 0
                self.move_cursor(row=index, animate=False, scroll=True)

    @property
    def selected_id(self) -> str | None:
        if not self.ids or not 0 <= self.cursor_row < len(self.ids):
            return None
        return self.ids[self.cursor_row]


class EndpointTable(CatalogueTable[EndpointRow]):
    COLUMNS = (
        Column("endpoint", "endpoint · provider", 0),
        Column("type", "type", 7),
        Column("price", "USDC", 11),
        Column("chains", "chains", 22, min_table=100),
        Column("verified", "✓", 1),
        Column("quality", "q", 4, min_table=56),
    )

    def cells(self, row: EndpointRow, colours: Palette) -> dict[str, Text]:
        name = Text(inert_line(row.name, 200), style="bold")
        name.append(f" · {inert_line(row.provider_name, 200)}", style=colours.label)
        name.truncate(self.flex, overflow="ellipsis")
        price = price_text(row.price_floor, row.price_ceiling, row.dynamic)
        return {
            "endpoint": name,
            "type": Text(f"{cut(row.domain_type, 3)} {cut(row.product_class, 3)}"),
            "price": _right(price, colours.warn if row.dynamic else ""),
            "chains": Text(cut(row.chains.replace(" ", ","), 22), style=colours.label),
            "verified": Text("✓", style=colours.good) if row.verified else Text("-", colours.label),
            "quality": _right(f"{row.quality_score:.2f}"),
        }


class DatasetTable(CatalogueTable[DatasetRow]):
    COLUMNS = (
        Column("dataset", "dataset", 0),
        Column("category", "category", 14, min_table=104),
        Column("tier", "tier", 10),
        Column("format", "format", 7, min_table=72),
        Column("price", "USDC", 7),
        Column("rows", "rows", 5, min_table=64),
        Column("quality", "q", 4, min_table=80),
    )

    def cells(self, row: DatasetRow, colours: Palette) -> dict[str, Text]:
        price = from_atomic(row.price)
        return {
            "dataset": Text(cut(row.title, self.flex), style="bold"),
            "category": Text(cut(row.category, 14), style=colours.label),
            "tier": Text(cut(row.tier, 10), style=colours.good if row.tier == "free" else ""),
            "format": Text(cut(row.format, 7)),
            "price": _right("free" if not price else format_usdc(price)),
            "rows": _right(_count(row.row_count)),
            "quality": _right(f"{row.quality_score:.2f}"),
        }
