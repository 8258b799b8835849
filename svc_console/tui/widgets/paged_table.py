"""A table that shows one page of requests: the rows the ledger returned for the window on
screen, never the whole list. Moving past its first or last row asks the screen for the
neighbouring page (`PagedTable.Edge`), so the operator scrolls through ten thousand requests with
the same keys as through ten.

The selection is a request, not a row: when the page is read again (requests arrive, expire or
are decided around it), the cursor follows the selected request's id. When that request left the
page, the table says so (`gone_id`) instead of silently selecting whichever request took its row:
nothing is selected, and the cursor shows again at the operator's next move.

Every cell is a `rich.text.Text` built from sanitised values: a DataTable would otherwise read a
plain string as markup.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from rich.text import Text
from textual import events
from textual.message import Message
from textual.widgets.data_table import RowKey

from svc_console.core.models import SpendRequest
from svc_console.tui.colors import Palette
from svc_console.tui.widgets.giving_way import fit_table
from svc_console.tui.widgets.text_cells import TextCells


class PagedTable(TextCells):
    """One page of requests keyed by request id; subclasses say which columns and cells."""

    COLUMNS: tuple[tuple[str, str], ...] = ()
    # Columns whose cells change with the clock alone (ages, time left), refreshed by `tick`.
    CLOCK_COLUMNS: tuple[str, ...] = ()
    # Columns that shrink when the table is too narrow, first to last, each with the width it
    # keeps: names give way, the columns the operator decides on never do.
    GIVE_WAY: dict[str, int] = {}

    class Edge(Message):
        """The cursor tried to leave the page: `direction` is 1 (past the last row) or -1."""

        def __init__(self, table: PagedTable, direction: int) -> None:
            super().__init__()
            self.table = table
            self.direction = direction

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, cursor_type="row", zebra_stripes=True)
        self.requests: dict[str, SpendRequest] = {}
        # The request the operator had selected when it left the page; None while the cursor
        # is on a request of the page.
        self.gone_id: str | None = None
        # Requests the operator decided from this table: their leaving is no loss of selection.
        self._let_go: set[str] = set()
        # Each column's natural width (its widest cell or label), measured as rows are shown.
        self._natural: dict[str, int] = {}
        # Called at once after each of the operator's moves, before the table's RowHighlighted
        # is handled: a detail that follows the selection is drawn in the cursor's frame.
        self.follow: Callable[[], None] | None = None

    def on_mount(self) -> None:
        for key, label in self.COLUMNS:
            self.add_column(label, key=key)
            self._natural[key] = len(label)

    def on_resize(self) -> None:
        self.fit_columns()

    def fit_columns(self) -> None:
        """Share the table's width: the natural widths when they fit, else the columns of
        `GIVE_WAY` shrink in their order (their cells end in an ellipsis)."""
        fit_table(self, self._natural, self.GIVE_WAY)

    def _measure(self, cells: Iterable[Text]) -> None:
        for (key, _), cell in zip(self.COLUMNS, cells, strict=True):
            self._natural[key] = max(self._natural[key], cell.cell_len)

    def cells(self, request: SpendRequest, now: float, colours: Palette) -> list[Text]:
        raise NotImplementedError

    def clock_cells(self, request: SpendRequest, now: float, colours: Palette) -> list[Text]:
        """The cells of `CLOCK_COLUMNS`, in that order."""
        return []

    # -- what is shown --------------------------------------------------------------------------

    @property
    def selected_id(self) -> str | None:
        if self.row_count == 0 or self.gone_id is not None:
            return None
        row_key, _ = self.coordinate_to_cell_key(self.cursor_coordinate)
        return row_key.value

    @property
    def selected(self) -> SpendRequest | None:
        request_id = self.selected_id
        return self.requests.get(request_id) if request_id else None

    def show(
        self,
        requests: Iterable[SpendRequest],
        now: float,
        colours: Palette,
        *,
        cursor: int | None = None,
    ) -> None:
        """Show exactly this page. The cursor stays on the same request when it is still here;
        when it left, `gone_id` names it and nothing is selected (the cursor waits at the same
        row, hidden). `cursor` puts it on a given row (0, or -1 for the last), as the operator's
        own move does."""
        page = {request.id: request for request in requests}
        rows = {request_id: self.cells(r, now, colours) for request_id, r in page.items()}
        if cursor is None and self._shows(rows):
            self.requests = page  # newer records of the same rows: nothing to draw
            return
        keep, index = self.gone_id or self.selected_id, self.cursor_row
        self.requests = page
        self._natural = {key: len(label) for key, label in self.COLUMNS}
        with self.app.batch_update():
            self.clear()
            for request_id, cells in rows.items():
                self._measure(cells)
                self.add_row(*cells, key=request_id)
            self.fit_columns()
            if cursor is not None or keep in self.requests:
                self.gone_id = None
            elif keep in self._let_go:
                # The operator decided it: the request that takes its row is selected, as
                # after a move of their own, so a run of requests is decided key after key.
                self._let_go.discard(keep)
                self.gone_id = None
            else:
                self.gone_id = keep
            self.show_cursor = self.gone_id is None
            if not self.row_count:
                return
            if cursor is not None:
                row = cursor if cursor >= 0 else self.row_count + cursor
            elif keep in self.requests:
                row = self.get_row_index(RowKey(keep))
            else:
                row = index
            self.move_cursor(row=max(0, min(row, self.row_count - 1)))

    def _shows(self, rows: dict[str, list[Text]]) -> bool:
        """Whether the table shows these rows already (each request's cells as drawn now), in
        this order, with the selection on one of them. A page read again after requests arrived
        past its end (the queue's usual case under load) then rebuilds nothing: a rebuild makes
        the table draw every visible cell again, at each arrival."""
        if self.gone_id is not None or list(rows) != list(self.requests):
            return False
        return all(
            list(map(_drawn, self.get_row(request_id))) == list(map(_drawn, cells))
            for request_id, cells in rows.items()
        )

    def let_go(self, request_ids: Iterable[str]) -> None:
        """The operator is deciding these requests here: when they leave, the cursor stays at
        the row, on whichever request comes under it. One that left already (decided elsewhere,
        expired) stays lost: its decision is refused, and a dialog still open about it must not
        find the detail showing the request that took its row."""
        self._let_go.update(request_ids)

    def hold(self, request_ids: Iterable[str]) -> None:
        """The decision on these was not made: their leaving is a lost selection again."""
        self._let_go.difference_update(request_ids)

    def choose(self) -> bool:
        """The operator moved after their selection left the page: the row under the (hidden)
        cursor becomes the selection, without moving. True when there was a lost one."""
        if self.gone_id is None:
            return False
        self.gone_id = None
        self.show_cursor = True
        if self.row_count:
            row_key, _ = self.coordinate_to_cell_key(self.cursor_coordinate)
            self.post_message(self.RowHighlighted(self, self.cursor_row, row_key))
        return True

    def tick(self, now: float, colours: Palette) -> None:
        """Refresh the cells that depend on the clock, and only those whose text changed: any
        update makes the table render every visible cell again."""
        wider = False
        for request in self.requests.values():
            cells = self.clock_cells(request, now, colours)
            for key, cell in zip(self.CLOCK_COLUMNS, cells, strict=True):
                shown = self.get_cell(request.id, key)
                if (shown.plain, shown.style) == (cell.plain, cell.style):
                    continue
                # Widths may grow ("59s" → "1m 00s"); a cell is never cut to its old width.
                if cell.cell_len > self._natural[key]:
                    self._natural[key] = cell.cell_len
                    wider = True
                self.update_cell(request.id, key, cell)
        if wider:
            self.fit_columns()

    # -- leaving the page -----------------------------------------------------------------------

    def action_cursor_down(self) -> None:
        if self.choose():
            self._moved()
            return
        if self.row_count and self.cursor_row >= self.row_count - 1:
            self.post_message(self.Edge(self, 1))
            return
        super().action_cursor_down()
        self._moved()

    def action_cursor_up(self) -> None:
        if self.choose():
            self._moved()
            return
        if self.row_count and self.cursor_row <= 0:
            self.post_message(self.Edge(self, -1))
            return
        super().action_cursor_up()
        self._moved()

    def _moved(self) -> None:
        if self.follow is not None:
            self.follow()

    def action_page_down(self) -> None:
        self.choose()
        super().action_page_down()
        self._moved()

    def action_page_up(self) -> None:
        self.choose()
        super().action_page_up()
        self._moved()

    def action_scroll_top(self) -> None:
        self.choose()
        super().action_scroll_top()
        self._moved()

    def action_scroll_bottom(self) -> None:
        self.choose()
        super().action_scroll_bottom()
        self._moved()

    def _on_click(self, event: events.Click) -> None:
        # A click selects the row clicked, whatever was lost before. Textual then runs the
        # DataTable's own handler (every class's along the MRO), which moves the cursor.
        self.gone_id = None
        self.show_cursor = True


def _drawn(cell: Text) -> tuple[object, ...]:
    """What of a cell shows on screen (`Text`'s own equality leaves its style out)."""
    return (cell.plain, cell.style, cell.spans, cell.justify, cell.overflow, cell.no_wrap)
