"""How a table's columns share a width too narrow for all of them: the columns that may give way
shrink, in their order, each down to its floor, before any other column loses a cell. The
columns that carry the decision (amount, time left, verdict, risk) never give way.
"""

from __future__ import annotations

from collections.abc import Mapping


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
