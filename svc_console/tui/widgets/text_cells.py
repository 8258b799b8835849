"""A DataTable of one-line `Text` cells that draws each cell in one pass, and each line with the
styles its frame reads once.

Textual's DataTable draws every cell through Rich's generic layers: the cell wrapped in a
`Padding`, wrapped in a `Styled`, rendered twice over with new console options each time. A page
of new rows (a sort, the next page) draws about 240 cells afresh, and those layers were most of
the frame: 0.12 to 0.17 ms a cell, 40 to 70 ms a page at 10,000 pending. A one-line `Text` cell
(every cell of the console's tables) is drawn here with the same Rich steps those layers come
down to, once: the text laid out in the cell's width, padded, and styled under and over. Header
cells, row labels, taller rows and anything that is not a one-line `Text` keep Textual's way.

A line of the table also read three styles (the table's own, its stripe's, the header's) through
the DOM, each a walk up the widget's ancestors to blend their backgrounds: a fifth of a page's
time, for values that cannot change while a frame is drawn. A frame now reads each once, and a
line without row labels or fixed columns (every table of the console) does not read the header's,
which only those use.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from rich.console import Console
from rich.containers import Lines
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual._types import SegmentLines
from textual.color import Color
from textual.coordinate import Coordinate
from textual.geometry import Region
from textual.strip import Strip
from textual.widgets import DataTable
from textual.widgets.data_table import RowKey

_NO_STYLE = Style.null()
# Where a cell is drawn and under which styles: its row and column, the row's style, and the
# cursor's styles under and over the cell's own.
_Place = tuple[int, int, Style, Style, Style]
# How many styles each of a table's two stores keeps (the places' styles of `TextCells._styled`,
# the one objects of `same_style`): a page needs a few hundred; the count only bounds what themes
# and cursor moves add over a long session.
_STYLES_KEPT = 20_000


def cell_content(console: Console, cell: Text, inner: int) -> list[Segment]:
    """A one-line cell's text laid out in `inner` cells, in its own styles. The steps are
    Rich's for a line that is not wrapped: justified, truncated, rendered with the text's own
    style beneath its spans, padded to the width."""
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
    return segments


def one_line(cell: object) -> bool:
    """A `Text` of one line, without tabs: what `cell_content` lays out and `TextCells` measures."""
    return isinstance(cell, Text) and "\n" not in cell.plain and "\t" not in cell.plain


class TextCells(DataTable[Text]):
    """A DataTable whose one-line `Text` cells are laid out by `cell_content`, and measured by their
    length in cells: Textual measures each new cell through Rich (new console options, every
    word's length), a few milliseconds a page of new rows."""

    # What every line and cell of the frame being drawn reads alike; None between frames, when
    # any of it may change.
    _drawing: _Frame | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._styles_at: dict[tuple[int, int, Style, Style, Style, Style | None], Style] = {}
        self._same_styles: dict[Style, Style] = {}

    def same_style(self, style: Style) -> Style:
        """The one object kept for styles equal to this: Textual makes the table's styles anew
        for each page and frame, and a key holding the same object is found without comparing
        styles (two calls of Python each)."""
        if len(self._same_styles) >= _STYLES_KEPT:
            self._same_styles.clear()
        return self._same_styles.setdefault(style, style)

    # -- one frame ------------------------------------------------------------------------------

    def render_lines(self, crop: Region) -> list[Strip]:
        self._drawing = _Frame(self)
        try:
            return super().render_lines(crop)
        finally:
            self._drawing = None

    def _frame(self) -> _Frame:
        """The frame being drawn, or the table as it is now (a cell drawn outside a frame)."""
        return self._drawing or _Frame(self)

    @property
    def rich_style(self) -> Style:
        frame = self._drawing
        return super().rich_style if frame is None else frame.style(None)

    def _style_of(self, component: str) -> Style:
        return self._frame().style(component)

    def _get_row_style(self, row_index: int, base_style: Style) -> Style:
        if row_index == -1:
            return self._style_of("datatable--header")
        if row_index < self.fixed_rows:
            return self._style_of("datatable--fixed")
        if self.zebra_stripes:
            return self._style_of("datatable--odd-row" if row_index % 2 else "datatable--even-row")
        return base_style

    def _render_line_in_row(
        self,
        row_key: RowKey,
        line_no: int,
        base_style: Style,
        cursor_location: Coordinate,
        hover_location: Coordinate,
    ) -> tuple[SegmentLines, SegmentLines]:
        """DataTable's line of a row, for a table without row labels shown or fixed columns
        (the others keep DataTable's): its cells, then the row's style to the table's edge."""
        if (self._labelled_row_exists and self.show_row_labels) or self.fixed_columns:
            return super()._render_line_in_row(
                row_key, line_no, base_style, cursor_location, hover_location
            )
        cursor_type, show_cursor = self.cursor_type, self.show_cursor
        cache_key = (
            row_key,
            line_no,
            base_style,
            cursor_location,
            hover_location,
            cursor_type,
            show_cursor,
            self._show_hover_cursor,
            self._update_count,
            self._pseudo_class_state,
        )
        if cache_key in self._row_render_cache:
            return self._row_render_cache[cache_key]
        should_highlight = self._should_highlight
        row_index = self._row_locations.get(row_key) if row_key in self._row_locations else -1
        row_style = self._get_row_style(row_index, base_style)
        frame = self._frame()
        scrollable_row = []
        for column_index, width in enumerate(frame.widths()):
            cell_location = Coordinate(row_index, column_index)
            cell_lines = self._render_cell(
                row_index,
                column_index,
                row_style,
                width,
                cursor=should_highlight(cursor_location, cell_location, cursor_type),
                hover=should_highlight(hover_location, cell_location, cursor_type),
            )[line_no]
            scrollable_row.append(cell_lines)
        # The row's style carried out to the widget's edge, as DataTable draws it.
        remaining_space = max(0, self.size.width - frame.table_width())
        if cursor_type == "row":
            extend_style, _ = self._get_styles_to_render_cell(
                row_index == -1,
                False,
                False,
                should_highlight(hover_location, Coordinate(row_index or 0, 0), cursor_type),
                row_index == cursor_location.row,
                show_cursor,
                self._show_hover_cursor,
                False,
                False,
            )
            extend_style = row_style + extend_style
        elif row_style.bgcolor is not None:
            faded_color = Color.from_rich_color(row_style.bgcolor).blend(
                self.background_colors[1], factor=0.25
            )
            extend_style = Style.from_color(color=row_style.color, bgcolor=faded_color.rich_color)
        else:
            extend_style = Style.from_color(row_style.color, row_style.bgcolor)
        extend_style += Style.from_meta({"row": row_index, "column": 0, "out_of_bounds": True})
        scrollable_row.append([Segment(" " * remaining_space, extend_style)])
        row_pair: tuple[SegmentLines, SegmentLines] = ([], scrollable_row)
        self._row_render_cache[cache_key] = row_pair
        return row_pair

    def _update_dimensions(self, new_rows: Iterable[RowKey]) -> None:
        others: list[RowKey] = []
        columns = self.ordered_columns
        for row_key in new_rows:
            row_index = self._row_locations.get(row_key)
            row = self.rows.get(row_key)
            if row_index is None or row is None:
                continue  # gone before the table measured it
            if row.label is not None or row.auto_height:
                # Before its renderables are read: they are cached without the label until
                # Textual's measuring has noted that a row has one.
                others.append(row_key)
                continue
            cells = self._get_row_renderables(row_index).cells
            if not all(map(one_line, cells)):
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
        frame = self._frame()
        inner = width - 2 * frame.padding
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
        fixed = row_index < frame.fixed_rows or column_index < frame.fixed_columns
        place = (row_index, column_index, base_style, *frame.cell_styles(fixed, hover, cursor))
        margin = frame.margin
        content = cell_content(frame.console, cell, inner)
        lines = [[self._styled(place, segment) for segment in (margin, *content, margin)]]
        self._cell_render_cache[key] = lines
        return lines

    def _styled(self, place: _Place, segment: Segment) -> Segment:
        """A segment of a cell in the styles the table draws it in at `place`, as Textual
        draws it: under the row's style, the cell's place (row and column, which a click
        reads) and the cursor's, over the cell's own, the cursor's foreground above all.

        Kept by place and the segment's own style: a new page's cells sit where the last
        page's did, in the same few styles, so those additions are made once, not for every
        segment of every new page (each a sum of styles carrying a place of its own, which
        Rich's cache of sums never holds for long)."""
        key = (*place, segment.style)
        style = self._styles_at.get(key)
        if style is None:
            row, column, base, under, over = place
            pre = base + Style.from_meta({"row": row, "column": column}) + under
            style = next(iter(Segment.apply_style([segment], pre, over))).style
            if style is not None and style.link:
                # A link's every drawing has an id of its own (what a hover lights up): never
                # shared with another cell's.
                return Segment(segment.text, style)
            if len(self._styles_at) >= _STYLES_KEPT:
                self._styles_at.clear()
            self._styles_at[key] = style
        return Segment(segment.text, style)


class _Frame:
    """What the lines and cells of one frame read alike, read once: the table's settings, its
    columns' widths, its styles and its cells' styles by where the cursor is."""

    __slots__ = (
        "_cell_styles",
        "_styles",
        "_table",
        "_widths",
        "console",
        "fixed_columns",
        "fixed_rows",
        "margin",
        "padding",
    )

    def __init__(self, table: TextCells) -> None:
        self._table = table
        self.console = table.app.console
        self.padding = table.cell_padding
        self.margin = Segment(" " * self.padding, _NO_STYLE)
        self.fixed_rows, self.fixed_columns = table.fixed_rows, table.fixed_columns
        self._styles: dict[str | None, Style] = {}
        self._cell_styles: dict[tuple[bool, bool, bool], tuple[Style, Style]] = {}
        self._widths: list[int] | None = None

    def style(self, component: str | None) -> Style:
        """The table's rich style (None), or a component's."""
        style = self._styles.get(component)
        if style is None:
            table = self._table
            if component is None:
                style = super(TextCells, table).rich_style
            else:
                style = table.get_component_styles(component).rich_style
            style = self._styles[component] = table.same_style(style)
        return style

    def cell_styles(self, fixed: bool, hover: bool, cursor: bool) -> tuple[Style, Style]:
        """The styles a data cell is drawn under (DataTable's), and over."""
        key = (fixed, hover, cursor)
        styles = self._cell_styles.get(key)
        if styles is None:
            table = self._table
            under, over = table._get_styles_to_render_cell(
                False,
                False,
                fixed,
                hover,
                cursor,
                table.show_cursor,
                table._show_hover_cursor,
                table.cursor_foreground_priority == "css",
                table.cursor_background_priority == "css",
            )
            styles = self._cell_styles[key] = (table.same_style(under), table.same_style(over))
        return styles

    def widths(self) -> list[int]:
        """Each column's width, in order, its padding included."""
        if self._widths is None:
            table = self._table
            self._widths = [column.get_render_width(table) for column in table.ordered_columns]
        return self._widths

    def table_width(self) -> int:
        return sum(self.widths()) + self._table._row_label_column_width
