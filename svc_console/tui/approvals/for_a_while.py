"""Decide for a while: approve (or deny) the selected request and make a grant that decides the
same agent's calls to the same endpoint the same way, for 15 minutes, an hour or until the console
stops. An approving grant approves each call up to this approval's amount, within a total the
operator types; the broker checks that total (`broker/grants.py`), and its refusal is shown here.

When the request's amount is above the confirmation threshold, the amount is typed here too: the
grant does not lift the typed-confirmation rule from the approval it starts with.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from decimal import Decimal

from rich.text import Text
from textual.app import ComposeResult
from textual.widgets import Input, RadioButton, RadioSet, Static

from svc_console.core.models import SpendRequest
from svc_console.core.money import format_usdc, parse_usdc
from svc_console.core.sanitize import inert_line
from svc_console.core.shown_facts import approval_ceiling, facts_digest
from svc_console.tui.approvals.dialog import DecidingDialog, typed_amount
from svc_console.tui.modals import MAX_REASON, request_summary
from svc_console.tui.widgets.queue import endpoint_name

# (what the broker takes, how the dialog says it); the first is the default, the shortest.
LASTING = (("15m", "15 minutes"), ("1h", "1 hour"), ("session", "until the console stops"))


@dataclass(frozen=True)
class ForAWhile:
    """What the operator chose: how long, and the total (approve) or the reason (deny)."""

    lasting: str
    seen: str  # the digest of the facts the dialog showed
    total: Decimal | None = None
    confirm: Decimal | None = None
    reason: str | None = None


Decide = Callable[[ForAWhile], Awaitable[object]]


class ForAWhileModal(DecidingDialog):
    """How long, and the total in USDC (approve) or the reason (deny)."""

    def __init__(
        self,
        request: SpendRequest,
        decide: Decide,
        *,
        approve: bool,
        confirm: Decimal | None,
        clock: Callable[[], float] | None = None,
    ) -> None:
        super().__init__(expiring=request, clock=clock)
        self.request, self._decide, self.approve = request, decide, approve
        self.seen = facts_digest(request)
        self.confirm = confirm if approve else None
        estimate = request.estimate
        self.per_call = approval_ceiling(request, estimate) if estimate is not None else None
        self.TITLE_TEXT = "Approve for a while" if approve else "Deny for a while"
        self.CONFIRM_LABEL = "Approve" if approve else "Deny"
        self.CONFIRM_VARIANT = "success" if approve else "error"

    def explain(self) -> Text:
        agent, endpoint = inert_line(self.request.agent, 40), endpoint_name(self.request, 40)
        if not self.approve:
            return Text(f"Also deny {agent}'s calls to {endpoint} for:")
        each = format_usdc(self.per_call) if self.per_call is not None else "this amount"
        return Text(
            f"Also approve {agent}'s calls to {endpoint}, each at most {each} USDC,"
            " up to the total below, for:"
        )

    def compose_body(self) -> ComposeResult:
        yield Static(request_summary(self.request), markup=False)
        yield Static(self.explain(), markup=False, classes="dialog-explain")
        with RadioSet(id="lasting"):
            for index, (_, label) in enumerate(LASTING):
                yield RadioButton(label, value=index == 0)
        if self.approve:
            least = format_usdc(self.per_call) if self.per_call is not None else "one call"
            yield Static(f"Total in USDC, at least {least}:", classes="dialog-field")
            yield Input(placeholder="total in USDC", id="total", max_length=20)
            if self.confirm is not None:
                yield Static(
                    f"This approval lets up to {format_usdc(self.confirm)} USDC be spent:"
                    f" type {format_usdc(self.confirm)} to confirm it.",
                    classes="dialog-field",
                )
                yield Input(placeholder="amount in USDC", id="confirm-amount", max_length=20)
        else:
            yield Static("The agent receives this reason:", classes="dialog-field")
            yield Input(placeholder="why this is denied", id="reason", max_length=MAX_REASON)

    @property
    def lasting(self) -> str:
        pressed = self.query_one(RadioSet).pressed_index
        return LASTING[max(0, pressed)][0]

    async def submit(self) -> None:
        if self.approve:
            choice = self._approval()
        else:
            reason = self.query_one("#reason", Input).value.strip()
            choice = ForAWhile(self.lasting, self.seen, reason=reason) if reason else None
            if choice is None:
                self.show_error("A reason is required to deny; nothing was denied.")
        if choice is not None:
            await self.decide(lambda: self._decide(choice))

    def _approval(self) -> ForAWhile | None:
        """The choice when every field reads, else None with the first problem shown."""
        try:
            total = parse_usdc(self.query_one("#total", Input).value)
        except ValueError:
            self.show_error("Type the total in USDC, a number such as 0.50; nothing was decided.")
            self.query_one("#total", Input).focus()
            return None
        if self.confirm is not None:
            field = self.query_one("#confirm-amount", Input)
            problem = typed_amount(field.value, self.confirm)
            if problem is not None:
                self.show_error(problem)
                field.focus()
                return None
        return ForAWhile(self.lasting, self.seen, total=total, confirm=self.confirm)
