"""One line above the lists: which list is shown (with counts), how it is sorted, the filter's
verdict, and which rows of how many are on screen. Everything on it is the console's own text."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.widgets import Static

from svc_console.tui.colors import Palette
from svc_console.tui.request_lists import Filter, ListState


class ListStatus(Static):
    """Pending and History as tabs with their counts ("shown/all" for the filtered list on
    screen); sort, filter problem and page range."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("", id=id, markup=False)

    def show(
        self,
        lists: dict[str, ListState],
        counts: dict[str, str],
        active: str,
        filter: Filter,
        shown: int,
        colours: Palette,
        marked: str = "",
    ) -> None:
        tabs = Text()
        for name, state in lists.items():
            label = f" {state.kind.title} {counts[name]} "
            tabs.append(label, style="reverse bold" if name == active else colours.label)
            tabs.append(" ")
        current = lists[active]
        right = Text(justify="right")
        if marked:
            right.append(f"{marked} · ", style=f"bold {colours.info}")
        if filter.problem:
            right.append(f"{filter.problem} · ", style=colours.warn)
        right.append(current.sort_text, style=colours.label)
        right.append(f" · {current.range_text(shown)}")
        grid = Table.grid(expand=True)
        grid.add_column(no_wrap=True)
        grid.add_column(justify="right", no_wrap=True, overflow="ellipsis")
        grid.add_row(tabs, right)
        # One line whatever it says: no layout of the screen is needed to show it.
        self.update(grid, layout=False)
