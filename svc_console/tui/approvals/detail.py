"""The detail of one request: what is about to be bought, from whom, for how much, and why it may be
risky; what the operator needs to approve or deny with open eyes (SPEC.md's safe call flow, step 4).

Everything that came from the agent or the marketplace is passed through `inert`/`inert_line` and
rendered as `rich.text.Text`, so it is shown as visible text, never as markup or terminal codes.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from decimal import Decimal

from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.geometry import Region, Size
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.widget import Widget

from svc_console.core.mandate import pays_to
from svc_console.core.models import SpendRequest
from svc_console.core.money import format_usdc
from svc_console.core.sanitize import inert, inert_line
from svc_console.core.secrets_scan import mask
from svc_console.core.shown_facts import approval_ceiling
from svc_console.core.states import State
from svc_console.core.taxonomy import PRODUCT_CLASSES, domain_label
from svc_console.policy.budget_view import BudgetLine
from svc_console.tui import present
from svc_console.tui.approvals.budgets import budgets_text
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


class Framed:
    """Lines of an agent's text, each behind the frame's bar, wrapped lines included, so no line
    of it ever starts where the console's own lines do."""

    def __init__(self, bar: Text, lines: list[Text]) -> None:
        self.bar, self.lines = bar, lines

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        width = max(1, options.max_width - self.bar.cell_len)
        for line in self.lines:
            for part in line.wrap(console, width):
                yield from self.bar.render(console)
                yield from part.render(console)
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

    def block(self, text: RenderableType) -> None:
        self.parts.append(text)
        self.rows = None


PURPOSE_LINES = 6  # agent text shown before "press v", so it can never fill the pane
INPUTS_LINES = 10


def render(
    request: SpendRequest,
    colours: Palette,
    confirm: Decimal | None = None,
    now: float | None = None,
    *,
    expanded: bool = False,
    budgets: Sequence[BudgetLine] = (),
    two_person: str | None = None,
) -> Group:
    """The whole detail as one renderable. The console's own facts come first, always in the same
    place (invariant 9): what approving lets be spent, on what, from whom, the verdict and the
    risks, then the decision and outcome once there are some. What the agent wrote comes after
    them, framed and labelled as its words, bounded in height unless `expanded`, with its line
    breaks drawn, so no text of an agent's can pass for the console's or push the console's facts
    out of view; the console's details (price, verdict, risks, provider) follow it."""
    out = Sections(colours)
    _facts(out, request, confirm)
    if two_person is not None:  # the two-person rule: who approved so far, among the facts
        out.field("approval", Text(two_person, style=colours.warn))
    if budgets:
        # The console's own figures, so with the facts, before anything the agent wrote.
        out.heading("Budgets: now → after approving")
        out.block(budgets_text(budgets, colours))
    _decision(out, request, now)
    _agent_words(out, request, expanded)
    _price(out, request)
    _verdict(out, request)
    _risks(out, request)
    _provider(out, request)
    if request.reason:
        out.heading("Note")
        out.block(Text(inert(request.reason, 500)))
    if request.funding_url:
        out.heading("Funding")
        out.block(Text(inert_line(request.funding_url, 200)))
    return Group(*out.parts)


def _facts(out: Sections, request: SpendRequest, confirm: Decimal | None) -> None:
    """The fixed block at the top: the console's figures and findings, one short line each."""
    endpoint, colours, estimate = request.endpoint, out.colours, request.estimate
    title = Text()
    title.append(
        inert_line(endpoint.name, 60) if endpoint else inert_line(request.endpoint_id or "?"),
        style="bold",
    )
    title.append(f"  {inert_line(request.endpoint_id or request.dataset_id or '', 60)}", "dim")
    out.block(title)
    if estimate is None:
        cost = Text("not priced yet", style=colours.label)
    else:
        ceiling = approval_ceiling(request, estimate)
        cost = Text.assemble(
            (f"{present.price(estimate)} USDC", "bold"),
            f" · approving allows up to {format_usdc(ceiling)} USDC",
        )
        if confirm is not None:
            cost.append(f" · type {format_usdc(confirm)} to confirm", style=colours.warn)
    out.field("cost", cost)
    if endpoint is not None:
        verified = (
            Text("verified", style=colours.good)
            if endpoint.verified
            else Text("not verified", style=colours.warn)
        )
        out.field(
            "provider", Text.assemble(inert_line(endpoint.provider_name, 50), " · ", verified)
        )
    if estimate is not None:
        out.field(
            "pays on", f"{inert_line(estimate.chain, 20)} · {inert_line(estimate.protocol, 10)}"
        )
        # Where the money goes, as the quote pinned it (the mandate holds the same).
        out.field("pays to", pays_to(request.kind, estimate, endpoint))
    out.field("verdict", present.verdict(request, long=True) if request.verdict else "none yet")
    out.field("risks", _risk_summary(request, colours))
    who = Text.assemble((inert_line(request.agent, 64), "bold"))
    if not request.agent_verified:
        who.append(" (unverified name)", style=colours.warn)
    out.field("agent", Text.assemble(who, (f" · {request.id} · {request.state}", colours.label)))


def _risk_summary(request: SpendRequest, colours: Palette) -> Text:
    if not request.risk:
        return Text("none found", style=colours.label)
    summary = Text()
    for index, flag in enumerate(present.by_severity(request.risk)):
        if index:
            summary.append(", ")
        summary.append(flag.severity.value.upper(), style=colours.severity(flag.severity))
        summary.append(f" {inert_line(flag.code, 24)}")
    return summary


def _agent_words(out: Sections, request: SpendRequest, expanded: bool) -> None:
    """The agent's purpose, inputs and key inside a frame: a bar on every line, each of its line
    breaks drawn, at most a few lines of each until the operator asks for all."""
    colours = out.colours
    out.heading("What the agent wrote (its words, not the console's)")
    framed: list[Text] = []
    hidden = 0
    for label, text, most in (
        ("purpose", inert(request.purpose, MAX_PURPOSE_CHARS), PURPOSE_LINES),
        ("inputs", inputs_json(request.inputs), INPUTS_LINES),
    ):
        lines = text.split("\n")
        shown = lines if expanded else lines[:most]
        hidden += len(lines) - len(shown)
        framed.append(Text(label, style=colours.label))
        for index, line in enumerate(shown):
            end = ("↵", "dim") if index < len(lines) - 1 else ""
            framed.append(Text.assemble(line or ("·", "dim"), end))
    if request.idempotency_key:
        framed.append(
            Text.assemble(("key ", colours.label), inert_line(request.idempotency_key, 80))
        )
    out.block(Framed(Text("┃ ", style=colours.label), framed))
    if hidden:
        out.block(
            Text(f"… {hidden} more line(s) of the agent's: press v to show all", style=colours.warn)
        )


def _decision(out: Sections, request: SpendRequest, now: float | None) -> None:
    """Who decided and when, and what came of it (once there is a decision or an outcome)."""
    colours, field = out.colours, out.field
    decision = request.decision
    if decision is not None:
        out.heading("Decision")
        verb = "approved" if decision.approved else "denied"
        when = f" {present.duration(now - decision.at)} ago" if now is not None else ""
        field(verb, Text.assemble((inert_line(decision.by, 60), "bold"), when))
        if decision.evidence is not None:
            # The pid is in the ledger and the exports; the screen names the user and program.
            field("by", inert_line(decision.evidence.summary(pid=False), 120))
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


def _price(out: Sections, request: SpendRequest) -> None:
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


def gone_notice(request_id: str, request: SpendRequest | None, colours: Palette) -> Text:
    """Why the request in the detail is not selected any more, and what to do about it."""
    if request is None:
        how = "is gone"
    elif request.state == State.pending:
        how = "moved to another page as requests around it came and went"
    else:
        how = f"is no longer waiting: {present.outcome_label(request.state)}"
    return Text.assemble(
        (f"{request_id} {how}.", f"bold {colours.warn}"),
        ("\nNothing is selected; nothing can be approved here. Move the cursor to choose.", ""),
    )


class RequestDetail(ScrollView):
    """Scrollable detail of the selected request (or a hint when nothing is selected).

    The detail is rendered into lines once per change and drawn through the line API. Its vertical
    scrollbar is always there (CSS), so a detail of another length changes no layout: showing
    another request repaints this panel alone instead of reflowing the whole screen, which keeps a
    key press on the queue to one cheap frame."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.shown_id: str | None = None
        # The request as drawn: a decision is made on what the operator was shown.
        self.request: SpendRequest | None = None
        self._content: RenderableType | None = None
        self._lines: list[Strip] = []
        self._width = 0
        self._line_style: Style | None = None
        # All of the agent's words, or the first few lines of each (the default for every
        # request: expanding one does not expand the next).
        self.expanded = False

    def show(
        self,
        request: SpendRequest | None,
        colours: Palette,
        confirm: Decimal | None,
        now: float | None = None,
        budgets: Sequence[BudgetLine] = (),
        *,
        notice: Text | None = None,
        two_person: str | None = None,
    ) -> None:
        """`notice`: a line of the console's above the detail (the request left the list)."""
        new_id = request.id if request else None
        if new_id != self.shown_id:
            self.expanded = False
        if request is None:
            self._content = Text("Select a request to see its detail.", style=colours.label)
        else:
            self._content = render(
                request,
                colours,
                confirm,
                now,
                expanded=self.expanded,
                budgets=budgets,
                two_person=two_person,
            )
        if notice is not None:
            self._content = Group(notice, Text(""), self._content)
        # Another request starts at its top, not where the previous one was scrolled to.
        self._draw(keep_scroll=new_id == self.shown_id)
        self.shown_id, self.request = new_id, request

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
