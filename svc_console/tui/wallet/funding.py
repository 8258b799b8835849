"""The funding panel of the wallet screen: the five steps of one funding flow, the checkout's
address as a terminal link, and its QR code.

The address comes from the service, so it is shown inert and becomes a link only when it is a
plain http(s) URL (`core.funding.safe_link`); anything else is shown as text and never encoded.
"""

from __future__ import annotations

from rich.style import Style
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widgets import Static

from svc_console.core.funding import FundingFlow, Stage, safe_link, step_line
from svc_console.core.sanitize import inert_line
from svc_console.tui.colors import Palette
from svc_console.tui.wallet.qr import QrCode

URL_LIMIT = 120
IDLE_TEXT = (
    "Select a request and press f: a checkout is started for what it lacks, the balance is"
    " watched until it covers the request, then the request is retried once, within its"
    " approval."
)


def link_text(url: str, style: str = "") -> Text:
    """An address shown inert; a link (ctrl/cmd-click in most terminals) only when safe."""
    shown = inert_line(url, URL_LIMIT)
    target = safe_link(url)
    # Folded rather than cut: the operator may need to read all of it.
    if target is None:
        return Text(shown, style=style, overflow="fold")
    link = Style.parse(style or "none") + Style(link=target, underline=True)
    return Text(shown, style=link, overflow="fold")


def render_flow(flow: FundingFlow, title: Text, colours: Palette) -> Table:
    """The flow as a grid: a mark (✓ done, ▸ in progress, ✗ stopped, · to come), the step."""
    grid = Table.grid(padding=(0, 1))
    grid.add_column(no_wrap=True, width=3)
    grid.add_column(ratio=1)
    grid.add_row(Text(""), title)
    for stage in Stage:
        text, tone = step_line(flow, stage)
        style = colours.tone(tone)
        if stage < flow.stage:
            mark, mark_style = "✓", colours.good
        elif stage > flow.stage:
            mark, mark_style, style = "·", colours.label, colours.label
        elif stage == Stage.done:
            mark, mark_style = ("✓", colours.good) if tone == "good" else ("✗", style)
        elif flow.problem or flow.stopped:
            mark, mark_style = "✗", colours.high
        else:
            mark, mark_style = "▸", colours.warn
        grid.add_row(Text(f"{stage.value} {mark}", style=mark_style), Text(text, style=style))
        if stage == Stage.checkout and flow.checkout is not None:
            url = flow.checkout.checkout_url
            grid.add_row(Text(""), link_text(url, colours.info))
            if flow.link is not None and flow.running:
                hint = "o opens it in the browser; or scan the code"
                grid.add_row(Text(""), Text(hint, style=colours.label))
        if stage == flow.stage and (flow.problem or flow.note or flow.stopped):
            if flow.stopped:
                why = Text(
                    "stopped waiting: the request still waits for funds; f starts again",
                    style=colours.warn,
                )
            elif flow.problem:
                why = Text(flow.problem, style=colours.high)
            else:
                why = Text(flow.note or "", style=colours.warn)
            grid.add_row(Text(""), why)
    return grid


class FundingPanel(Horizontal):
    """The steps on the left, the checkout's QR code on the right."""

    DEFAULT_CSS = """
    FundingPanel { height: auto; }
    FundingPanel #funding-steps { width: 1fr; height: auto; }
    FundingPanel QrCode { margin: 0 0 0 1; }
    """

    def compose(self) -> ComposeResult:
        yield Static(Text(IDLE_TEXT), id="funding-steps", markup=False)
        yield QrCode(id="funding-qr")

    def on_mount(self) -> None:
        self.query_one(QrCode).display = False

    def show(self, flow: FundingFlow | None, title: Text, colours: Palette) -> None:
        steps = self.query_one("#funding-steps", Static)
        qr = self.query_one(QrCode)
        if flow is None:
            steps.update(Text(IDLE_TEXT, style=colours.label))
            qr.show(None)
            return
        steps.update(render_flow(flow, title, colours))
        # The code only while the operator may still need it.
        qr.show(flow.link if flow.running and flow.stage == Stage.waiting else None)
