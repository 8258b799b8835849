"""The approval queue: one row per pending request, oldest first, keyed by request id.

Rows are changed in place by key (added, updated, removed) so the cursor stays on the request the
operator was looking at. Every cell is a `rich.text.Text` built from sanitised values: a DataTable
would otherwise read a plain string as markup.
"""

from __future__ import annotations

from collections.abc import Iterable

from rich.text import Text
from textual.widgets import DataTable
from textual.widgets.data_table import RowKey

from svc_console.core.models import Severity, SpendRequest
from svc_console.core.sanitize import inert_line
from svc_console.tui import present
from svc_console.tui.colors import Palette

COLUMNS = (
    ("agent", "agent"),
    ("endpoint", "endpoint"),
    ("usdc", "est. USDC"),
    ("age", "age"),
    ("expires", "expires"),
    ("verdict", "verdict"),
    ("risk", "risk"),
)
# Below this many seconds left, the expiry cell is drawn as a warning.
EXPIRY_WARNING_S = 60.0


def _order(request: SpendRequest) -> tuple[float, str]:
    return (request.created_at, request.id)


def endpoint_name(request: SpendRequest, limit: int = 24) -> str:
    if request.endpoint is not None:
        return inert_line(request.endpoint.name, limit)
    return inert_line(request.endpoint_id or request.dataset_id or request.kind, limit)


class RequestQueue(DataTable[Text]):
    """The pending requests; the screen feeds it and asks which one is selected."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, cursor_type="row", zebra_stripes=True)
        self.requests: dict[str, SpendRequest] = {}

    def on_mount(self) -> None:
        for key, label in COLUMNS:
            self.add_column(label, key=key)

    # -- what is shown --------------------------------------------------------------------------

    @property
    def selected_id(self) -> str | None:
        if self.row_count == 0:
            return None
        row_key, _ = self.coordinate_to_cell_key(self.cursor_coordinate)
        return row_key.value

    @property
    def selected(self) -> SpendRequest | None:
        request_id = self.selected_id
        return self.requests.get(request_id) if request_id else None

    def replace_all(self, requests: Iterable[SpendRequest], now: float, colours: Palette) -> None:
        """Show exactly these requests, keeping the cursor on the same one if it is still there."""
        self.requests = {r.id: r for r in sorted(requests, key=_order)}
        self._rebuild(now, colours)

    def upsert(self, request: SpendRequest, now: float, colours: Palette) -> bool:
        """Add or refresh one request's row; True when it was not in the queue before."""
        known = request.id in self.requests
        self.requests[request.id] = request
        if known:
            cells = self._cells(request, now, colours)
            for (key, _), cell in zip(COLUMNS, cells, strict=True):
                self.update_cell(request.id, key, cell, update_width=True)
            return False
        last = max(self.requests.values(), key=_order)
        if last.id == request.id:
            self.add_row(*self._cells(request, now, colours), key=request.id)
        else:
            # Out of order (an older request finished intake late, or was re-queued after a
            # re-price): rebuild rather than misplace it.
            self.requests = dict(sorted(self.requests.items(), key=lambda item: _order(item[1])))
            self._rebuild(now, colours)
        return True

    def drop(self, request_id: str) -> bool:
        """Remove a request's row; True when it was there."""
        if self.requests.pop(request_id, None) is None:
            return False
        keep = self.selected_id
        index = self.cursor_row
        self.remove_row(request_id)
        if keep is not None and keep != request_id and keep in self.requests:
            self.move_cursor(row=self.get_row_index(keep))
        elif self.row_count:
            self.move_cursor(row=min(index, self.row_count - 1))
        return True

    def tick(self, now: float, colours: Palette) -> None:
        """Refresh the cells that depend on the clock."""
        for request in self.requests.values():
            # Widths may grow ("59s" → "1m 00s"); a cell is never cut to its old width.
            age = Text(present.age(request, now))
            self.update_cell(request.id, "age", age, update_width=True)
            expires = self._expires(request, now, colours)
            self.update_cell(request.id, "expires", expires, update_width=True)

    # -- rows -----------------------------------------------------------------------------------

    def _rebuild(self, now: float, colours: Palette) -> None:
        keep, index = self.selected_id, self.cursor_row
        self.clear()
        for request in self.requests.values():
            self.add_row(*self._cells(request, now, colours), key=request.id)
        if keep in self.requests:
            self.move_cursor(row=self.get_row_index(RowKey(keep)))
        elif self.row_count:
            self.move_cursor(row=min(index, self.row_count - 1))

    def _cells(self, request: SpendRequest, now: float, colours: Palette) -> list[Text]:
        return [
            Text(inert_line(request.agent, 20)),
            Text(endpoint_name(request)),
            Text(present.price(request.estimate), justify="right"),
            Text(present.age(request, now)),
            self._expires(request, now, colours),
            Text(present.verdict(request)),
            self._risk(request, colours),
        ]

    @staticmethod
    def _expires(request: SpendRequest, now: float, colours: Palette) -> Text:
        left = present.seconds_left(request, now)
        style = colours.warn if left is not None and left < EXPIRY_WARNING_S else ""
        return Text(present.time_left(request, now), style=style)

    @staticmethod
    def _risk(request: SpendRequest, colours: Palette) -> Text:
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
