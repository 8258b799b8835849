"""The usage screen, for finance: the service's usage history joined with the ledger's decisions,
under filters, with totals, spend per day, the providers and agents that spent most, the charges
no approval covers flagged in red, and export to CSV or JSON.

It stays fast with a million charges because nothing here loads them: the table asks SQLite for
the rows on screen (`usage/table.py`), and the totals, the chart and the breakdowns are sums
SQLite computes from its indexes (`ledger/usage_query.py`). Every query runs in a thread worker on a
read-only connection of its own and posts a message; the screen applies it. A change of filter
bumps a generation number, so an answer to an older question is dropped, and interrupts the summary
query still running.

The screen reads through a `UsageSource` (`usage/source.py`): the runtime of the console running
the broker, or what a console attached to it can read. There the sync and the background follower
stay with the broker's console, and `s` says so rather than fetching.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.screen import Screen
from textual.widgets import Static
from textual.worker import Worker, WorkerState, get_current_worker

from svc_console.core.sanitize import inert_line
from svc_console.core.taxonomy import domain_label
from svc_console.core.usage import DAY_S, UsageFilter
from svc_console.core.wording import plural
from svc_console.ledger import usage_query as ledger_usage
from svc_console.ledger.readers import Interrupted, Reader, open_reader
from svc_console.ledger.usage_query import UsageRow
from svc_console.ledger.usage_write import SyncResult
from svc_console.services.usage_export import describe_range, export_file
from svc_console.tui import bindings
from svc_console.tui.bindings import Command
from svc_console.tui.colors import Palette, palette
from svc_console.tui.navigation import register_screen
from svc_console.tui.usage.detail import detail_text
from svc_console.tui.usage.dialogs import (
    ExportChoice,
    FilterChoices,
    UsageExportDialog,
    UsageFilterDialog,
)
from svc_console.tui.usage.messages import (
    BackgroundSynced,
    ChoicesLoaded,
    ExportFinished,
    Summary,
    SummaryLoaded,
    Synced,
)
from svc_console.tui.usage.provider_names import ProviderNames
from svc_console.tui.usage.source import SYNCED_ELSEWHERE, UsageSource, usage_source
from svc_console.tui.usage.summary import SpendBreakdown, SpendChart, totals_text
from svc_console.tui.usage.sync_status import SyncStatus, sync_text
from svc_console.tui.usage.table import UsageTable
from svc_console.tui.widgets.banner import service_banner
from svc_console.tui.widgets.chrome import ConsoleFooter, heading

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
    _command("flagged", "x", "toggle_flagged", "Flagged", "Only flagged charges"),
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
    #usage-status { height: 1; }
    #usage-totals { width: 1fr; height: 1; padding: 0 1; }
    #usage-synced { width: auto; height: 1; padding: 0 1; }
    #usage-summary { height: 9; border-bottom: hkey $panel-lighten-2; }
    UsageScreen.-short #usage-summary { height: 5; }
    UsageScreen.-narrow SpendBreakdown { width: 24; }
    #usage-table { height: 1fr; }
    #usage-detail {
        height: 2; padding: 0 1; background: $surface; text-wrap: nowrap; text-overflow: ellipsis;
    }
    """

    def __init__(self, runtime: Any) -> None:
        """`runtime`: the console's started `Runtime`, or an attached console (`usage_source`)."""
        super().__init__(id="usage")
        self.source: UsageSource = usage_source(runtime)
        self.ledger_path = self.source.ledger_path
        self.ledger_url = self.source.ledger_url
        self.filter = UsageFilter()
        self.summary = Summary()
        self.generation = 0
        self.table_reader: Reader | None = None
        self.summary_reader: Reader | None = None
        self._period = 0
        self.names = ProviderNames(self.ledger_path if self.ledger_url else None)  # the table's too
        self.sync_status = SyncStatus.of(self.source.follower)
        if self.source.synced_elsewhere:
            self.sync_status = SyncStatus(elsewhere=True)  # the time is read from the ledger
        self._follower_seen = self.sync_status  # what the follower last said, as last read

    def now(self) -> float:
        return self.source.now()

    @property
    def colours(self) -> Palette:
        return palette(self.app)

    @property
    def table(self) -> UsageTable:
        return self.query_one(UsageTable)

    # -- layout -----------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        banner = service_banner(self.source.market, self.source.agent_warning)
        if banner is not None:
            yield banner
        yield from heading()
        yield Static("", id="usage-filters", markup=False)
        with Horizontal(id="usage-status"):
            yield Static("", id="usage-totals", markup=False)
            yield Static("", id="usage-synced", markup=False)
        with Horizontal(id="usage-summary"):
            yield SpendChart(id="usage-chart")
            yield SpendBreakdown("per provider", id="usage-providers")
            yield SpendBreakdown("per agent", id="usage-agents")
        # The rows and the sums are asked for now, before anything is mounted: the queries run
        # while Textual styles and lays out the screen, so its first frame already shows rows.
        self.table_reader = Reader.open(self.ledger_path, self.ledger_url)
        self.summary_reader = Reader.open(self.ledger_path, self.ledger_url)
        table = UsageTable(id="usage-table")
        table.attach(self.table_reader)
        table.names = self.names
        self._query(table, summary=False)
        yield table
        yield Static("", id="usage-detail", markup=False)
        yield ConsoleFooter()

    def on_mount(self) -> None:
        self.app.theme_changed_signal.subscribe(self, lambda _theme: self._redraw())
        self._redraw()
        if self.source.follower is not None:
            self.source.follower.listeners.append(self._background_synced)
            self._read_follower()  # a sync that ended since the screen was made told no one
        # The sums of a million rows keep a core busy for a while: started once the first frame
        # (with its rows) is out, they never hold it up.
        self.call_after_refresh(self._start_summary)

    def on_unmount(self) -> None:
        follower = self.source.follower
        if follower is not None and self._background_synced in follower.listeners:
            follower.listeners.remove(self._background_synced)
        for reader in (self.table_reader, self.summary_reader):
            if reader is not None:
                reader.close()

    # -- loading ------------------------------------------------------------------------------

    def _reload(self) -> None:
        """Show the current filter: the table starts over, the summary is computed again."""
        self.names.forget_unknown()
        self._query(self.table)
        self._redraw()

    def _redraw(self) -> None:
        self._draw_filters()
        self._draw_sync()
        self._draw_summary()
        self._show_detail(self.table.selected)

    def _query(self, table: UsageTable, *, summary: bool = True) -> None:
        """Ask for the rows and the summary of the current filter, forgetting older answers."""
        self.generation += 1
        self.summary = Summary()
        empty = "No charges match these filters: c clears them."
        if self.filter.is_default:
            empty = (
                "No usage synced yet: the broker's console fetches it from the service."
                if self.source.synced_elsewhere
                else "No usage synced yet: press s to fetch it from the service."
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
        if self.source.synced_elsewhere:  # when the broker's console last stored a sync
            parts += (("synced", self.source.last_synced),)
        with reader.lock:
            for part, query in parts:
                if worker.is_cancelled or reader.closed:
                    return
                try:
                    value = query(reader.conn)
                    if part == "providers":
                        self.names.learn(reader.conn, (b.key for b in value))
                except Interrupted:
                    if worker.is_cancelled or reader.closed:
                        return  # interrupted: a newer filter or the screen closing
                    raise
                self.post_message(SummaryLoaded(generation, part, value))

    def on_summary_loaded(self, message: SummaryLoaded) -> None:
        if message.generation != self.generation:
            return
        if message.part == "synced":
            self.sync_status = SyncStatus(message.value, elsewhere=True)
            self._draw_sync()
            return
        self.summary = Summary(**{**self.summary.__dict__, message.part: message.value})
        self._draw_summary()

    # -- drawing ----------------------------------------------------------------------------------

    def _draw_filters(self) -> None:
        f = self.filter
        parts = [describe_range(f)]
        for name, value in (
            ("agent", f.agent),
            ("provider", self.names.shown(f.provider) if f.provider else None),
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
        providers = self.query_one("#usage-providers", SpendBreakdown)
        providers.show(s.providers, total, colours, name=self.names.shown)
        self.query_one("#usage-agents", SpendBreakdown).show(s.agents, total, colours)

    def _draw_sync(self) -> None:
        short = self.app.size.width < self.HORIZONTAL_BREAKPOINTS[1][0]
        text = sync_text(self.sync_status, self.now(), self.colours, short=short)
        self.query_one("#usage-synced", Static).update(text)

    def on_resize(self) -> None:
        if self.sync_status.elsewhere:
            self._draw_sync()  # its long form only where it leaves room for the totals

    def on_usage_table_highlighted(self, message: UsageTable.Highlighted) -> None:
        self._show_detail(message.row)

    def _show_detail(self, row: UsageRow | None) -> None:
        detail = self.query_one("#usage-detail", Static)
        if row is None:
            detail.update("")
            return
        detail.update(detail_text(row, self.colours, self.names.get(row.provider)))

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
        conn = open_reader(self.ledger_path, self.ledger_url)
        try:
            choices = FilterChoices(
                *(ledger_usage.distinct(conn, column) for column in ledger_usage.FILTER_COLUMNS)
            )
            self.names.learn(conn, choices.providers)
        finally:
            conn.close()
        self.post_message(ChoicesLoaded(choices))

    def on_choices_loaded(self, message: ChoicesLoaded) -> None:
        def chosen(f: object) -> None:
            if isinstance(f, UsageFilter):
                self._period = 0
                self._set_filter(f)

        dialog = UsageFilterDialog(
            self.filter, message.choices, self.now(), provider_name=self.names.shown
        )
        self.app.push_screen(dialog, chosen)

    def action_export(self) -> None:
        stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime(self.now()))
        count = self.summary.totals.count if self.summary.totals else None
        dialog = UsageExportDialog(
            self.source.exports,
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
            conn = open_reader(self.ledger_path, self.ledger_url)
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
            f"Exported {plural(message.count, 'charge')} to {inert_line(message.path, 100)}",
            title="Usage exported",
            markup=False,
        )

    def action_sync(self) -> None:
        if self.source.synced_elsewhere:
            self.notify(SYNCED_ELSEWHERE, title="Usage synced elsewhere", markup=False)
            return

        async def sync() -> None:
            self.post_message(Synced(await self.source.sync()))

        self.notify("Fetching the usage history…", markup=False)
        self.run_worker(
            sync(), group="usage-sync", exclusive=True, exit_on_error=False, name="sync"
        )

    def _background_synced(self) -> None:
        """The follower's listener: it may run outside the app's message loop, so it only posts."""
        self.post_message(BackgroundSynced())

    def on_background_synced(self, _message: BackgroundSynced) -> None:
        result = getattr(self.source.follower, "last_result", None)
        self._read_follower()
        if isinstance(result, SyncResult) and (result.inserted or result.conflicts):
            self._reload()  # something new was stored; a sync that stored nothing changes no row

    def _read_follower(self) -> None:
        """Show the follower's news, if it has any since it was last read (a sync on `s` may be
        newer than what the follower last said, and is not overwritten by it)."""
        seen = SyncStatus.of(self.source.follower)
        if seen != self._follower_seen:
            self._follower_seen = self.sync_status = seen
            self._draw_sync()

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """A failed query, export or sync becomes one notification (the screen stays usable)."""
        if event.state != WorkerState.ERROR:
            return
        error = event.worker.error
        log.error("%s failed", event.worker.name, exc_info=error)
        if event.worker.group == "usage-sync":
            self.sync_status = self.sync_status.failed(f"{type(error).__name__}: {error}")
            self._draw_sync()
        self.notify(
            f"{event.worker.name} failed: {type(error).__name__}: {inert_line(error, 200)}",
            title="Usage",
            severity="error",
            markup=False,
        )

    def on_synced(self, message: Synced) -> None:
        r = message.result
        self.sync_status = self.sync_status.succeeded(self.now())
        text = f"{r.inserted:,} new, {r.unchanged:,} unchanged"
        if r.conflicts:
            text += f"; {r.conflicts:,} differing from a charge held (both kept)"
        if r.flagged:
            text += f"; {r.flagged:,} flagged"
        self.notify(
            text,
            title="Usage synced",
            severity="warning" if r.flagged else "information",
            markup=False,
        )
        self._reload()
