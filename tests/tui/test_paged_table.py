"""A page read again that shows nothing new is not rebuilt: under load the approvals screen reads
its page at every burst of arrivals, and most arrivals land past the page's end. A page that
differs in a row, a cell or its order is rebuilt, and the selection follows its request."""

from __future__ import annotations

from decimal import Decimal

from helpers import plain_request
from textual.app import App, ComposeResult

from svc_console.core.models import Estimate, SpendRequest
from svc_console.core.states import State
from svc_console.tui.colors import palette
from svc_console.tui.widgets.queue import RequestQueue

NOW = 1_795_000_000.0


class CountingQueue(RequestQueue):
    """The queue, counting its rebuilds (each clears the table and adds every row again)."""

    rebuilt = 0

    def clear(self, columns: bool = False) -> CountingQueue:
        self.rebuilt += 1
        return super().clear(columns)


class QueueApp(App[None]):
    def compose(self) -> ComposeResult:
        yield CountingQueue()


def pending(n: int, price: str = "0.01") -> SpendRequest:
    estimate = Estimate(amount_usdc=Decimal(price), chain="base", protocol="x402")
    update = {"state": State.pending, "created_at": NOW - 100 + n, "estimate": estimate}
    return plain_request(f"req_{n}").model_copy(update=update)


def again(page: list[SpendRequest]) -> list[SpendRequest]:
    """The same requests as a new read of the ledger returns them: new objects."""
    return [request.model_copy() for request in page]


async def test_the_same_page_read_again_is_kept_and_any_change_rebuilds_it():
    app = QueueApp()
    async with app.run_test() as pilot:
        table = app.query_one(CountingQueue)
        colours = palette(app)
        page = [pending(n) for n in range(3)]
        table.show(page, NOW, colours)
        table.move_cursor(row=1)
        await pilot.pause()
        assert table.rebuilt == 1

        read = again(page)
        table.show(read, NOW, colours)
        assert table.rebuilt == 1  # nothing on screen changed
        assert table.selected_id == "req_1"
        assert table.requests["req_0"] is read[0]  # the newer records are the ones kept

        # A row more, a cell changed, the rows in another order, the clock moved on: rebuilt,
        # and the selection stays on its request.
        changes = [
            ([*again(page), pending(3)], NOW),
            ([pending(0, "0.02"), *again(page[1:])], NOW),
            (again(page[::-1]), NOW),
            (again(page), NOW + 120),
        ]
        for rebuilt, (changed, now) in enumerate(changes, start=2):
            table.show(changed, now, colours)
            assert table.rebuilt == rebuilt
            assert table.selected_id == "req_1"
        assert str(table.get_row("req_0")[2]) == "0.01"  # the last page's price, drawn

        # An operator's move (`cursor`) is never skipped, even onto the page already shown.
        table.show(again(page), NOW + 120, colours, cursor=0)
        assert table.rebuilt == len(changes) + 2 and table.selected_id == "req_0"
