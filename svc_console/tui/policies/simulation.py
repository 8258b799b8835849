"""What the draft would have changed over the last 30 days: `svc-console policy simulate`'s own
report (`policy.report.simulation_lines`, which shows every text from the ledger inert), with its
headings and counts coloured, or why no simulation could run."""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual.containers import VerticalScroll
from textual.widgets import Static

from svc_console.core.sanitize import inert_line
from svc_console.tui.colors import Palette


@dataclass(frozen=True)
class SimulationShown:
    """`lines` of a finished simulation of the draft `sha256`, or `note` (not run, running, a
    problem) in its `tone`."""

    sha256: str | None = None
    lines: tuple[str, ...] = ()
    note: str | None = None
    tone: str = "label"


IDLE = SimulationShown(
    note="Press t to replay the ledger's requests of the last 30 days against the draft: what it"
    " would newly deny, approve automatically or send to the operator, the budgets it would hit"
    " and the USDC that would have moved differently. Nothing is saved or sent."
)


def simulation_text(shown: SimulationShown, colours: Palette) -> Text:
    if shown.note is not None:
        return Text(inert_line(shown.note, 600), colours.tone(shown.tone))
    text = Text()
    if shown.sha256:
        text.append(f"Draft {shown.sha256[:12]}\n", colours.label)
    for index, line in enumerate(inert_line(line, 400) for line in shown.lines):
        if index:
            text.append("\n")
        if not line.startswith(" "):
            text.append(line, colours.heading)
        elif ":" in line and line.strip().split(":")[0] in _COUNTS:
            label, _, value = line.partition(":")
            number = value.strip()
            text.append(f"{label}:", "")
            text.append(value, colours.warn if number not in ("", "0") else colours.label)
        else:
            text.append(line)
    return text


_COUNTS = {"newly denied", "newly auto-approved", "now asking operator"}


class PolicySimulation(VerticalScroll):
    DEFAULT_CSS = (
        "PolicySimulation { height: 1fr; padding: 0 1; } PolicySimulation > Static { width: 1fr; }"
    )

    def compose(self):  # type: ignore[no-untyped-def]
        yield Static("", markup=False)

    def show(self, shown: SimulationShown, colours: Palette) -> None:
        self.query_one(Static).update(simulation_text(shown, colours))
