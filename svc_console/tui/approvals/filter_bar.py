"""The filter bar: words matched against agent, endpoint and provider, plus `risk:` and
`verdict:` tokens. Shown while it has focus or holds a filter; the screen applies each change."""

from __future__ import annotations

from textual.widgets import Input

PLACEHOLDER = "filter: words · risk:high|warn|none · verdict:ask|deny|auto  (esc clears)"


class FilterBar(Input):
    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(placeholder=PLACEHOLDER, id=id, max_length=200, compact=True)
