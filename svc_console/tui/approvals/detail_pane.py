"""The detail pane of the approvals screen: the selected request's detail with, under it, a line
naming the keys that scroll and size it; a legend of the list's risk and verdict columns below
the list; and the keys themselves, a mixin of `ApprovalsScreen`.

The pane takes a share of the terminal: 40% of its width beside the list by default, 60% of its
height when stacked on a narrow terminal; `<` and `>` step through five sizes for the session.
The sizes are CSS classes (`-size-N`, in app.tcss), so a terminal resized between side by side
and stacked needs no code.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Static

from svc_console.tui.approvals.detail import RequestDetail

SIZES = 5  # classes -size-0 to -size-4 in app.tcss
DEFAULT_SIZE = 1
LIST_LEGEND = (
    "risk: H high · W warning (how many flags; the detail gives each reason)"
    " · verdict: the policy's — auto, ask, deny"
)

HELP_NOTES = (
    "risk column: H2 W1 = two high-severity flags and one warning (none: -); the detail lists"
    " each flag with its reason, high first.\n"
    "verdict column: what the policy (SKILLS.md) said: auto (a rule approves), ask (the operator"
    " decides), deny; the detail names the rule.\n"
    "● before an agent: the request is marked (space); a or d then decides every marked one.\n"
    "The detail: the console's own facts first, then what the agent wrote, framed as its words."
)


class DetailPane(Vertical):
    """The detail above a line of its keys; sized by its -size-N class."""

    def __init__(self, hint: str, *, id: str | None = None) -> None:
        super().__init__(id=id, classes=f"-size-{DEFAULT_SIZE}")
        self.hint = hint
        self.size_step = DEFAULT_SIZE

    def compose(self) -> ComposeResult:
        yield RequestDetail(id="detail")
        yield Static(self.hint, id="detail-hint", markup=False)

    def resize(self, steps: int) -> int:
        """`steps` sizes larger (or smaller), within the five; the size now."""
        step = max(0, min(SIZES - 1, self.size_step + steps))
        self.remove_class(f"-size-{self.size_step}")
        self.add_class(f"-size-{step}")
        self.size_step = step
        return step


class DetailKeys:
    """`v` all of the agent's text, `J`/`K` scroll the detail, `<`/`>` size the pane."""

    query_one: Callable[..., Any]
    _show_selected: Callable[[], None]
    _key_of: Callable[[str], str]

    def detail_hint(self) -> str:
        keys = [
            self._key_of(f"approvals.{name}")
            for name in ("detail_down", "detail_up", "detail_smaller", "detail_larger")
        ]
        return f"{keys[0]}/{keys[1]} scroll · {keys[2]}/{keys[3]} size · F1 help"

    def action_toggle_agent_words(self) -> None:
        detail = self.query_one(RequestDetail)
        detail.expanded = not detail.expanded
        self._show_selected()

    def action_scroll_detail(self, pages: int) -> None:
        detail = self.query_one(RequestDetail)
        step = max(1, detail.scrollable_content_region.height - 1)
        detail.scroll_relative(y=pages * step, animate=False)

    def action_resize_detail(self, steps: int) -> None:
        self.query_one(DetailPane).resize(steps)
