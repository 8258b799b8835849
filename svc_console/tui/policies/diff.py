"""The draft against the saved file, as a unified diff: read-only, every line shown inert (a
policy file may hold anything), added lines in the success colour and removed ones in the error
colour."""

from __future__ import annotations

from rich.text import Text
from textual.containers import VerticalScroll
from textual.widgets import Static

from svc_console.core.sanitize import inert_line
from svc_console.tui.colors import Palette

MAX_LINES = 5000


def diff_text(lines: list[str], colours: Palette) -> Text:
    if not lines:
        return Text("The draft is the same as the saved file: nothing to save.", colours.label)
    text = Text()
    for index, line in enumerate(lines[:MAX_LINES]):
        if index:
            text.append("\n")
        if line.startswith(("+++", "---")):
            style = "bold"
        elif line.startswith("@@"):
            style = colours.info
        elif line.startswith("+"):
            style = colours.good
        elif line.startswith("-"):
            style = colours.high
        else:
            style = ""
        text.append(inert_line(line, 400) or " ", style)
    if len(lines) > MAX_LINES:
        text.append(f"\n… and {len(lines) - MAX_LINES} more lines", colours.label)
    return text


class PolicyDiff(VerticalScroll):
    """A scrollable, focusable view of the diff (arrows and page keys scroll it)."""

    DEFAULT_CSS = "PolicyDiff { height: 1fr; padding: 0 1; } PolicyDiff > Static { width: 1fr; }"

    def compose(self):  # type: ignore[no-untyped-def]
        yield Static("", markup=False)

    def show(self, lines: list[str], colours: Palette) -> None:
        self.query_one(Static).update(diff_text(lines, colours))
        self.scroll_home(animate=False)
