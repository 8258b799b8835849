"""Counts in words, said once for every screen and command: "1 charge", "2 charges",
"1,204 requests". A count beside its noun is the most common sentence the console writes, and
the easiest to get wrong one case at a time.
"""

from __future__ import annotations


def plural(count: int, noun: str, many: str | None = None) -> str:
    """`count` and its noun, singular for exactly one: "1 charge", "0 charges", "3 policies"
    (`many` names the plural where an "s" does not make it)."""
    return f"{count:,} {noun if count == 1 else (many or noun + 's')}"
