"""The detail of one request: what is about to be bought, from whom, for how much, and why it may be
risky; what the operator needs to approve or deny with open eyes (SPEC.md's safe call flow, step 4).

Everything that came from the agent or the marketplace is passed through `inert`/`inert_line` and
rendered as `rich.text.Text`, so it is shown as visible text, never as markup or terminal codes.
"""

from __future__ import annotations

import json
from decimal import Decimal

from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.geometry import Region, Size
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.widget import Widget

from svc_console.core.models import SpendRequest
from svc_console.core.money import format_usdc
from svc_console.core.sanitize import inert, inert_line
from svc_console.core.secrets_scan import mask
from svc_console.core.taxonomy import PRODUCT_CLASSES, domain_label
from svc_console.tui import present
from svc_console.tui.colors import Palette

MAX_INPUTS_CHARS = 4000
MAX_PURPOSE_CHARS = 2000


def inputs_json(inputs: dict[str, object]) -> str:
    """The planned inputs as pretty JSON, secret-looking values masked, made inert."""
    text = json.dumps(mask(inputs), indent=2, ensure_ascii=False, default=str)
    return inert(text, MAX_INPUTS_CHARS)


class Fields:
    """Label and value rows where a long value wraps under itself, not under its label.

    What a two-column `Table.grid` would draw, at a fraction of its cost: the detail is drawn
    again on every move of the cursor, and a table measures every cell before it draws one."""

    MIN_LABEL = 9

    def __init__(self) -> None:
        self.rows: list[tuple[Text, Text]] = []

    def add(self, label: Text, value: Text) -> None:
        self.rows.append((label, value))

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        label_width = max([self.MIN_LABEL, *(label.cell_len for label, _ in self.rows)])
        value_width = max(1, options.max_width - label_width - 1)
        indent = Text(" " * (label_width + 1))
        for label, value in self.rows:
            for index, line in enumerate(value.wrap(console, value_width)):
                if index == 0:
                    head = label.copy()
                    head.truncate(label_width, pad=True)
                    head.append(" ")
                else:
                    head = indent
                yield from head.render(console)
                yield from line.render(console)
                yield Segment.line()


class Sections:
    """The detail being built: headed sections of text blocks and label/value rows."""

    def __init__(self, colours: Palette) -> None:
        self.colours = colours
        self.parts: list[RenderableType] = []
        self.rows: Fields | None = None

    def heading(self, title: str) -> None:
        self.parts.append(Text(f"\n{title}", style=self.colours.heading))
        self.rows = None

    def field(self, label: str | Text, value: str | Text) -> None:
        if self.rows is None:
            self.rows = Fields()
            self.parts.append(self.rows)
        self.rows.add(
            label if isinstance(label, Text) else Text(label, style=self.colours.label),
            value if isinstance(value, Text) else Text(value),
        )

    def block(self, text: Text) -> None:
        self.parts.append(text)
        self.rows = None


def render(
    request: SpendRequest,
    colours: Palette,
    confirm: Decimal | None = None,
    now: float | None = None,
) -> Group:
    """The whole detail as one renderable: headed sections, each a grid of label and value so a
    long value wraps under itself rather than under its label."""
    out = Sections(colours)
    _head(out, request)
    _decision(out, request, now)
    _price(out, request, confirm)
    _verdict(out, request)
    _risks(out, request)
    out.heading("Planned inputs")
    out.block(Text(inputs_json(request.inputs)))
    _provider(out, request)
    if request.reason:
        out.heading("Note")
        out.block(Text(inert(request.reason, 500)))
    if request.funding_url:
        out.heading("Funding")
        out.block(Text(inert_line(request.funding_url, 200)))
    return Group(*out.parts)


def _head(out: Sections, request: SpendRequest) -> None:
    """The endpoint, the request's id, state and agent, and its purpose."""
    endpoint, colours = request.endpoint, out.colours
    title = Text()
    title.append(
        inert_line(endpoint.name, 60) if endpoint else inert_line(request.endpoint_id or "?"),
        style="bold",
    )
    title.append(f"  {inert_line(request.endpoint_id or request.dataset_id or '', 60)}", "dim")
    out.block(title)
    out.block(
        Text.assemble(
            (f"{request.id} · {request.state} · from ", colours.label),
            (inert_line(request.agent, 64), "bold"),
        )
    )
    out.heading("Purpose")
    out.block(Text(inert(request.purpose, MAX_PURPOSE_CHARS)))


def _decision(out: Sections, request: SpendRequest, now: float | None) -> None:
    """Who decided and when, and what came of it (once there is a decision or an outcome)."""
    colours, field = out.colours, out.field
    decision = request.decision
    if decision is not None:
        out.heading("Decision")
        verb = "approved" if decision.approved else "denied"
        when = f" {present.duration(now - decision.at)} ago" if now is not None else ""
        field(verb, Text.assemble((inert_line(decision.by, 60), "bold"), when))
        if decision.ceiling_usdc is not None:
            field("ceiling", f"{format_usdc(decision.ceiling_usdc)} USDC")
        if decision.note:
            field("note", inert_line(decision.note, 300))
    outcome = request.outcome
    if outcome is not None or decision is not None:
        out.heading("Outcome")
        state = Text(
            present.outcome_label(request.state), colours.tone(present.outcome_tone(request.state))
        )
        field("state", state)
        if outcome is not None:
            field("charged", f"{format_usdc(outcome.charged_usdc)} USDC")
            field("chain", inert_line(outcome.chain, 20))
            field("receipt", inert_line(outcome.receipt.transaction, 80))
            field("response", f"{outcome.status} · {inert_line(outcome.content_type, 60)}")


def _price(out: Sections, request: SpendRequest, confirm: Decimal | None) -> None:
    field = out.field
    out.heading("Price")
    estimate = request.estimate
    if estimate is None:
        field("estimate", "not priced")
    else:
        field("estimate", f"{format_usdc(estimate.amount_usdc)} USDC")
        if estimate.dynamic:
            field(
                "range",
                f"{present.price_range(estimate)} USDC"
                " (dynamic: the runtime challenge sets the price)",
            )
        field("chain", inert_line(estimate.chain, 20))
        field("protocol", inert_line(estimate.protocol, 10))
    if request.max_usdc is not None:
        field("agent max", f"{format_usdc(request.max_usdc)} USDC")
    if confirm is not None:
        field("approve", Text(f"type {format_usdc(confirm)} to confirm", style=out.colours.warn))


def _verdict(out: Sections, request: SpendRequest) -> None:
    """The policy's verdict and, when it has budgets, their impact."""
    field = out.field
    out.heading("Policy verdict")
    if request.verdict is None:
        field("verdict", "none yet")
        return
    verdict = request.verdict
    field("verdict", present.verdict(request, long=True))
    field("summary", inert_line(verdict.summary, 200))
    for rule in present.rule_lines(verdict):
        field("rule", inert_line(rule, 200))
    for name, value in present.other_verdict_fields(verdict):
        field(inert_line(name, 12), inert_line(value, 200))
    budgets = present.budget_lines(verdict)
    if budgets:
        out.heading("Budget impact")
        for line, tone in budgets:
            out.block(Text(inert_line(line, 200), style=out.colours.tone(tone)))


def _risks(out: Sections, request: SpendRequest) -> None:
    colours = out.colours
    out.heading("Risks")
    if not request.risk:
        out.block(Text("none found", style=colours.label))
    for flag in present.by_severity(request.risk):
        # The severity takes the console's colour for it; the code and reason stay plain text.
        out.field(
            Text(flag.severity.value.upper(), style=colours.severity(flag.severity)),
            Text.assemble((inert_line(flag.code, 24), "bold"), "  ", inert_line(flag.reason, 200)),
        )


def _provider(out: Sections, request: SpendRequest) -> None:
    """Who provides the endpoint, where its record came from, its quality and taxonomy."""
    colours, field, endpoint = out.colours, out.field, request.endpoint
    out.heading("Provider and data origin")
    if endpoint is None:
        field("provider", "not inspected")
        return
    verified = (
        Text("verified", style=colours.good)
        if endpoint.verified
        else Text("not verified", style=colours.warn)
    )
    field("provider", Text.assemble(inert_line(endpoint.provider_name, 60), " · ", verified))
    origin = (
        "registered by its publisher"
        if endpoint.origin == "publisher"
        else "ingested from a public registry"
    )
    field("origin", origin)
    field(
        "quality",
        f"qualityScore {endpoint.quality_score:.2f} · reliability {endpoint.reliability:.2f}",
    )
    field("domain", f"{inert_line(endpoint.domain_type, 8)} {domain_label(endpoint.domain_type)}")
    field(
        "product",
        f"{inert_line(endpoint.product_class, 8)} "
        f"{PRODUCT_CLASSES.get(endpoint.product_class, 'unknown class')}",
    )
    if endpoint.description:
        field("about", inert_line(endpoint.description, 160))


class RequestDetail(ScrollView):
    """Scrollable detail of the selected request (or a hint when nothing is selected).

    The detail is rendered into lines once per change and drawn through the line API. Its vertical
    scrollbar is always there (CSS), so a detail of another length changes no layout: showing
    another request repaints this panel alone instead of reflowing the whole screen, which keeps a
    key press on the queue to one cheap frame."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.shown_id: str | None = None
        self._content: RenderableType | None = None
        self._lines: list[Strip] = []
        self._width = 0
        self._line_style: Style | None = None

    def show(
        self,
        request: SpendRequest | None,
        colours: Palette,
        confirm: Decimal | None,
        now: float | None = None,
    ) -> None:
        new_id = request.id if request else None
        if request is None:
            self._content = Text("Select a request to see its detail.", style=colours.label)
        else:
            self._content = render(request, colours, confirm, now)
        # Another request starts at its top, not where the previous one was scrolled to.
        self._draw(keep_scroll=new_id == self.shown_id)
        self.shown_id = new_id

    @property
    def text(self) -> str:
        """What the detail shows, as plain text (all of it, not only the part in view)."""
        return "\n".join(strip.text.rstrip() for strip in self._lines)

    def _draw(self, *, keep_scroll: bool) -> None:
        width = self.scrollable_content_region.width
        if self._content is None:
            return
        if width <= 0:
            # Hidden (the empty state) or not laid out yet: drawn once it has a width.
            self._width = 0
            self.call_after_refresh(self._draw_if_stale)
            return
        console = self.app.console
        segments = console.render(self._content, console.options.update_width(width))
        lines = Segment.split_and_crop_lines(segments, width, pad=True)
        self._lines = [Strip(line, width) for line in lines]
        self._width = width
        size = Size(width, len(self._lines))
        # Set without the layout a change of virtual size asks for: nothing outside moves.
        self.set_reactive(Widget.virtual_size, size)
        bar = self.vertical_scrollbar
        bar.window_virtual_size = size.height
        bar.window_size = self.scrollable_content_region.height
        bar.refresh()
        y = self.validate_scroll_y(self.scroll_y if keep_scroll else 0)
        self.set_reactive(ScrollView.scroll_y, y)
        self.set_reactive(ScrollView.scroll_target_y, y)
        bar.position = y
        self.refresh()

    def render_lines(self, crop: Region) -> list[Strip]:
        # The widget's style is the same for every line of one pass, and costly to look up.
        self._line_style = self.rich_style
        return super().render_lines(crop)

    def render_line(self, y: int) -> Strip:
        index = y + int(self.scroll_y)
        style = self._line_style or self.rich_style
        if 0 <= index < len(self._lines):
            return self._lines[index].apply_style(style)
        return Strip.blank(self.scrollable_content_region.width, style)

    def _draw_if_stale(self) -> None:
        # Lines are wrapped when rendered: a new width needs them rendered again.
        width = self.scrollable_content_region.width
        if width > 0 and width != self._width:
            self._draw(keep_scroll=True)

    def on_resize(self) -> None:
        self._draw_if_stale()

    def on_show(self) -> None:
        self._draw_if_stale()
