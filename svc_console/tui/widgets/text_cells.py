"""A DataTable of one-line `Text` cells that draws each cell in one pass.

Textual's DataTable draws every cell through Rich's generic layers: the cell wrapped in a
`Padding`, wrapped in a `Styled`, rendered twice over with new console options each time. A page
of new rows (a sort, the next page) draws about 240 cells afresh, and those layers were most of
the frame: 0.12 to 0.17 ms a cell, 40 to 70 ms a page at 10,000 pending. A one-line `Text` cell
(every cell of the console's tables) is drawn here with the same Rich steps those layers come
down to, once: the text laid out in the cell's width, padded, and styled under and over. Header
cells, row labels, taller rows and anything that is not a one-line `Text` keep Textual's way.
"""

from __future__ import annotations

from collections.abc import Iterable

from rich.console import Console
from rich.containers import Lines
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual._types import SegmentLines
from textual.widgets import DataTable
from textual.widgets.data_table import RowKey

_NO_STYLE = Style.null()


def cell_line(
    console: Console, cell: Text, inner: int, padding: int, pre: Style, post: Style
) -> list[Segment]:
    """One cell's line as DataTable draws it (`inner`: the width inside the padding; `pre` is
    styled under the cell's own styles, `post` over), for a cell of one line without tabs.
    The steps are Rich's for a line that is not wrapped: justified, truncated, rendered with
    the text's own style beneath its spans, padded to the width."""
    line = cell.copy()
    justify = cell.justify or "default"
    overflow = cell.overflow or "fold"
    if justify != "default":
        Lines([line]).justify(console, inner, justify=justify, overflow=overflow)
    line.truncate(inner, overflow=overflow)
    if not line.plain:
        segments: list[Segment] = []
    elif line.spans:
        segments = list(line.render(console))  # the text's own style is the spans' base
    else:
        segments = [Segment(line.plain, console.get_style(line.style, default=_NO_STYLE))]
    width = Segment.get_line_length(segments)
    if width < inner:
        segments.append(Segment(" " * (inner - width), _NO_STYLE))
    margin = Segment(" " * padding, _NO_STYLE)
    return list(Segment.apply_style([margin, *segments, margin], pre, post))


def one_line(cell: object) -> bool:
    """A `Text` of one line, without tabs: what `cell_line` draws and `TextCells` measures."""
    return isinstance(cell, Text) and "\n" not in cell.plain and "\t" not in cell.plain


class TextCells(DataTable[Text]):
    """A DataTable whose one-line `Text` cells are drawn by `cell_line`, and measured by their
    length in cells: Textual measures each new cell through Rich (new console options, every
    word's length), a few milliseconds a page of new rows."""

    def _update_dimensions(self, new_rows: Iterable[RowKey]) -> None:
        others: list[RowKey] = []
        columns = self.ordered_columns
        for row_key in new_rows:
            row_index = self._row_locations.get(row_key)
            row = self.rows.get(row_key)
            if row_index is None or row is None:
                continue  # gone before the table measured it
            cells = self._get_row_renderables(row_index).cells
            if row.label is not None or row.auto_height or not all(map(one_line, cells)):
                others.append(row_key)
                continue
            for column, cell in zip(columns, cells, strict=False):
                column.content_width = max(column.content_width, cell.cell_len)
        super()._update_dimensions(others)  # measures those, and sizes the table

    def _render_cell(
        self,
        row_index: int,
        column_index: int,
        base_style: Style,
        width: int,
        cursor: bool = False,
        hover: bool = False,
    ) -> SegmentLines:
        inner = width - 2 * self.cell_padding
        if row_index < 0 or column_index < 0 or inner < 1:
            return super()._render_cell(row_index, column_index, base_style, width, cursor, hover)
        row_key = self._row_locations.get_key(row_index)
        column_key = self._column_locations.get_key(column_index)
        key = (
            row_key,
            column_key,
            base_style,
            cursor,
            hover,
            self._show_hover_cursor,
            self._update_count,
            self._pseudo_class_state,
        )
        cached = self._cell_render_cache.get(key)
        if cached is not None:
            return cached
        cell = self._get_row_renderables(row_index).cells[column_index]
        row = self.rows.get(row_key) if row_key is not None else None
        if (
            row is None
            or row.height != 1
            or not one_line(cell)
            or cell.no_wrap is False
            or cell.overflow == "ignore"
        ):
            return super()._render_cell(row_index, column_index, base_style, width, cursor, hover)
        component_style, post_style = self._get_styles_to_render_cell(
            False,
            False,
            row_index < self.fixed_rows or column_index < self.fixed_columns,
            hover,
            cursor,
            self.show_cursor,
            self._show_hover_cursor,
            self.cursor_foreground_priority == "css",
            self.cursor_background_priority == "css",
        )
        pre = base_style + Style.from_meta({"row": row_index, "column": column_index})
        lines = [
            cell_line(
                self.app.console,
                cell,
                inner,
                self.cell_padding,
                pre + component_style,
                post_style,
            )
        ]
        self._cell_render_cache[key] = lines
        return lines
