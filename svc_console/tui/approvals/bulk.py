"""Decide similar requests together: the marks on the pending list, and the dialog that approves
or denies every marked request at once.

Marks are request ids, not rows, so they survive every reload of the page, a new sort or filter,
and another page; a request that stops waiting (decided elsewhere, expired, cancelled) loses its
mark. The broker still gives each request its own decision and audit event (`approve_many`); the
dialog shows how many and the most they let be spent, and asks for that total to be typed when
it passes the confirmation threshold.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from decimal import Decimal

from rich.text import Text
from textual.app import ComposeResult
from textual.widgets import Input, Static

from svc_console.core.models import SpendRequest
from svc_console.core.money import format_usdc
from svc_console.core.sanitize import inert_line
from svc_console.core.shown_facts import approval_ceiling, facts_digest
from svc_console.core.wording import plural
from svc_console.tui.approvals.dialog import DecidingDialog, typed_amount
from svc_console.tui.modals import MAX_REASON
from svc_console.tui.widgets.countdown import Countdown
from svc_console.tui.widgets.queue import endpoint_name

# Requests the dialog names one by one before it counts the rest.
NAMED = 5
# The most one bulk decision takes (the operator socket's own limit on a list of ids).
MOST = 500

# The typed total, the reason, and by request the digest of the facts the dialog showed.
Decide = Callable[[Decimal | None, str | None, dict[str, str]], Awaitable[object]]


class Marks:
    """The marked pending requests by id, in the order they were marked, with the most each
    approval would let be spent (so the total is known without reading the ledger again)."""

    def __init__(self) -> None:
        self._ceilings: dict[str, Decimal] = {}

    def __contains__(self, request_id: object) -> bool:
        return request_id in self._ceilings

    def __len__(self) -> int:
        return len(self._ceilings)

    @property
    def ids(self) -> list[str]:
        return list(self._ceilings)

    @property
    def total(self) -> Decimal:
        return sum(self._ceilings.values(), Decimal(0))

    def toggle(self, request: SpendRequest) -> bool:
        """Mark or unmark; True when it is now marked."""
        if request.id in self._ceilings:
            del self._ceilings[request.id]
            return False
        self._ceilings[request.id] = ceiling(request)
        return True

    def add(self, requests: Iterable[SpendRequest]) -> int:
        """Mark these (up to `MOST` in all); how many were not marked before."""
        before = len(self._ceilings)
        for request in requests:
            if len(self._ceilings) >= MOST:
                break
            self._ceilings.setdefault(request.id, ceiling(request))
        return len(self._ceilings) - before

    def discard(self, request_id: str) -> None:
        self._ceilings.pop(request_id, None)

    def clear(self) -> None:
        self._ceilings.clear()


def ceiling(request: SpendRequest) -> Decimal:
    estimate = request.estimate
    return approval_ceiling(request, estimate) if estimate is not None else Decimal(0)


def outcome_text(outcome: dict[str, str], approve: bool) -> tuple[str, bool]:
    """The summary of a bulk decision ("3 approved", "2 denied, 1 not: req_x expired"), and
    whether every request was decided."""
    verb = "approved" if approve else "denied"
    missed = {rid: why for rid, why in outcome.items() if why.startswith("not ")}
    done = len(outcome) - len(missed)
    text = f"{done} {verb}"
    if missed:
        reasons = "; ".join(
            f"{rid}: {inert_line(why.split(': ', 1)[-1], 120)}"
            for rid, why in list(missed.items())[:3]
        )
        more = f" (and {len(missed) - 3} more)" if len(missed) > 3 else ""
        text += f", {len(missed)} not: {reasons}{more}"
    return text, not missed


class BulkModal(DecidingDialog):
    """Approve or deny the marked requests: their count and total, the total typed when the
    threshold asks for it, a reason to deny."""

    def __init__(
        self,
        requests: list[SpendRequest],
        total: Decimal,
        decide: Decide,
        *,
        approve: bool,
        typed: bool,
        clock: Callable[[], float] | None = None,
    ) -> None:
        super().__init__(clock=clock)
        self.requests, self.total, self._decide = requests, total, decide
        self.seen = {request.id: facts_digest(request) for request in requests}
        self.approve, self.typed = approve, typed and approve
        count = len(requests)
        self.TITLE_TEXT = f"{'Approve' if approve else 'Deny'} {plural(count, 'marked request')}"
        self.CONFIRM_LABEL = f"{'Approve' if approve else 'Deny'} {count}"
        self.CONFIRM_VARIANT = "success" if approve else "error"

    def listing(self) -> Text:
        text = Text()
        for index, request in enumerate(self.requests[:NAMED]):
            most = format_usdc(ceiling(request)) if request.estimate is not None else "-"
            if index:
                text.append("\n")
            text.append(f"{request.id}  ", style="dim")
            text.append(f"{inert_line(request.agent, 20)}  {endpoint_name(request, 24)}  ")
            text.append(f"{most} USDC", style="bold")
        if len(self.requests) > NAMED:
            text.append(f"\n… and {len(self.requests) - NAMED} more", style="dim")
        return text

    def compose_body(self) -> ComposeResult:
        count = len(self.requests)
        if self.approve:
            head = f"{plural(count, 'request')}, up to {format_usdc(self.total)} USDC in all."
            head += " Each gets its own decision, and its own checks."
        else:
            head = f"{plural(count, 'request')}. Each is denied with the reason below."
        yield Static(Text(head), markup=False, classes="dialog-explain")
        yield Static(self.listing(), markup=False)
        deadlines = [r.expires_at for r in self.requests if r.expires_at is not None]
        if self._clock is not None and deadlines:
            # The soonest deadline: past it that request is left out, the others still decided.
            yield Countdown(
                min(deadlines),
                self._clock,
                running="The first of them expires in",
                over="One of them has expired: it will be left out, the others decided.",
            )
        if self.typed:
            yield Static(
                f"Type the total, {format_usdc(self.total)}, to approve them all:",
                classes="dialog-field",
            )
            yield Input(placeholder="total in USDC", id="confirm-total", max_length=20)
        elif not self.approve:
            yield Static("Each agent receives this reason:", classes="dialog-field")
            yield Input(placeholder="why these are denied", id="reason", max_length=MAX_REASON)

    @property
    def expired(self) -> bool:
        return False  # each request is decided on its own: an expired one is only left out

    async def submit(self) -> None:
        if self.approve:
            confirm = None
            if self.typed:
                field = self.query_one("#confirm-total", Input)
                problem = typed_amount(field.value, self.total, "total")
                if problem is not None:
                    self.show_error(problem)
                    return
                confirm = self.total
            await self.decide(lambda: self._decide(confirm, None, self.seen))
            return
        reason = self.query_one("#reason", Input).value.strip()
        if not reason:
            self.show_error("A reason is required to deny; nothing was denied.")
            return
        await self.decide(lambda: self._decide(None, reason, self.seen))
