"""The usage screen, for finance: the service's usage history joined with the ledger's decisions,
under filters, with totals, spend per day, the providers and agents that spent most, the charges
no approval covers flagged in red, and export to CSV or JSON.

It stays fast with a million charges because nothing here loads them: the table asks SQLite for
the rows on screen (`usage/table.py`), and the totals, the chart and the breakdowns are sums
SQLite computes from its indexes (`ledger/usage_query.py`). Every query runs in a thread worker on a
read-only connection of its own and posts a message; the screen applies it. A change of filter
bumps a generation number, so an answer to an older question is dropped, and interrupts the summary
query still running.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Footer, Header, Static
from textual.worker import Worker, WorkerState, get_current_worker

from svc_console.core.sanitize import inert_line
from svc_console.core.taxonomy import domain_label
from svc_console.core.usage import DAY_S, Reconciled, UsageFilter, iso_instant
from svc_console.ledger import usage_query as ledger_usage
from svc_console.ledger.readers import Interrupted, Reader, open_reader
from svc_console.ledger.usage_query import SpendBucket, UsageRow, UsageTotals
from svc_console.ledger.usage_write import SyncResult
from svc_console.runtime import Runtime
from svc_console.services.usage_export import describe_range, export_file
from svc_console.tui import bindings
from svc_console.tui.bindings import Command
from svc_console.tui.colors import Palette, palette
from svc_console.tui.navigation import register_screen
from svc_console.tui.usage.dialogs import (
    ExportChoice,
    FilterChoices,
    UsageExportDialog,
    UsageFilterDialog,
)
from svc_console.tui.usage.summary import SpendBreakdown, SpendChart, totals_text
from svc_console.tui.usage.table import UsageTable, state_label, usdc
from svc_console.tui.widgets.banner import service_banner

log = logging.getLogger(__name__)

# The period presets `p` steps through, in days (None: all dates).
PERIODS: tuple[int | None, ...] = (None, 7, 30, 90)
BREAKDOWN_ROWS = 8


def _command(
    id: str, keys: str, action: str, description: str, help: str, *, show: bool = True
) -> Command:
    return Command(f"usage.{id}", keys, action, description, help, show=show, palette=show)


COMMANDS = (
    _command("filters", "f", "filters", "Filters", "Filter by dates, agent, provider, chain, …"),
    _command("period", "p", "next_period", "Period", "All dates, then the last 7, 30, 90 days"),
    _command("flagged", "x", "toggle_flagged", "Flagged", "Only charges no approval covers"),
    _command("clear", "c", "clear_filters", "Clear", "Clear every filter"),
    _command("sync", "s", "sync", "Sync", "Fetch the usage history from the service"),
    _command("export", "e", "export", "Export", "Export what is shown to CSV or JSON"),
    _command("refresh", "r", "refresh", "Refresh", "Read the ledger again", show=False),
    _command("down", "down,j", "move(1)", "Down", "Next charge", show=False),
    _command("up", "up,k", "move(-1)", "Up", "Previous charge", show=False),
    _command("page_down", "pagedown", "page(1)", "Page down", "A page further", show=False),
    _command("page_up", "pageup", "page(-1)", "Page up", "A page back", show=False),
    _command("first", "home", "first", "Newest", "The newest charge", show=False),
    _command("last", "end", "last", "Oldest", "The oldest charge", show=False),
)


def short(reference: str | None) -> str:
    """A long transaction reference as its two ends ("0xa21b11ed…3f2a")."""
    if not reference:
        return "-"
    text = inert_line(reference, 200)
    return text if len(text) <= 16 else f"{text[:10]}…{text[-4:]}"


# -- messages from the workers ---------------------------------------------------------------------


@dataclass(frozen=True)
class Summary:
    totals: UsageTotals | None = None
    days: list[SpendBucket] | None = None
    providers: list[SpendBucket] | None = None
    agents: list[SpendBucket] | None = None


class SummaryLoaded(Message):
    def __init__(self, generation: int, part: str, value: Any) -> None:
        super().__init__()
        self.generation, self.part, self.value = generation, part, value


class ChoicesLoaded(Message):
    def __init__(self, choices: FilterChoices) -> None:
        super().__init__()
        self.choices = choices


class ExportFinished(Message):
    def __init__(self, path: Path, count: int) -> None:
        super().__init__()
        self.path, self.count = path, count


class Synced(Message):
    def __init__(self, result: SyncResult) -> None:
        super().__init__()
        self.result = result


# -- the screen ------------------------------------------------------------------------------------


@register_screen("usage", title="Usage", key="3", order=3)
class UsageScreen(Screen[None]):
    """Usage history: `f` filters, `x` flagged only, `e` exports, `s` syncs from the service."""

    BINDINGS = bindings.define("usage", COMMANDS)
    SUB_TITLE = "usage"
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (110, "-wide")]
    VERTICAL_BREAKPOINTS = [(0, "-short"), (34, "-tall")]
    DEFAULT_CSS = """
    UsageScreen Header { dock: none; }
    #usage-filters { height: 1; padding: 0 1; background: $panel; }
    #usage-totals { height: 1; padding: 0 1; }
    #usage-summary { height: 9; border-bottom: hkey $panel-lighten-2; }
    UsageScreen.-short #usage-summary { height: 5; }
    UsageScreen.-narrow SpendBreakdown { width: 24; }
    #usage-table { height: 1fr; }
    #usage-detail {
        height: 2; padding: 0 1; background: $surface; text-wrap: nowrap; text-overflow: ellipsis;
    }
    """

    def __init__(self, runtime: Runtime) -> None:
        super().__init__(id="usage")
        assert runtime.ledger is not None, "the usage screen needs a started runtime"
        self.runtime = runtime
        self.ledger_path = runtime.ledger.path
        self.filter = UsageFilter()
        self.summary = Summary()
        self.generation = 0
        self.table_reader: Reader | None = None
        self.summary_reader: Reader | None = None
        self._period = 0

    def now(self) -> float:
        broker = self.runtime.broker
        return broker.clock() if broker is not None else time.time()

    @property
    def colours(self) -> Palette:
        return palette(self.app)

    @property
    def table(self) -> UsageTable:
        return self.query_one(UsageTable)

    # -- layout -----------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        banner = service_banner(self.runtime.market, self.runtime.agent_warning)
        if banner is not None:
            yield banner
        yield Header(show_clock=False, icon="$")
        yield Static("", id="usage-filters", markup=False)
        yield Static("", id="usage-totals", markup=False)
        with Horizontal(id="usage-summary"):
            yield SpendChart(id="usage-chart")
            yield SpendBreakdown("per provider", id="usage-providers")
            yield SpendBreakdown("per agent", id="usage-agents")
        # The rows and the sums are asked for now, before anything is mounted: the queries run
        # while Textual styles and lays out the screen, so its first frame already shows rows.
        self.table_reader = Reader.open(self.ledger_path)
        self.summary_reader = Reader.open(self.ledger_path)
        table = UsageTable(id="usage-table")
        table.attach(self.table_reader)
        self._query(table, summary=False)
        yield table
        yield Static("", id="usage-detail", markup=False)
        yield Footer()

    def on_mount(self) -> None:
        self.app.theme_changed_signal.subscribe(self, lambda _theme: self._redraw())
        self._redraw()
        # The sums of a million rows keep a core busy for a while: started once the first frame
        # (with its rows) is out, they never hold it up.
        self.call_after_refresh(self._start_summary)

    def on_unmount(self) -> None:
        for reader in (self.table_reader, self.summary_reader):
            if reader is not None:
                reader.close()

    # -- loading ------------------------------------------------------------------------------

    def _reload(self) -> None:
        """Show the current filter: the table starts over, the summary is computed again."""
        self._query(self.table)
        self._redraw()

    def _redraw(self) -> None:
        self._draw_filters()
        self._draw_summary()
        self._show_detail(self.table.selected)

    def _query(self, table: UsageTable, *, summary: bool = True) -> None:
        """Ask for the rows and the summary of the current filter, forgetting older answers."""
        self.generation += 1
        self.summary = Summary()
        empty = (
            "No usage synced yet: press s to fetch it from the service."
            if self.filter.is_default
            else "No charges match these filters: c clears them."
        )
        table.show(self.filter, empty_text=empty)
        if summary:
            self._start_summary()

    def _start_summary(self) -> None:
        if self.summary_reader is not None:
            self.summary_reader.interrupt()  # an older summary still running is of no use now
        generation, f, reader = self.generation, self.filter, self.summary_reader
        self.run_worker(
            lambda: self._compute_summary(reader, generation, f),
            thread=True,
            group="usage-summary",
            exclusive=True,
            exit_on_error=False,
            name="usage summary",
        )

    def _compute_summary(self, reader: Reader | None, generation: int, f: UsageFilter) -> None:
        """In a worker thread: each part of the summary as soon as SQLite has it."""
        if reader is None:
            return
        worker = get_current_worker()
        parts = (
            ("totals", lambda conn: ledger_usage.totals(conn, f)),
            ("providers", lambda conn: ledger_usage.per_provider(conn, f, BREAKDOWN_ROWS)),
            ("agents", lambda conn: ledger_usage.per_agent(conn, f, BREAKDOWN_ROWS)),
            ("days", lambda conn: ledger_usage.per_day(conn, f)),
        )
        with reader.lock:
            for part, query in parts:
                if worker.is_cancelled or reader.closed:
                    return
                try:
                    value = query(reader.conn)
                except Interrupted:
                    if worker.is_cancelled or reader.closed:
                        return  # interrupted: a newer filter or the screen closing
                    raise
                self.post_message(SummaryLoaded(generation, part, value))

    def on_summary_loaded(self, message: SummaryLoaded) -> None:
        if message.generation != self.generation:
            return
        self.summary = Summary(**{**self.summary.__dict__, message.part: message.value})
        self._draw_summary()

    # -- drawing ----------------------------------------------------------------------------------

    def _draw_filters(self) -> None:
        f = self.filter
        parts = [describe_range(f)]
        for name, value in (
            ("agent", f.agent),
            ("provider", f.provider),
            ("chain", f.chain),
            ("domain", f"{f.domain_type} {domain_label(f.domain_type)}" if f.domain_type else None),
            ("state", f.state),
        ):
            if value is not None:
                parts.append(f"{name} {inert_line(value, 30)}")
        text = Text("filters: ", style=self.colours.label)
        text.append(" · ".join(parts), "bold" if not f.is_default else "")
        if f.is_default:
            text.append("  (f to filter, x for flagged only)", self.colours.label)
        self.query_one("#usage-filters", Static).update(text)

    def _draw_summary(self) -> None:
        colours, s = self.colours, self.summary
        self.query_one("#usage-totals", Static).update(totals_text(s.totals, colours))
        self.query_one(SpendChart).show(s.days)
        total = s.totals.amount if s.totals else None
        self.query_one("#usage-providers", SpendBreakdown).show(s.providers, total, colours)
        self.query_one("#usage-agents", SpendBreakdown).show(s.agents, total, colours)

    def on_usage_table_highlighted(self, message: UsageTable.Highlighted) -> None:
        self._show_detail(message.row)

    def _show_detail(self, row: UsageRow | None) -> None:
        detail = self.query_one("#usage-detail", Static)
        if row is None:
            detail.update("")
            return
        colours = self.colours
        provider = inert_line(row.provider or "-", 30)
        if row.domain_type:
            provider += f", {inert_line(row.domain_type, 8)} {domain_label(row.domain_type)}"
        what = Text.assemble(
            (inert_line(row.id, 30), "bold"),
            f" · {iso_instant(row.at)} · ",
            inert_line(row.agent or "-", 30),
            " → ",
            inert_line(row.resource, 40),
            f" ({provider}) · {inert_line(row.chain, 12)} {inert_line(row.protocol, 6)}",
            f" · receipt {short(row.receipt)}",
        )
        if row.request_id is not None:
            decided = f"{row.decision or 'undecided'} by {inert_line(row.decided_by or '-', 30)}"
            request = inert_line(row.request_id, 30)
            ledger = f"request {request} {decided}, ceiling {usdc(row.ceiling)}"
        else:
            ledger = f"idempotency key {inert_line(row.idempotency_key or 'none', 40)}"
        charged = f"charged {usdc(row.amount)} USDC"
        if row.state == Reconciled.ok:
            why = Text.assemble(("covered", colours.good), f": {charged}; {ledger}")
        else:
            why = Text.assemble(
                (f"{state_label(row)}: {row.flag_text}", colours.high), f" · {charged}; {ledger}"
            )
        # One line each, cut at the edge: the reconciliation line must never be pushed out.
        detail.update(Text("\n", no_wrap=True, overflow="ellipsis").join([what, why]))

    # -- the operator's actions -------------------------------------------------------------------

    def _set_filter(self, f: UsageFilter) -> None:
        if f != self.filter:
            self.filter = f
            self._reload()

    def action_move(self, delta: int) -> None:
        self.table.move_cursor(delta)

    def action_page(self, direction: int) -> None:
        self.table.move_cursor(direction * self.table.page)

    def action_first(self) -> None:
        self.table.move_to(0)

    def action_last(self) -> None:
        if self.table.total:
            self.table.move_to(self.table.total - 1)

    def action_refresh(self) -> None:
        self._reload()

    def action_clear_filters(self) -> None:
        self._period = 0
        self._set_filter(UsageFilter())

    def action_toggle_flagged(self) -> None:
        state = None if self.filter.state == "flagged" else "flagged"
        self._set_filter(UsageFilter(**{**self.filter.__dict__, "state": state}))

    def action_next_period(self) -> None:
        self._period = (self._period + 1) % len(PERIODS)
        days = PERIODS[self._period]
        since = None
        if days is not None:
            # Whole days, today included.
            since = (int(self.now() // DAY_S) - days + 1) * DAY_S
        self._set_filter(UsageFilter(**{**self.filter.__dict__, "since": since, "until": None}))

    def action_filters(self) -> None:
        reader = self.summary_reader
        self.run_worker(
            lambda: self._load_choices(reader),
            thread=True,
            group="usage-choices",
            exclusive=True,
            exit_on_error=False,
            name="usage filter choices",
        )

    def _load_choices(self, reader: Reader | None) -> None:
        if reader is None:
            return
        # Its own connection: the summary reader may be busy with a long sum.
        conn = open_reader(self.ledger_path)
        try:
            choices = FilterChoices(
                *(ledger_usage.distinct(conn, column) for column in ledger_usage.FILTER_COLUMNS)
            )
        finally:
            conn.close()
        self.post_message(ChoicesLoaded(choices))

    def on_choices_loaded(self, message: ChoicesLoaded) -> None:
        def chosen(f: object) -> None:
            if isinstance(f, UsageFilter):
                self._period = 0
                self._set_filter(f)

        self.app.push_screen(UsageFilterDialog(self.filter, message.choices, self.now()), chosen)

    def action_export(self) -> None:
        stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime(self.now()))
        count = self.summary.totals.count if self.summary.totals else None
        dialog = UsageExportDialog(
            self.runtime.paths.home / "exports",
            stamp,
            described=describe_range(self.filter),
            count=count,
        )

        def chosen(choice: object) -> None:
            if isinstance(choice, ExportChoice):
                self._export(choice)

        self.app.push_screen(dialog, chosen)

    def _export(self, choice: ExportChoice) -> None:
        f, path = self.filter, choice.path

        def write() -> None:
            # Its own connection: an export of a million rows must not hold up the screen.
            conn = open_reader(self.ledger_path)
            try:
                count = export_file(conn, f, choice.fmt, path)
            finally:
                conn.close()
            self.post_message(ExportFinished(path, count))

        self.notify(f"Exporting to {inert_line(path, 80)}…", markup=False)
        self.run_worker(
            write, thread=True, group="usage-export", exit_on_error=False, name="export"
        )

    def on_export_finished(self, message: ExportFinished) -> None:
        self.notify(
            f"Exported {message.count:,} charges to {inert_line(message.path, 100)}",
            title="Usage exported",
            markup=False,
        )

    def action_sync(self) -> None:
        async def sync() -> None:
            self.post_message(Synced(await self.runtime.sync_usage()))

        self.notify("Fetching the usage history…", markup=False)
        self.run_worker(
            sync(), group="usage-sync", exclusive=True, exit_on_error=False, name="sync"
        )

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """A failed query, export or sync becomes one notification (the screen stays usable)."""
        if event.state != WorkerState.ERROR:
            return
        error = event.worker.error
        log.error("%s failed", event.worker.name, exc_info=error)
        self.notify(
            f"{event.worker.name} failed: {type(error).__name__}: {inert_line(error, 200)}",
            title="Usage",
            severity="error",
            markup=False,
        )

    def on_synced(self, message: Synced) -> None:
        r = message.result
        text = f"{r.inserted:,} new, {r.updated:,} updated, {r.unchanged:,} unchanged"
        if r.flagged:
            text += f"; {r.flagged:,} flagged"
        self.notify(
            text,
            title="Usage synced",
            severity="warning" if r.flagged else "information",
            markup=False,
        )
        self._reload()
