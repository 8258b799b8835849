"""How a table's columns share a width too narrow for all of them: the columns that may give way
shrink, in their order, each down to its floor, before any other column loses a cell. The
columns that carry the decision (amount, time left, verdict, risk) never give way.
`fit_table` sets a table's widths so.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from textual.widgets import DataTable
from textual.widgets.data_table import ColumnKey


def give_way(natural: Mapping[str, int], room: int, yielding: Mapping[str, int]) -> dict[str, int]:
    """Each column's width within `room`: the natural widths when they fit; else the columns of
    `yielding` (in its order, each with its floor) shrink until the rest fits or they are all at
    their floors. Widths exclude padding."""
    widths = dict(natural)
    excess = sum(widths.values()) - room
    for key, floor in yielding.items():
        if excess <= 0:
            break
        if key not in widths:
            continue
        cut = min(excess, max(0, widths[key] - floor))
        widths[key] -= cut
        excess -= cut
    return widths


def fit_table(
    table: DataTable[Any], natural: Mapping[str, int], yielding: Mapping[str, int]
) -> None:
    """Set `table`'s column widths (keyed as `natural`) to share its width as `give_way` says;
    the cells of the columns that gave way end in an ellipsis."""
    room = table.scrollable_content_region.width - 2 * table.cell_padding * len(table.columns)
    if room <= 0:
        return
    for key, width in give_way(natural, room, yielding).items():
        column = table.columns[ColumnKey(key)]
        column.auto_width, column.width = False, width
    table._require_update_dimensions = True
    table.refresh()
