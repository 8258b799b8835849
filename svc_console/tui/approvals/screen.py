"""The approvals screen, home of the TUI: the requests waiting for the operator and the history of
decided ones, the detail of the selected request, and the operator's two decisions.

It owns the lists' state (which tab, sort, filter, page) and asks the ledger for the one page on
screen, so ten thousand pending requests cost what fifty do. The broker's listener only posts
`RequestChanged`; the handler notes what happened and schedules one reload of the page for a burst
of changes. Decisions go through the broker's public API, whose errors (the request expired a
moment ago, a confirmation is missing) become notifications, never tracebacks. Agents the circuit
breaker paused are named in a strip above the lists, read again every second so a resume from the
command line shows at once; `R` resumes one.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.theme import Theme
from textual.widgets import ContentSwitcher, DataTable, Input, Static

from svc_console.broker import Broker
from svc_console.core.models import SpendRequest
from svc_console.core.money import format_usdc
from svc_console.core.states import State
from svc_console.runtime import Runtime
from svc_console.tui import present
from svc_console.tui.approvals.bulk import Marks
from svc_console.tui.approvals.deciding import Deciding
from svc_console.tui.approvals.demo_traffic import DemoTraffic
from svc_console.tui.approvals.detail import RequestDetail, gone_notice
from svc_console.tui.approvals.detail_pane import HELP_NOTES, LIST_LEGEND, DetailKeys, DetailPane
from svc_console.tui.approvals.filter_bar import FilterBar
from svc_console.tui.approvals.history import HistoryTable
from svc_console.tui.approvals.list_status import ListStatus
from svc_console.tui.approvals.notices import (
    OUTCOME_SEVERITY,
    Announcer,
    arrivals_text,
    outcome_text,
    pending_status,
)
from svc_console.tui.approvals.paused import PausedAgents, ResumeKey
from svc_console.tui.bindings import bindings, commands
from svc_console.tui.colors import Palette, palette
from svc_console.tui.desktop_notice import desktop_notice
from svc_console.tui.help import key_display
from svc_console.tui.messages import RequestChanged
from svc_console.tui.navigation import register_screen
from svc_console.tui.request_lists import (
    HISTORY_LIST,
    PAGE_SIZE,
    PENDING,
    Filter,
    ListState,
    parse_filter,
    with_token,
)
from svc_console.tui.widgets.banner import PolicyBanner, service_banner
from svc_console.tui.widgets.chrome import ConsoleFooter, heading
from svc_console.tui.widgets.paged_table import PagedTable
from svc_console.tui.widgets.queue import RequestQueue

log = logging.getLogger(__name__)

TICK_S = 1.0
# A column header clicked → the sort it stands for.
_HEADER_SORTS = {
    "agent": "agent",
    "usdc": "amount",
    "age": "age",
    "expires": "expires",
    "decided": "decided",
    "approved": "amount",
    "charged": "amount",
}
# Actions that decide or mark pending requests: offered on the pending list only.
_PENDING_ACTIONS = (
    "approve",
    "deny",
    "approve_for_a_while",
    "deny_for_a_while",
    "approve_always",
    "toggle_mark",
    "mark_matching",
)


@register_screen("approvals", title="Approvals", key="1", order=1)
class ApprovalsScreen(Deciding, DetailKeys, ResumeKey, DemoTraffic, Screen[None]):
    """Pending requests and their detail; `a` approves, `d` denies (`A`, `D` for a while, `w`
    always; with marks, every marked request); `h` shows the history."""

    BINDINGS = bindings("approvals")
    # The queue, not the filter's input (the first focusable widget): keys act on requests.
    AUTO_FOCUS = f"#{PENDING.name}"
    SUB_TITLE = "approvals"
    HELP_NOTES = HELP_NOTES
    # Notifications on the list's side, never over the detail the operator reads before
    # deciding: bottom left beside it; above it on a narrow terminal, below the banner and the
    # header's count.
    DEFAULT_CSS = """
    ApprovalsScreen ToastHolder {
        align-horizontal: left;
    }
    ApprovalsScreen.-narrow ToastRack {
        dock: top;
        align-vertical: top;
        margin-top: 2;
    }
    """
    # Side by side when there is room for both; stacked on an 80-column terminal.
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (110, "-wide")]

    def __init__(self, runtime: Runtime) -> None:
        super().__init__(id="approvals")
        assert runtime.broker is not None, "the approvals screen needs a started runtime"
        self.runtime = runtime
        self.broker: Broker = runtime.broker
        self.socket_hint = present.socket_hint(runtime.paths)
        self.lists = {PENDING.name: ListState(PENDING), HISTORY_LIST.name: ListState(HISTORY_LIST)}
        self.active = PENDING.name
        self.filter = Filter()
        self._unsubscribe: Callable[[], None] | None = None
        self._unfacts: Callable[[], None] | None = None
        # Requests approved from this screen: their outcome is reported when it arrives.
        self._approved_here: set[str] = set()
        # Pending requests this screen has announced, so a re-queued one is announced again.
        self._announced: set[str] = set()
        self._arrivals: list[SpendRequest] = []
        self._departures: list[SpendRequest] = []
        self.announcer = Announcer(self.notify, self.set_timer)
        self._reload_scheduled = False
        # Marked pending requests, by id: they outlive every reload of the page.
        self.marks = Marks()
        self._counts: dict[str, str] = {}
        self._shown = 0
        # Totals of the lists by name; the one not on screen is counted again only when stale.
        self._totals: dict[str, int] = {}
        self._counts_stale = True

    # -- layout ---------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        banner = service_banner(self.broker.market, self.runtime.agent_warning)
        if banner is not None:
            yield banner
        if hasattr(self.broker.policy, "subscribe"):  # a live SKILLS.md policy, not ManualReview
            yield PolicyBanner(self.broker.policy, id="policy-banner")
        yield from heading()
        yield PausedAgents(self._resume_key(), id="paused")
        yield ListStatus(id="list-status")
        yield FilterBar(id="filter")
        with Horizontal(id="approvals-body"):
            with Vertical(id="lists-column"):
                with ContentSwitcher(initial=PENDING.name, id="lists"):
                    yield RequestQueue(id=PENDING.name)
                    yield HistoryTable(id=HISTORY_LIST.name)
                yield Static(LIST_LEGEND, id="list-legend", markup=False)
            yield DetailPane(self.detail_hint(), id="detail-pane")
        yield Static("", id="empty", markup=False)
        yield ConsoleFooter()

    @property
    def table(self) -> PagedTable:
        """The table of the list on screen."""
        return self.query_one(f"#{self.active}", PagedTable)

    @property
    def queue(self) -> RequestQueue:
        return self.query_one(RequestQueue)

    @property
    def colours(self) -> Palette:
        return palette(self.app)

    def _resume_key(self) -> str:
        """The key that resumes, as the operator's keymap has it, for the strip's hint."""
        return self._key_of("approvals.resume")

    def on_mount(self) -> None:
        # Subscribe before the first read, so nothing that changes in between is missed.
        self._unsubscribe = self.broker.subscribe(self._broker_changed)
        when_facts = getattr(self.broker, "when_facts", None)
        if when_facts is not None:  # attached: a request's budgets arrive after its row
            self._unfacts = when_facts(lambda: self.call_later(self._read_afresh))
        self.queue.marks = self.marks
        for table in self.query(PagedTable):
            table.follow = self._follow_cursor
        self.reload()
        self.set_interval(TICK_S, self._tick, name="approvals-clock")
        self.app.theme_changed_signal.subscribe(self, self._restyle)
        # Snapshot tests turn blinking off app-wide so screenshots do not depend on timing.
        self.query_one(FilterBar).cursor_blink = getattr(self.app, "cursor_blink", True)
        self.table.focus()

    def on_unmount(self) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        if self._unfacts is not None:
            self._unfacts()
            self._unfacts = None

    # -- the page on screen ---------------------------------------------------------------------

    def reload(self, *, cursor: int | None = None) -> None:
        """Ask the ledger for the page on screen and the counts, and show them.

        The list on screen is always counted (its pages depend on it); the other list only
        after the broker reported a change, since a long history is costly to count."""
        ledger = self.broker.ledger
        for name, other in self.lists.items():
            if name == self.active or self._counts_stale or name not in self._totals:
                self._totals[name] = ledger.count_in_states(other.kind.states)
        self._counts_stale = False
        state = self.lists[self.active]
        query = state.query(self.filter)
        state.settle(ledger.count(query) if self.filter.active else self._totals[self.active])
        page = ledger.window(query, offset=state.offset, limit=PAGE_SIZE)
        now, colours = self.broker.clock(), self.colours
        self.table.show(page, now, colours, cursor=cursor)
        gone = self.table.gone_id
        at = ledger.position(query, gone) if gone is not None else None
        if at is not None:
            # The selected request is still listed, on another page (those before it left, or
            # came): the page follows it, and the selection stays on it.
            state.page = at // PAGE_SIZE
            page = ledger.window(query, offset=state.offset, limit=PAGE_SIZE)
            self.table.show(page, now, colours, cursor=at % PAGE_SIZE)
        counts = {
            name: f"{state.total:,}/{self._totals[name]:,}"
            if name == self.active and self.filter.active
            else f"{self._totals[name]:,}"
            for name in self.lists
        }
        self._counts = counts
        self._shown = len(page)
        self._show_header_status()
        self._show_status()
        self._show_empty(not page)
        self._show_selected()
        self._show_pauses()

    def _show_header_status(self) -> None:
        # The app's sub-title is every header's status: the count is seen from any screen.
        parts = [pending_status(self._totals[PENDING.name])]
        if self.agents_paused:
            parts.append("demo agents paused")
        if getattr(self.broker, "attached", False):
            parts.append("attached")
        self.app.sub_title = " · ".join(part for part in parts if part)

    def _show_empty(self, empty: bool) -> None:
        if empty:
            if self.filter.active:
                text = "No request matches the filter.\nPress escape to clear it."
            elif self.active == PENDING.name:
                text = f"No requests waiting.\nAgents submit to {self.socket_hint}"
            else:
                text = "No decided requests yet."
            self.query_one("#empty", Static).update(Text(text, justify="center"))
        self.set_class(empty, "-empty")

    def _show_status(self) -> None:
        marked = ""
        if self.marks and self.active == PENDING.name:
            marked = f"{len(self.marks)} marked · {format_usdc(self.marks.total)} USDC"
        self.query_one(ListStatus).show(
            self.lists, self._counts, self.active, self.filter, self._shown, self.colours, marked
        )

    def _show_selected(self) -> None:
        gone = self.table.gone_id
        if gone is not None:
            self._show_gone(gone)
            return
        request = self.table.selected
        confirm, budgets, two = None, [], None
        if request is not None and request.state == State.pending:
            confirm = self.broker.confirmation_needed(request)
            # Read for the selected request alone: a handful of running totals, never a scan.
            budgets = self.broker.budgets_for(request)
            two = self.broker.decisions.two_person_status(request)
        detail = self.query_one(RequestDetail)
        detail.show(request, self.colours, confirm, self.broker.clock(), budgets, two_person=two)

    def _show_gone(self, request_id: str) -> None:
        """The selected request left the page: it stays in the detail, as it is now, under a
        line that says so; nothing is selected until the operator moves."""
        request = self.broker.ledger.get(request_id)
        detail = self.query_one(RequestDetail)
        now, colours = self.broker.clock(), self.colours
        detail.show(request, colours, None, now, notice=gone_notice(request_id, request, colours))

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        event.stop()
        # A reload or the move itself has already shown the request the cursor landed on.
        self._follow_cursor()

    def on_paged_table_edge(self, event: PagedTable.Edge) -> None:
        event.stop()
        if self.lists[self.active].turn(event.direction):
            self.reload(cursor=0 if event.direction > 0 else -1)

    def on_data_table_header_selected(self, event: DataTable.HeaderSelected) -> None:
        event.stop()
        key = _HEADER_SORTS.get(str(event.column_key.value))
        if key is not None:
            self.action_sort(key)

    def _tick(self) -> None:
        self.table.tick(self.broker.clock(), self.colours)
        # A resume (or a pause) from the command line reaches no listener: read the pauses again.
        self._show_pauses()

    def _show_pauses(self) -> None:
        strip = self.query_one(PausedAgents)
        if strip.show(self.broker.pauses.paused(), self.broker.clock(), self.colours):
            self.refresh_bindings()  # `R` is offered only while an agent is paused

    def _restyle(self, _theme: Theme) -> None:
        # Cell styles are resolved from the theme when drawn into Text: redraw the page.
        self.reload()

    # -- live updates ---------------------------------------------------------------------------

    def _broker_changed(self, request: SpendRequest) -> None:
        # Called by the broker, synchronously, for every change: only hand it to the message loop.
        self.post_message(RequestChanged(request))

    def on_request_changed(self, message: RequestChanged) -> None:
        request = message.request
        if request.state == State.pending:
            if request.id not in self._announced:
                self._announced.add(request.id)
                self._arrivals.append(request)
        else:
            was_pending = request.id in self._announced or request.id in self.queue.requests
            self.marks.discard(request.id)
            self._announced.discard(request.id)
            gone = request.state == State.expired or (
                request.state == State.cancelled and was_pending
            )
            if gone:
                self._departures.append(request)
        self._report_outcome(request)
        self._counts_stale = True
        if not self._reload_scheduled:
            # One reload for a burst of changes: the callback runs after the queued messages.
            self._reload_scheduled = True
            self.call_later(self._flush)

    def _read_afresh(self) -> None:
        # Attached: a request's budgets came, or the queue is followed again after a cut-off.
        self._counts_stale = True
        self.reload()

    def _flush(self) -> None:
        self._reload_scheduled = False
        self.reload()
        arrivals, self._arrivals = self._arrivals, []
        departures, self._departures = self._departures, []
        if arrivals:
            self.app.bell()
            desktop_notice(self.app, arrivals_text(arrivals))
        # The header counts them at once; the notification gathers a burst into one.
        self.announcer.note(arrivals, departures)

    def _report_outcome(self, request: SpendRequest) -> None:
        severity = OUTCOME_SEVERITY.get(request.state)
        if severity is None or request.id not in self._approved_here:
            return
        text = outcome_text(request)
        # Waiting for funds, the request is the wallet screen's: its funding flow says how it
        # ends, and one notice per event is enough.
        if request.state != State.repriced:
            self._approved_here.discard(request.id)
        self.notify(text, severity=severity, markup=False)

    # -- which actions make sense now -----------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in _PENDING_ACTIONS:
            return self.active == PENDING.name
        if action == "clear_marks":
            return self.active == PENDING.name and bool(self.marks)
        if action == "pause_demo_agents":
            return self.demo_running
        if action == "resume_agent":
            return bool(self.query_one(PausedAgents).pauses)
        if action == "show_tab":
            return parameters[0] != self.active
        if action == "sort":
            return self.lists[self.active].kind.sort(str(parameters[0])) is not None
        if action == "clear_filter":
            bars = self.query(FilterBar)
            return self.filter.active or any(bar.has_focus for bar in bars)
        return True

    def _changed_state(self) -> None:
        self.refresh_bindings()

    # -- lists, sorting, filtering, paging ------------------------------------------------------

    def action_show_tab(self, name: str) -> None:
        if name not in self.lists or name == self.active:
            return
        self.active = name
        self.query_one(ContentSwitcher).current = name
        self.reload()
        self.table.focus()
        self._changed_state()

    def action_next_sort(self) -> None:
        self.lists[self.active].next_sort()
        self.reload(cursor=0)

    def action_reverse_sort(self) -> None:
        self.lists[self.active].reverse()
        self.reload(cursor=0)

    def action_sort(self, key: str) -> None:
        if self.lists[self.active].sort_by(key):
            self.reload(cursor=0)

    def action_page(self, delta: int) -> None:
        if self.lists[self.active].turn(delta):
            self.reload(cursor=0)

    def action_focus_filter(self) -> None:
        bar = self.query_one(FilterBar)
        self.add_class("-filtering")
        bar.focus()
        self._changed_state()

    def action_clear_filter(self) -> None:
        bar = self.query_one(FilterBar)
        self.remove_class("-filtering")
        if bar.value:
            bar.value = ""  # Input.Changed applies the empty filter
        self.table.focus()
        self._changed_state()

    def action_filter_token(self, token: str) -> None:
        bar = self.query_one(FilterBar)
        self.add_class("-filtering")
        bar.value = with_token(bar.value, token)
        self.table.focus()

    @on(Input.Changed, "#filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        event.stop()
        self.filter = parse_filter(event.value)
        for state in self.lists.values():
            state.page = 0
        self.set_class(bool(event.value) or event.input.has_focus, "-filtering")
        self.reload(cursor=0)
        self._changed_state()

    @on(Input.Submitted, "#filter")
    def _filter_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.set_class(bool(event.value), "-filtering")
        self.table.focus()

    def action_cursor_down(self) -> None:
        self.table.action_cursor_down()

    def action_cursor_up(self) -> None:
        self.table.action_cursor_up()

    def _follow_cursor(self) -> None:
        # The detail follows the operator's move in the same frame as the cursor (the table
        # calls this as it moves), not a frame later when its RowHighlighted arrives (which
        # then finds it shown already); drawn once either way.
        if self.table.selected_id != self.query_one(RequestDetail).shown_id:
            self._show_selected()

    async def action_show_grants(self) -> None:
        await self.app.run_action("show_screen('grants')")

    def _key_of(self, command_id: str) -> str:
        command = next(c for c in commands("approvals") if c.id == command_id)
        return key_display(self.app, command, getattr(self.app, "keymap", {}))
