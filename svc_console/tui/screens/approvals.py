"""The approvals screen, home of the TUI: the queue of pending spend requests, the detail of the
selected one, and the operator's two decisions (approve, deny).

It owns the queue's state. The broker's listener only posts `RequestChanged`; the handler applies it
to the table by row key. Decisions go through the broker's public API, whose errors (the request
expired a moment ago, a confirmation is missing) become notifications, never tracebacks.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from decimal import Decimal

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.notifications import SeverityLevel
from textual.screen import Screen
from textual.theme import Theme
from textual.widgets import DataTable, Footer, Header, Static

from svc_console.broker import Broker, BrokerError
from svc_console.broker.params import ApproveParams, DenyParams
from svc_console.core.models import SpendRequest
from svc_console.core.money import format_usdc
from svc_console.core.sanitize import inert_line
from svc_console.core.states import State
from svc_console.tui.bindings import bindings
from svc_console.tui.colors import Palette, palette
from svc_console.tui.messages import RequestChanged
from svc_console.tui.modals import ConfirmAmountModal, DenyReasonModal
from svc_console.tui.widgets.banner import SandboxBanner
from svc_console.tui.widgets.detail import RequestDetail
from svc_console.tui.widgets.queue import RequestQueue, endpoint_name

log = logging.getLogger(__name__)

TICK_S = 1.0
# States after an approval that the operator hears about, with how loudly.
_OUTCOME_SEVERITY: dict[State, SeverityLevel] = {
    State.succeeded: "information",
    State.failed: "error",
    State.awaiting_funds: "warning",
    State.unknown: "error",
    State.repriced: "warning",
}


class ApprovalsScreen(Screen[None]):
    """Pending requests and their detail; `a` approves, `d` denies."""

    BINDINGS = bindings("approvals")
    SUB_TITLE = "approvals"
    # Side by side when there is room for both; stacked on an 80-column terminal.
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (110, "-wide")]

    def __init__(self, broker: Broker, *, socket_hint: str) -> None:
        super().__init__(id="approvals")
        self.broker = broker
        self.socket_hint = socket_hint
        self._unsubscribe: Callable[[], None] | None = None
        # Requests approved from this screen: their outcome is reported when it arrives.
        self._approved_here: set[str] = set()

    # -- layout ---------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        if self.broker.market.sandbox:
            yield SandboxBanner(self.broker.market.base_url, id="sandbox-banner")
        yield Header(show_clock=False, icon="$")
        with Horizontal(id="approvals-body"):
            yield RequestQueue(id="queue")
            yield RequestDetail(id="detail")
        yield Static(
            Text(f"No requests waiting.\nAgents submit to {self.socket_hint}", justify="center"),
            id="empty",
            markup=False,
        )
        yield Footer()

    @property
    def queue(self) -> RequestQueue:
        return self.query_one(RequestQueue)

    @property
    def colours(self) -> Palette:
        return palette(self.app)

    def on_mount(self) -> None:
        # Subscribe before the first read, so nothing that changes in between is missed.
        self._unsubscribe = self.broker.subscribe(self._broker_changed)
        self.queue.replace_all(self.broker.pending(), self.broker.clock(), self.colours)
        self._sync()
        self.set_interval(TICK_S, self._tick, name="approvals-clock")
        self.app.theme_changed_signal.subscribe(self, self._restyle)
        self.queue.focus()

    def on_unmount(self) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None

    # -- live updates ---------------------------------------------------------------------------

    def _broker_changed(self, request: SpendRequest) -> None:
        # Called by the broker, synchronously, for every change: only hand it to the message loop.
        self.post_message(RequestChanged(request))

    def on_request_changed(self, message: RequestChanged) -> None:
        request = message.request
        now, colours = self.broker.clock(), self.colours
        if request.state == State.pending:
            if self.queue.upsert(request, now, colours):
                self.app.bell()
                self.notify(f"New request from {inert_line(request.agent, 40)}", markup=False)
        elif self.queue.drop(request.id) and request.state in (State.expired, State.cancelled):
            how = "expired" if request.state == State.expired else "was cancelled by the agent"
            self.notify(
                f"{request.id} from {inert_line(request.agent, 40)} {how}",
                severity="warning",
                markup=False,
            )
        self._report_outcome(request)
        self._sync()

    def _report_outcome(self, request: SpendRequest) -> None:
        severity = _OUTCOME_SEVERITY.get(request.state)
        if severity is None or request.id not in self._approved_here:
            return
        if request.state == State.succeeded and request.outcome is not None:
            text = (
                f"{request.id} succeeded: charged {format_usdc(request.outcome.charged_usdc)} USDC"
                f" on {inert_line(request.outcome.chain, 20)}"
            )
        elif request.state == State.awaiting_funds:
            text = f"{request.id} waits for funds: {inert_line(request.funding_url or '-', 120)}"
        else:
            text = f"{request.id} {request.state}: {inert_line(request.reason or '-', 160)}"
        if request.state != State.awaiting_funds and request.state != State.repriced:
            self._approved_here.discard(request.id)
        self.notify(text, severity=severity, markup=False)

    def _tick(self) -> None:
        self.queue.tick(self.broker.clock(), self.colours)

    def _restyle(self, _theme: Theme) -> None:
        # Cell styles are resolved from the theme when drawn into Text: redraw them all.
        self.queue.replace_all(
            list(self.queue.requests.values()), self.broker.clock(), self.colours
        )
        self._sync()

    def _sync(self) -> None:
        """Show the empty state or the queue, and the detail of whatever is selected."""
        self.set_class(self.queue.row_count == 0, "-empty")
        self._show_selected()

    def _show_selected(self) -> None:
        request = self.queue.selected
        confirm = self.broker.confirmation_needed(request) if request else None
        self.query_one(RequestDetail).show(request, self.colours, confirm)

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        event.stop()
        self._show_selected()

    # -- the operator's actions -----------------------------------------------------------------

    def action_cursor_down(self) -> None:
        self.queue.action_cursor_down()

    def action_cursor_up(self) -> None:
        self.queue.action_cursor_up()

    def _selected_or_say_so(self) -> SpendRequest | None:
        request = self.queue.selected
        if request is None:
            self.notify("No request is selected.", severity="warning")
        return request

    async def action_approve(self) -> None:
        request = self._selected_or_say_so()
        if request is None:
            return
        amount = self.broker.confirmation_needed(request)
        if amount is None:
            await self._approve(request, None)
            return

        async def confirmed(typed: Decimal | None) -> None:
            if typed is not None:
                await self._approve(request, typed)

        self.app.push_screen(ConfirmAmountModal(request, amount), confirmed)

    def action_deny(self) -> None:
        request = self._selected_or_say_so()
        if request is None:
            return

        async def reasoned(reason: str | None) -> None:
            if reason is not None:
                await self._deny(request, reason)

        self.app.push_screen(DenyReasonModal(request), reasoned)

    async def _approve(self, request: SpendRequest, amount: Decimal | None) -> None:
        async def decide() -> SpendRequest:
            params = ApproveParams(request_id=request.id, confirm_amount=amount)
            return await self.broker.approve(params)

        # Noted before the call: the broker may report the outcome before approve() returns.
        self._approved_here.add(request.id)
        if await self._decide("approve", decide):
            self.notify(
                f"Approved {request.id}: {endpoint_name(request, 40)} for"
                f" {inert_line(request.agent, 40)}; executing",
                markup=False,
            )
        else:
            self._approved_here.discard(request.id)

    async def _deny(self, request: SpendRequest, reason: str) -> None:
        async def decide() -> SpendRequest:
            return await self.broker.deny(DenyParams(request_id=request.id, reason=reason))

        if await self._decide("deny", decide):
            self.notify(f"Denied {request.id}", markup=False)

    async def _decide(self, verb: str, decide: Callable[[], Awaitable[SpendRequest]]) -> bool:
        """Run one broker decision; any failure becomes one notification."""
        try:
            await decide()
        except BrokerError as exc:
            self.notify(exc.message, title=f"Could not {verb}", severity="error", markup=False)
            return False
        except Exception:
            # Never let an unexpected error take the operator's screen down mid-decision.
            log.exception("%s failed", verb)
            self.notify(
                "Unexpected error; nothing more was done. See the log for details.",
                title=f"Could not {verb}",
                severity="error",
            )
            return False
        return True
