"""Dialogs in front of a decision: the typed amount that confirms a large approval, and the reason
that must accompany a denial.

Each validates in place (an inline error, the dialog stays open) and only dismisses with a value the
broker will accept; escape dismisses with None and nothing is decided. Each counts down the time the
request has left, and refuses once it is over: the broker would refuse a decision on an expired
request anyway, and the operator should not type an amount to learn it.
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from typing import TypeVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Static

from svc_console.broker.params import DenyParams
from svc_console.core.mandate import pays_to
from svc_console.core.models import SpendRequest
from svc_console.core.money import format_usdc, parse_usdc
from svc_console.core.sanitize import inert_line
from svc_console.core.shown_facts import facts_digest
from svc_console.tui.bindings import bindings
from svc_console.tui.widgets.countdown import Countdown
from svc_console.tui.widgets.dialog_keys import ARROW_BINDINGS, ButtonArrows
from svc_console.tui.widgets.queue import endpoint_name

ResultType = TypeVar("ResultType")


def _max_length(model: type[DenyParams], name: str) -> int:
    """The broker's own limit on a field, so the input refuses what the broker would reject."""
    for constraint in model.model_fields[name].metadata:
        if getattr(constraint, "max_length", None):
            return int(constraint.max_length)
    return 0


MAX_REASON = _max_length(DenyParams, "reason")


def request_summary(request: SpendRequest) -> Text:
    """What is being decided, in the console's own facts only (the catalogue's endpoint and
    provider, the estimate's chain): nothing an agent wrote reaches a decision's dialog."""
    summary = Text.assemble((endpoint_name(request, 40), "bold"), f"  ({request.id})")
    endpoint, estimate = request.endpoint, request.estimate
    if endpoint is not None:
        verified = "verified" if endpoint.verified else "not verified"
        summary.append(f"\nfrom {inert_line(endpoint.provider_name, 40)} ({verified})")
    if estimate is not None:
        summary.append(f", paid on {inert_line(estimate.chain, 20)}")
    return summary


def expiry_countdown(request: SpendRequest, clock: Callable[[], float] | None) -> Countdown:
    """The countdown of a dialog deciding `request`; hidden without a clock to read."""
    expires_at = request.expires_at if clock is not None else None
    return Countdown(expires_at, clock or (lambda: 0.0))


def refuse_expired(dialog: ModalScreen[object]) -> None:
    """The request's time is up: nothing in the dialog can decide it any more; escape or Cancel
    closes it."""
    error = dialog.query_one("#dialog-error", Static)
    error.update(Text("The request expired; nothing was decided. Press escape to close."))
    error.add_class("-shown")
    for field in dialog.query(Input):
        field.disabled = True
    dialog.query_one("#confirm", Button).disabled = True
    dialog.query_one("#cancel", Button).focus()


class _DecisionModal(ButtonArrows, ModalScreen[ResultType]):
    """The frame both dialogs share: a title, what is being decided, one input, an error line."""

    BINDINGS = [*bindings("modal"), *ARROW_BINDINGS]
    TITLE_TEXT = ""
    CONFIRM_LABEL = "OK"
    CONFIRM_VARIANT = "primary"

    def __init__(self, request: SpendRequest, *, clock: Callable[[], float] | None = None) -> None:
        super().__init__()
        self.request = request
        # The digest of the facts shown as the dialog opens: the decision carries it, and the
        # broker refuses it once the request changed.
        self.seen = facts_digest(request)
        # The console's clock, for the countdown; without one no countdown is shown.
        self.clock = clock

    def make_input(self) -> Input:
        raise NotImplementedError

    def explain(self) -> Text:
        raise NotImplementedError

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Label(self.TITLE_TEXT, id="dialog-title")
            yield Static(request_summary(self.request), markup=False)
            yield expiry_countdown(self.request, self.clock)
            yield Static(self.explain(), markup=False, classes="dialog-explain")
            yield self.make_input()
            yield Static("", id="dialog-error", markup=False)
            with Horizontal(id="dialog-buttons"):
                yield Button(self.CONFIRM_LABEL, variant=self.CONFIRM_VARIANT, id="confirm")
                yield Button("Cancel", id="cancel")

    def on_mount(self) -> None:
        field = self.query_one(Input)
        # Snapshot tests turn blinking off app-wide so screenshots do not depend on timing.
        field.cursor_blink = getattr(self.app, "cursor_blink", True)
        field.focus()

    def show_error(self, message: str) -> None:
        error = self.query_one("#dialog-error", Static)
        error.update(Text(message))
        error.add_class("-shown")
        self.query_one(Input).focus()

    def submit(self, value: str) -> None:
        raise NotImplementedError

    @on(Countdown.Expired)
    def _expired(self, event: Countdown.Expired) -> None:
        event.stop()
        refuse_expired(self)

    @on(Input.Submitted)
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        if not self.query_one(Countdown).over:
            self.submit(event.value)

    @on(Button.Pressed, "#confirm")
    def _confirm(self) -> None:
        if not self.query_one(Countdown).over:
            self.submit(self.query_one(Input).value)

    @on(Button.Pressed, "#cancel")
    def _cancel(self) -> None:
        self.dismiss(None)

    def action_cancel(self) -> None:
        self.dismiss(None)


class ConfirmAmountModal(_DecisionModal[Decimal | None]):
    """Approve a request above the confirmation threshold by typing its exact ceiling."""

    TITLE_TEXT = "Approve: type the amount"
    CONFIRM_LABEL = "Approve"
    CONFIRM_VARIANT = "success"

    def __init__(
        self, request: SpendRequest, amount: Decimal, *, clock: Callable[[], float] | None = None
    ) -> None:
        super().__init__(request, clock=clock)
        self.amount = amount

    def explain(self) -> Text:
        request = self.request
        to = pays_to(request.kind, request.estimate, request.endpoint)
        return Text(
            f"This approval lets up to {format_usdc(self.amount)} USDC be spent.\n"
            f"Pays to: {to}.\n"
            f"Type {format_usdc(self.amount)} to approve it."
        )

    def make_input(self) -> Input:
        return Input(placeholder="amount in USDC", id="amount", max_length=20)

    def submit(self, value: str) -> None:
        try:
            typed = parse_usdc(value)
        except ValueError:
            self.show_error(f"Not an amount. Type {format_usdc(self.amount)} to approve.")
            return
        if typed != self.amount:
            self.show_error(
                f"{format_usdc(typed)} is not the amount. Type {format_usdc(self.amount)} exactly;"
                " nothing was approved."
            )
            return
        self.dismiss(typed)


class DenyReasonModal(_DecisionModal[str | None]):
    """Deny a request; the reason is recorded in the ledger and returned to the agent."""

    TITLE_TEXT = "Deny: give a reason"
    CONFIRM_LABEL = "Deny"
    CONFIRM_VARIANT = "error"

    def explain(self) -> Text:
        return Text("The agent receives this reason, and the ledger keeps it.")

    def make_input(self) -> Input:
        return Input(placeholder="why this is denied", id="reason", max_length=MAX_REASON)

    def submit(self, value: str) -> None:
        reason = value.strip()
        if not reason:
            self.show_error("A reason is required to deny; nothing was denied.")
            return
        self.dismiss(reason)
