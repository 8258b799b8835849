"""What the usage screen shows above its table: the totals line, spend per day as a chart, and the
providers and agents that spent most.

Each widget is handed figures the screen got from SQL (a worker's message) and only draws them.
Names come from the service and are drawn through `core.sanitize.inert_line` into `Text`, never
parsed as markup; flagged amounts use the theme's error colour.
"""

from __future__ import annotations

from collections.abc import Callable

from rich.cells import cell_len, set_cell_size
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widget import Widget
from textual.widgets import Sparkline, Static

from svc_console.core.sanitize import inert_line
from svc_console.core.usage import day_label
from svc_console.ledger.usage_query import SpendBucket, UsageTotals
from svc_console.tui.colors import Palette
from svc_console.tui.usage.table import usdc


def totals_text(totals: UsageTotals | None, colours: Palette) -> Text:
    if totals is None:
        return Text("Counting…", style=colours.label)
    text = Text.assemble(
        (f"{totals.count:,}", "bold"),
        " charge · " if totals.count == 1 else " charges · ",
        (usdc(totals.amount), "bold"),
        " USDC",
    )
    if totals.flagged_count:
        text.append(" · ")
        text.append(
            f"{totals.flagged_count:,} flagged ({usdc(totals.flagged_amount)} USDC)", colours.high
        )
    elif totals.count:
        text.append(" · every charge covered by an approval", colours.good)
    return text


class SpendChart(Vertical):
    """Spend per day: a sparkline over the days of the view, with its range and peak."""

    DEFAULT_CSS = """
    SpendChart { height: 100%; width: 1fr; padding: 0 1; }
    SpendChart > #chart-title { height: 1; color: $text-muted; }
    SpendChart > Sparkline { height: 1fr; min-height: 1; }
    SpendChart > #chart-range { height: 1; color: $text-muted; }
    """

    def compose(self) -> ComposeResult:
        yield Static("spend per day", id="chart-title", markup=False)
        yield Sparkline([], id="chart", summary_function=max)
        yield Static("", id="chart-range", markup=False)

    def show(self, days: list[SpendBucket] | None) -> None:
        title = self.query_one("#chart-title", Static)
        spark = self.query_one(Sparkline)
        span = self.query_one("#chart-range", Static)
        # An empty sparkline still draws a baseline, which would read as days of zero spend.
        spark.display = bool(days)
        if not days:
            title.update("spend per day")
            spark.data = []
            span.update("…" if days is None else "no spend")
            return
        peak = max(days, key=lambda d: d.amount)
        title.update(f"spend per day · peak {usdc(peak.amount)} on {day_label(int(peak.key))}")
        spark.data = [float(d.amount) for d in days]
        first, last = day_label(int(days[0].key)), day_label(int(days[-1].key))
        span.update(f"{first} … {last}" if first != last else first)


class SpendBreakdown(Widget):
    """The few keys (providers, agents) that spent most: what each spent and its share. Drawn at
    the width it has, one line each, as many as fit."""

    DEFAULT_CSS = """
    SpendBreakdown { width: 30; height: 100%; padding: 0 1; border-left: vkey $panel-lighten-2; }
    """

    def __init__(self, title: str, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.title = title
        self._buckets: list[SpendBucket] | None = None
        self._total: int | None = None
        self._colours: Palette | None = None
        self._name: Callable[[str], str] = str

    def show(
        self,
        buckets: list[SpendBucket] | None,
        total: int | None,
        colours: Palette,
        *,
        name: Callable[[str], str] = str,
    ) -> None:
        """`name`: how a key is shown (a provider's id by its name)."""
        self._buckets, self._total, self._colours, self._name = buckets, total, colours, name
        self.refresh()

    def render(self) -> Text:
        colours = self._colours
        heading, label = (colours.heading, colours.label) if colours else ("bold", "dim")
        text = Text(self.title, style=heading, no_wrap=True, overflow="ellipsis")
        buckets = self._buckets
        if buckets is None:
            text.append("\n…", label)
            return text
        if not buckets:
            text.append("\n-", label)
            return text
        width = max(12, self.content_size.width)
        amounts = [usdc(b.amount) for b in buckets]
        amount_width = max(len(a) for a in amounts)
        # The share goes first when room is short: the name and the amount matter more.
        with_share = self._total is not None and width - amount_width - 6 >= 10
        name_width = max(3, width - amount_width - (6 if with_share else 1))
        for bucket, amount in zip(buckets, amounts, strict=True):
            key = self._name(str(bucket.key)) if bucket.key is not None else "(unknown)"
            name = inert_line(key, 60)
            if cell_len(name) > name_width:
                name = set_cell_size(name, name_width - 1) + "…"
            text.append("\n" + set_cell_size(name, name_width))
            text.append(" " + amount.rjust(amount_width), "bold")
            if with_share and self._total:
                text.append(f" {100 * bucket.amount / self._total:3.0f}%", label)
        return text
