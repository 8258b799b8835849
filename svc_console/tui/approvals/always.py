"""Decide always: approve the selected request and add to a SKILLS.md file in force a rule that
approves calls like it from now on (that agent, that endpoint, at most that amount a call, within
a daily budget of its own). The dialog shows the rule as a diff of the file, judged with the other
files in force exactly as the broker would load them (`services/always_rule.py`); the operator may
change the daily budget or, with several files in force, the file. A rule that would leave the
policy invalid is shown with its errors and cannot be confirmed.

Confirming approves first, with the typed amount when the threshold asks for one, and saves the
file only once the approval is committed; the policy watcher then puts the rule in force.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from decimal import Decimal
from pathlib import Path

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.widgets import Button, Input, Select, Static

from svc_console.core.models import SpendRequest
from svc_console.core.money import format_usdc, parse_usdc
from svc_console.core.sanitize import inert_line
from svc_console.core.shown_facts import facts_digest
from svc_console.policy.drafts import display_name
from svc_console.services import always_rule
from svc_console.services.always_rule import Proposal
from svc_console.tui.approvals.dialog import DecidingDialog, typed_amount
from svc_console.tui.colors import palette
from svc_console.tui.modals import request_summary
from svc_console.tui.policies.diff import PolicyDiff
from svc_console.tui.widgets.queue import endpoint_name

# The rule, the typed amount, and the digest of the facts the dialog showed.
Decide = Callable[[Proposal, Decimal | None, str], Awaitable[object]]
SHOWN_ERRORS = 4


class AlwaysModal(DecidingDialog):
    """The rule as a diff, the daily budget, the file; approve, then save."""

    TITLE_TEXT = "Approve always: add a rule to the policy"
    CONFIRM_LABEL = "Approve and save"
    CONFIRM_VARIANT = "success"

    def __init__(
        self,
        request: SpendRequest,
        files: list[Path],
        home: Path,
        decide: Decide,
        *,
        confirm: Decimal | None,
        now: float,
        clock: Callable[[], float] | None = None,
    ) -> None:
        super().__init__(expiring=request, clock=clock)
        self.request, self.files, self.home = request, files, home
        self._decide, self.confirm, self.now = decide, confirm, now
        self.path = files[0]
        self.seen = facts_digest(request)
        self.proposal: Proposal | None = None

    def compose_body(self) -> ComposeResult:
        agent, endpoint = inert_line(self.request.agent, 40), endpoint_name(self.request, 40)
        yield Static(request_summary(self.request), markup=False)
        yield Static(
            Text(
                f"Approves this request, then adds a rule approving {agent}'s calls to {endpoint},"
                " each at most this amount, within a daily budget. The file is saved only after"
                " the approval."
            ),
            markup=False,
            classes="dialog-explain",
        )
        names = [Text(inert_line(display_name(path, self.home), 80)) for path in self.files]
        if len(self.files) > 1:
            options = [(name, index) for index, name in enumerate(names)]
            yield Select(options, value=0, allow_blank=False, id="policy-file")
        else:
            yield Static(Text.assemble(("file ", "dim"), names[0]), markup=False)
        yield Static("Daily budget of the rule, in USDC:", classes="dialog-field")
        yield Input(placeholder="daily budget in USDC", id="daily", max_length=20)
        yield Static("", id="always-check", markup=False)
        yield PolicyDiff(id="always-diff")
        if self.confirm is not None:
            yield Static(
                f"This approval lets up to {format_usdc(self.confirm)} USDC be spent:"
                f" type {format_usdc(self.confirm)} to confirm it.",
                classes="dialog-field",
            )
            yield Input(placeholder="amount in USDC", id="confirm-amount", max_length=20)

    def on_mount(self) -> None:
        super().on_mount()
        self.propose(None)
        if self.proposal is not None:
            # The budget the rule is proposed with, for the operator to keep or change.
            daily = self.query_one("#daily", Input)
            with daily.prevent(Input.Changed):
                daily.value = format_usdc(self.proposal.rule.daily)

    def propose(self, daily: Decimal | None) -> None:
        """Build the rule for the chosen file and budget; show its diff and its check."""
        check = self.query_one("#always-check", Static)
        colours = palette(self.app)
        try:
            self.proposal = always_rule.propose(
                self.request, self.path, self.files, self.home, daily=daily, at=self.now
            )
        except (always_rule.NotInForce, OSError, ValueError) as exc:
            self.proposal = None
            check.update(Text(inert_line(exc, 300), style=colours.high))
            self.query_one(PolicyDiff).show([], colours)
            self._can_confirm(False)
            return
        proposal = self.proposal
        if proposal.check.valid:
            said = Text(f"The policy stays valid with rule {proposal.rule.name!r}.", colours.good)
        else:
            said = Text("The policy would be invalid; nothing can be decided:", colours.high)
            for error in proposal.check.errors[:SHOWN_ERRORS]:
                said.append(f"\n{inert_line(str(error), 300)}", style=colours.high)
        check.update(said)
        self.query_one(PolicyDiff).show(proposal.diff, colours)
        self._can_confirm(proposal.check.valid)

    def _can_confirm(self, valid: bool) -> None:
        self.query_one("#confirm", Button).disabled = not valid

    @on(Input.Changed, "#daily")
    def _daily_changed(self, event: Input.Changed) -> None:
        event.stop()
        daily = self._daily()
        if daily is not None:
            self.show_error("")
            self.propose(daily)

    @on(Select.Changed, "#policy-file")
    def _file_changed(self, event: Select.Changed) -> None:
        event.stop()
        if isinstance(event.value, int):
            self.path = self.files[event.value]
            self.propose(self._daily())

    def _daily(self) -> Decimal | None:
        """The typed budget; None (with the problem shown) when it does not read."""
        try:
            daily = parse_usdc(self.query_one("#daily", Input).value)
        except ValueError:
            self.show_error("The daily budget is an amount of USDC, such as 0.20.")
            return None
        if daily <= 0:
            self.show_error("The daily budget must be above zero.")
            return None
        return daily

    async def submit(self) -> None:
        if self._daily() is None:
            return
        proposal = self.proposal
        if proposal is None or not proposal.check.valid:
            self.show_error("The rule would leave the policy invalid: nothing was decided.")
            return
        confirm = None
        if self.confirm is not None:
            field = self.query_one("#confirm-amount", Input)
            problem = typed_amount(field.value, self.confirm)
            if problem is not None:
                self.show_error(problem)
                field.focus()
                return
            confirm = self.confirm
        await self.decide(lambda: self._decide(proposal, confirm, self.seen))
