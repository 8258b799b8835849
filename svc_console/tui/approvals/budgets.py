"""The budgets a request draws on, as the detail shows them: for each, what is spent and reserved
in its window now, what is left, and what approving would make of it against its warn level and
its hard stop. Past the warn level the line takes the warn colour, past the stop the high one, and
says so in words, so nothing depends on colour alone.

The figures are the broker's (`Broker.budgets_for`, read from running totals, never a scan of the
ledger); budget names come from SKILLS.md, which may hold anything, so they pass `inert_line`.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text

from svc_console.core.money import format_usdc, from_atomic
from svc_console.core.sanitize import inert_line
from svc_console.policy.budget_view import BudgetLine
from svc_console.tui.colors import Palette


def usdc(units: int | None) -> str:
    return "-" if units is None else format_usdc(from_atomic(units))


def budget_text(line: BudgetLine, colours: Palette) -> Text:
    """Two lines: which budget and where it is written; its figures now and after approving."""
    text = Text()
    text.append(inert_line(line.budget, 60), style="bold")
    text.append(f" ({inert_line(line.window, 10)})")
    text.append(f"  {inert_line(line.where, 40)}", style=colours.label)
    text.append("\n")
    text.append(f"spent {usdc(line.spent)} · reserved {usdc(line.reserved)}")
    if line.max is not None:
        text.append(f" · left {usdc(line.remaining)}")
    tone = colours.high if line.passes_max else colours.warn if line.passes_warn else ""
    after = f" → after {usdc(line.after)}"
    after += f" of {usdc(line.max)}" if line.max is not None else " USDC"
    if line.warn is not None:
        after += f", warn {usdc(line.warn)}"
    text.append(after, style=tone)
    if line.passes_max:
        text.append(" · past its stop", style=colours.high)
    elif line.passes_warn:
        text.append(" · past its warn level", style=colours.warn)
    return text


def budgets_text(lines: Sequence[BudgetLine], colours: Palette) -> Text:
    """Every budget's lines, one budget after the other."""
    return Text("\n").join(budget_text(line, colours) for line in lines)
