"""The usage table: a million charges scrolled through as if they were all there, with only the
rows on screen (and a page either side) ever in memory.

Built like Toolong's log view: a `ScrollView` with the line API. The table knows how many rows the
filter matches and keeps a small cache of the rows it has been given, by position. Painting a line
reads the cache only; when the view moves, the table works out which rows it lacks and asks a
thread worker for them, which queries SQLite and posts `RowsLoaded` back (it never touches the
widget). Rows next to one already held are fetched by key (the page after or before it: as fast a
million rows down as at the top); a jump elsewhere uses an offset counted from the nearer end.

Every string from the service is drawn through `core.sanitize.inert_line` as plain segments:
nothing is parsed as markup. Flagged charges are drawn in the theme's error colour.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from dataclasses import dataclass
from functools import lru_cache

from rich.cells import cell_len, set_cell_size
from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from svc_console.core.money import format_usdc, from_atomic
from svc_console.core.sanitize import inert_line
from svc_console.core.usage import Reconciled, UsageFilter
from svc_console.ledger import usage_query as ledger_usage
from svc_console.ledger.readers import Connection, Reader, ReadError
from svc_console.ledger.usage_query import UsageRow
from svc_console.tui.usage.provider_names import ProviderNames

CACHE_ROWS = 3000
# Rows loaded at first, before the table knows its height.
FIRST_ROWS = 120
# How many pages beyond the visible one are kept loaded ahead of the cursor, and behind it.
AHEAD_PAGES = 4
BEHIND_PAGES = 1
# Labels of the reconciliation column.
STATE_LABELS = {
    "no_request": "NO APPROVAL",
    "no_key": "NO APPROVAL",
    "not_approved": "NO APPROVAL",
    "duplicate": "DUPLICATE",
    "no_ceiling": "NO CEILING",
    "above_ceiling": "ABOVE APPROVAL",
    "conflict": "CONFLICT",
}


def state_label(row: UsageRow) -> str:
    if row.state == Reconciled.ok:
        return "ok"
    return STATE_LABELS.get(row.flag or "", str(row.state).upper())


def when(at: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.gmtime(at))


def usdc(units: int | None) -> str:
    """Exact, with thousands grouped: "36,101.08731"."""
    if units is None:
        return "-"
    whole, _, fraction = format_usdc(from_atomic(units)).partition(".")
    return f"{int(whole):,}.{fraction}"


def fit(text: str, width: int) -> str:
    """Exactly `width` cells: padded, or cut with an ellipsis."""
    if cell_len(text) <= width:
        return set_cell_size(text, width)
    return set_cell_size(text, max(0, width - 1)) + "…" if width else ""


@dataclass(frozen=True)
class Column:
    key: str
    title: str
    width: int  # 0: shares the room left with the other flexible columns
    right: bool = False
    min_table_width: int = 0  # shown only when the table is at least this wide


COLUMNS = (
    Column("when", "time (UTC)", 16),
    Column("agent", "agent", 0),
    Column("provider", "provider", 0),
    Column("resource", "resource", 0, min_table_width=112),
    Column("chain", "chain", 8, min_table_width=96),
    Column("amount", "USDC", 10, right=True),
    Column("ceiling", "approved", 10, right=True, min_table_width=88),
    Column("state", "reconciled", 14),
)


@lru_cache(maxsize=8)
def layout(width: int) -> tuple[tuple[Column, int], ...]:
    """The columns shown at this width and the width of each (flexible ones share the rest)."""
    shown = [c for c in COLUMNS if width >= c.min_table_width]
    fixed = sum(c.width for c in shown) + len(shown)  # one space after each column
    flexible = [c for c in shown if c.width == 0]
    room = max(0, width - fixed)
    share, extra = divmod(room, len(flexible)) if flexible else (0, 0)
    sized = []
    for column in shown:
        size = column.width
        if column.width == 0:
            size = share + (1 if extra > 0 else 0)
            extra -= 1
        sized.append((column, size))
    return tuple(sized)


@dataclass(frozen=True)
class Fetch:
    """Rows `start` to `start + limit` of the view, and how to find them quickly."""

    start: int
    limit: int
    after: tuple[float, int] | None = None  # the key of row `start - 1`
    before: tuple[float, int] | None = None  # the key of row `start + limit`
    from_end: int | None = None  # offset counted from the last row


def load(conn: Connection, f: UsageFilter, fetch: Fetch) -> list[UsageRow]:
    """Run one fetch (in a worker thread)."""
    if fetch.after is not None:
        return ledger_usage.after(conn, f, fetch.after, fetch.limit)
    if fetch.before is not None:
        return ledger_usage.before(conn, f, fetch.before, fetch.limit)
    if fetch.from_end is not None:
        rows = ledger_usage.window(conn, f, fetch.from_end, fetch.limit, newest_first=False)
        rows.reverse()
        return rows
    return ledger_usage.window(conn, f, fetch.start, fetch.limit)


class UsageTable(ScrollView, can_focus=True, inherit_bindings=False):
    """Charges newest first. The screen calls `show(filter)`; keys come from the screen's
    bindings (one registry), which call the `move_*` methods."""

    COMPONENT_CLASSES = {
        "usage-table--header",
        "usage-table--cursor",
        "usage-table--flagged",
        "usage-table--muted",
    }
    DEFAULT_CSS = """
    UsageTable {
        overflow-x: hidden;
        overflow-y: scroll;
        & > .usage-table--header { background: $panel; color: $foreground; text-style: bold; }
        & > .usage-table--cursor { background: $block-cursor-blurred-background; }
        &:focus > .usage-table--cursor {
            background: $block-cursor-background;
            color: $block-cursor-foreground;
        }
        & > .usage-table--flagged { color: $text-error; text-style: bold; }
        & > .usage-table--muted { color: $text-muted; }
    }
    """

    class RowsLoaded(Message):
        def __init__(self, generation: int, fetch: Fetch, rows: list[UsageRow]) -> None:
            super().__init__()
            self.generation, self.fetch, self.rows = generation, fetch, rows

    class Counted(Message):
        """How many rows the filter matches (posted to the table, bubbles to the screen)."""

        def __init__(self, generation: int, total: int) -> None:
            super().__init__()
            self.generation, self.total = generation, total

    class Highlighted(Message):
        """The row under the cursor (None when there is none, or it is still loading)."""

        def __init__(self, row: UsageRow | None) -> None:
            super().__init__()
            self.row = row

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.reader: Reader | None = None
        self.filter = UsageFilter()
        self.generation = 0
        self.total: int | None = None
        self.cursor = 0
        self.rows: OrderedDict[int, UsageRow] = OrderedDict()
        self._in_flight: set[tuple[int, int]] = set()
        self._empty_text = "No charges."
        self.names = ProviderNames()

    # -- what the screen drives --------------------------------------------------------------------

    def attach(self, reader: Reader) -> None:
        self.reader = reader

    def show(self, f: UsageFilter, *, empty_text: str = "No charges.") -> None:
        """Start over on a (new) filter: forget every row, count again, load the top."""
        self.filter = f
        self._empty_text = empty_text
        self.generation += 1
        self.total = None
        self.cursor = 0
        self.rows.clear()
        self._in_flight.clear()
        if self.is_mounted:
            self.scroll_to(y=0, animate=False, immediate=True)
            self._resize_virtual()
            self.refresh()
        # May run before the table is mounted (the screen asks early): the worker's answer
        # waits in the message queue until the table is ready for it.
        self._load_around(count=True, first=True)
        self.post_message(self.Highlighted(None))

    @property
    def page(self) -> int:
        """Rows visible at once (the header takes one line)."""
        return max(1, self.scrollable_content_region.height - 1)

    @property
    def selected(self) -> UsageRow | None:
        return self.rows.get(self.cursor)

    def move_cursor(self, delta: int) -> None:
        self.move_to(self.cursor + delta, keep_offset=abs(delta) > 1)

    def move_to(self, index: int, *, keep_offset: bool = False) -> None:
        """Put the cursor on row `index`; a page move keeps it at the same place on screen."""
        if not self.total:
            return
        index = max(0, min(index, self.total - 1))
        if index == self.cursor:
            return
        top = int(self.scroll_y)
        if keep_offset:
            top = top + (index - self.cursor)
        elif index < top:
            top = index
        elif index >= top + self.page:
            top = index - self.page + 1
        old = self.cursor
        self.cursor = index
        top = max(0, min(top, max(0, self.total - self.page)))
        if top != int(self.scroll_y):
            self.scroll_to(y=top, animate=False, immediate=True)
        else:
            self._refresh_row(old)
            self._refresh_row(index)
            self._load_around()
        self.post_message(self.Highlighted(self.selected))

    # -- loading -----------------------------------------------------------------------------------

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        if self.total:
            # Scrolled by the mouse or the scrollbar: the cursor stays on screen.
            top = int(new_value)
            if not top <= self.cursor < top + self.page:
                self.cursor = min(max(self.cursor, top), top + self.page - 1, self.total - 1)
                self.post_message(self.Highlighted(self.selected))
        self._load_around()

    def on_resize(self, event: events.Resize) -> None:
        self._resize_virtual()
        self._load_around()

    def _resize_virtual(self) -> None:
        known = self.total if self.total is not None else len(self.rows)
        self.virtual_size = Size(self.scrollable_content_region.width, known + 1)

    def _load_around(self, *, count: bool = False, first: bool = False) -> None:
        """Ask for the rows on screen and a few pages around them that are neither held nor on
        their way; with `count`, count the filter's rows too (in the same worker)."""
        if self.reader is None or (self.total is None and not count):
            return  # the count and the top rows are on their way
        top, page = int(self.scroll_y), self.page
        low = max(0, top - BEHIND_PAGES * page)
        high = top + (1 + AHEAD_PAGES) * page
        if first:
            # Before the first layout the height is not known yet: load enough for any screen.
            high = max(high, FIRST_ROWS)
        if self.total is not None:
            high = min(high, self.total)
        coming = {i for start, limit in self._in_flight for i in range(start, start + limit)}
        missing = [i for i in range(low, high) if i not in self.rows and i not in coming]
        fetch = self._plan(missing[0], missing[-1] - missing[0] + 1) if missing else None
        if fetch is None and not count:
            return
        if fetch is not None:
            self._in_flight.add((fetch.start, fetch.limit))
        generation, f = self.generation, self.filter
        self.run_worker(
            lambda: self._fetch(generation, f, fetch, count),
            thread=True,
            group="usage-window",
            exit_on_error=False,
            name="usage rows",
        )

    def _plan(self, start: int, limit: int) -> Fetch:
        if start - 1 in self.rows:
            return Fetch(start, limit, after=self.rows[start - 1].key)
        if start + limit in self.rows:
            return Fetch(start, limit, before=self.rows[start + limit].key)
        if self.total is not None and start > self.total // 2:
            return Fetch(start, limit, from_end=self.total - (start + limit))
        return Fetch(start, limit)

    def _fetch(self, generation: int, f: UsageFilter, fetch: Fetch | None, count: bool) -> None:
        """In a worker thread: query, then post what was found. Touches no widget state."""
        reader = self.reader
        if reader is None:
            return
        with reader.lock:
            if reader.closed:
                return
            try:
                if fetch is not None:
                    rows = load(reader.conn, f, fetch)
                    self.names.learn(reader.conn, (row.provider for row in rows))
                    self.post_message(self.RowsLoaded(generation, fetch, rows))
                if count:
                    total = ledger_usage.count(reader.conn, f)
                    self.post_message(self.Counted(generation, total))
            except ReadError:
                if not reader.closed:  # interrupted because the screen is closing: not news
                    raise

    def on_usage_table_rows_loaded(self, message: UsageTable.RowsLoaded) -> None:
        message.stop()
        if message.generation != self.generation:
            return
        start = message.fetch.start
        self._in_flight.discard((start, message.fetch.limit))
        for offset, row in enumerate(message.rows):
            self.rows[start + offset] = row
            self.rows.move_to_end(start + offset)
        while len(self.rows) > CACHE_ROWS:
            self.rows.popitem(last=False)
        if self.total is None:
            self._resize_virtual()
        self.refresh()
        if start <= self.cursor < start + len(message.rows):
            self.post_message(self.Highlighted(self.selected))
        self._load_around()

    def on_usage_table_counted(self, message: UsageTable.Counted) -> None:
        if message.generation != self.generation:
            message.stop()
            return
        self.total = message.total
        self._resize_virtual()
        self.refresh()
        self._load_around()

    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is not None and offset.y >= 1:
            self.focus()
            self.move_to(int(self.scroll_y) + offset.y - 1)

    # -- painting ----------------------------------------------------------------------------------

    def _cells(self, row: UsageRow) -> dict[str, str]:
        return {
            "when": when(row.at),
            "agent": inert_line(row.agent or "-", 60),
            "provider": inert_line(self.names.shown(row.provider), 60),
            "resource": inert_line(row.resource, 80),
            "chain": inert_line(row.chain, 20),
            "amount": usdc(row.amount),
            "ceiling": usdc(row.ceiling),
            "state": state_label(row),
        }

    def _strip(self, texts: dict[str, str], style: Style, width: int, overrides: dict) -> Strip:
        segments = []
        for column, size in layout(width):
            text = texts.get(column.key, "")
            if column.right and cell_len(text) < size:
                text = " " * (size - cell_len(text)) + text
            else:
                text = fit(text, size)
            segments.append(Segment(text + " ", overrides.get(column.key, style)))
        strip = Strip(segments)
        return strip.adjust_cell_length(width, style)

    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        base = self.rich_style
        if y == 0:
            header = base + self.get_component_rich_style("usage-table--header")
            return self._strip({c.key: c.title for c in COLUMNS}, header, width, {})
        index = int(self.scroll_y) + y - 1
        muted = base + self.get_component_rich_style("usage-table--muted")
        if self.total == 0:
            text = self._empty_text if y == 1 else ""
            return Strip([Segment(set_cell_size(f" {text}", width), muted)])
        if self.total is not None and index >= self.total:
            return Strip.blank(width, base)
        row = self.rows.get(index)
        style = base
        if index == self.cursor:
            style = base + self.get_component_rich_style("usage-table--cursor")
        if row is None:
            if self.total is None and index >= len(self.rows):
                return Strip.blank(width, base)
            return self._strip({"when": "…"}, style + muted, width, {})
        overrides = {}
        if row.flagged:
            flagged = style + self.get_component_rich_style("usage-table--flagged")
            overrides = {"amount": flagged, "state": flagged, "ceiling": flagged}
        elif index != self.cursor:
            overrides = {"state": muted, "ceiling": muted}
        return self._strip(self._cells(row), style, width, overrides)

    def _refresh_row(self, index: int) -> None:
        self.refresh_line(index + 1)
