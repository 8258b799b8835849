"""The catalogue screen: the market's APIs and its datasets side by side in two tabs, searched as
the operator types, with every filter of `list_market_apis` and of `list_datasets` /
`search_datasets`; the selected endpoint's record and skill.md, or the selected dataset's listing,
free trial (coverage of the fields needed, preview rows) and datacard.

Searches never go to the network: they read the ledger's catalogue cache
(`ledger/catalogue_cache.py`), which answers one keystroke over the whole catalogue in a few
milliseconds with the service's own semantics, and returns one page of matches and the total.
Each search runs in a thread worker on a read-only connection and posts `MatchesFound`; a
generation number per tab drops answers to an older keystroke. The cache is filled by a sync
(`catalogue_sync.py`) started on the first visit (empty or day-old cache) and by `r`; its
progress and failures are messages too, and a failed sync keeps the previous cache on screen.

What the selected item needs from the network (skill.md over REST, `try_dataset` over MCP) is
fetched shortly after the cursor settles, in an async worker, and kept for the session.

There is deliberately no key to buy or call anything from here: agents submit spend requests,
the operator decides them on the approvals screen.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import DataTable, Footer, Header, Input, Static, TabbedContent, TabPane
from textual.worker import get_current_worker

from svc_console.core.catalogue_filters import SORT_LABELS, DatasetFilter, MarketFilter
from svc_console.core.datasets import DatasetListing, TrialResult
from svc_console.core.models import EndpointRecord
from svc_console.core.sanitize import inert_line
from svc_console.ledger import catalogue_cache
from svc_console.ledger.catalogue_cache import Matches, SyncState
from svc_console.market.errors import MarketError
from svc_console.market.mcp import McpClient
from svc_console.runtime import Runtime
from svc_console.services.catalogue_details import mcp_for, skill, try_dataset
from svc_console.services.catalogue_sync import SyncProgress, SyncReport, sync_runtime
from svc_console.tui import bindings, present
from svc_console.tui.bindings import Command
from svc_console.tui.catalogue.detail import DatasetDetail, EndpointDetail
from svc_console.tui.catalogue.dialogs import (
    DatasetFilterDialog,
    MarketFilterDialog,
    TrialFieldsDialog,
)
from svc_console.tui.catalogue.tables import (
    PAGE_SIZE,
    CatalogueTable,
    DatasetTable,
    EndpointTable,
)
from svc_console.tui.colors import Palette, palette
from svc_console.tui.navigation import register_screen
from svc_console.tui.widgets.banner import SandboxBanner

log = logging.getLogger(__name__)

MARKET, DATASETS = "market", "datasets"
KINDS = (MARKET, DATASETS)
# How long the cursor rests on an item before its skill.md or trial is fetched.
DETAIL_DELAY_S = 0.3
DETAILS_KEPT = 32
STALE_S = 24 * 3600  # a cache older than this is refreshed when the screen opens
SYNC_LINE_EVERY_S = 30.0
PROGRESS_EVERY_S = 0.2


def _command(
    id: str,
    keys: str,
    action: str,
    description: str,
    help: str,
    *,
    show: bool = True,
    palette: bool = True,
) -> Command:
    return Command(f"catalogue.{id}", keys, action, description, help, show=show, palette=palette)


def _sort(order: str) -> Command:
    return _command(
        f"sort_{order}",
        "",
        f"sort('{order}')",
        f"Datasets: {SORT_LABELS[order]}",
        f"List the datasets {SORT_LABELS[order]}",
    )


COMMANDS = (
    _command("market", "m", "show_tab('market')", "APIs", "Show the market APIs", show=False),
    _command("datasets", "d", "show_tab('datasets')", "Datasets", "Show the datasets", show=False),
    _command(
        "search", "slash", "focus_search", "Search", "Search as you type: every word must appear"
    ),
    _command("filters", "f", "filters", "Filters", "Every filter of the tab in front"),
    _command(
        "clear",
        "c",
        "clear_all",
        "Clear",
        "Clear the search and every filter of the tab",
        show=False,
    ),
    _command("verified", "v", "toggle_verified", "Verified", "APIs: verified providers only"),
    _command("sort", "s", "next_sort", "Sort", "Datasets: newest, downloads, cheapest, dearest"),
    _command("fields", "t", "trial_fields", "Fields", "Datasets: the fields the trial checks"),
    _command("zoom", "z", "zoom", "Zoom", "The selected item's detail on the whole screen"),
    _command("refresh", "r", "refresh", "Refresh", "Fetch the catalogue from the service again"),
    _command(
        "back",
        "escape",
        "back",
        "Back",
        "Leave the zoomed detail or the search box; clear the search",
        show=False,
        palette=False,
    ),
    _command(
        "next_page", "right_square_bracket", "page(1)", "Next page", "Next matches", show=False
    ),
    _command(
        "previous_page",
        "left_square_bracket",
        "page(-1)",
        "Previous page",
        "Previous matches",
        show=False,
    ),
    _command("down", "j", "move(1)", "Next", "Select the next item", show=False, palette=False),
    _command(
        "up", "k", "move(-1)", "Previous", "Select the previous item", show=False, palette=False
    ),
    *(_sort(order) for order in SORT_LABELS),
)


# -- messages from the workers --------------------------------------------------------------------


class MatchesFound(Message):
    def __init__(self, kind: str, generation: int, matches: Matches[Any]) -> None:
        super().__init__()
        self.kind, self.generation, self.matches = kind, generation, matches


class RecordLoaded(Message):
    """The full cached record of the selected item (None: gone from the cache)."""

    def __init__(self, kind: str, item_id: str, record: Any) -> None:
        super().__init__()
        self.kind, self.item_id, self.record = kind, item_id, record


class CacheRead(Message):
    """The cache's sync state and the dataset categories it holds."""

    def __init__(self, state: SyncState, categories: list[str]) -> None:
        super().__init__()
        self.state, self.categories = state, categories


class SkillLoaded(Message):
    def __init__(self, endpoint_id: str, text: str | None, error: str | None) -> None:
        super().__init__()
        self.endpoint_id, self.text, self.error = endpoint_id, text, error


class TrialLoaded(Message):
    def __init__(
        self,
        dataset_id: str,
        fields: tuple[str, ...],
        trial: TrialResult | None,
        error: str | None,
    ) -> None:
        super().__init__()
        self.dataset_id, self.fields, self.trial, self.error = dataset_id, fields, trial, error


class SyncProgressed(Message):
    def __init__(self, progress: SyncProgress) -> None:
        super().__init__()
        self.progress = progress


class SyncEnded(Message):
    """A sync finished (`report`) or failed (`error`: a code word and one line)."""

    def __init__(self, report: SyncReport | None, error: tuple[str, str] | None) -> None:
        super().__init__()
        self.report, self.error = report, error


# -- the screen's state ---------------------------------------------------------------------------


class _Reader:
    """One read-only connection to the ledger, used by one worker thread at a time."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.lock = threading.Lock()
        self.closed = False

    def close(self) -> None:
        self.closed = True
        self.conn.interrupt()
        with self.lock:
            self.conn.close()


@dataclass
class _Tab:
    """What one tab shows: its filter, the window of matches, the selected item."""

    filter: Any
    offset: int = 0
    generation: int = 0
    matches: Matches[Any] | None = None
    selected: str | None = None


def _failure(exc: BaseException) -> tuple[str, str]:
    """What went wrong with the network: a code word and one line (from untrusted text)."""
    if isinstance(exc, MarketError):
        return inert_line(exc.code, 40), inert_line(exc.message, 160)
    return "UNEXPECTED", f"{type(exc).__name__}; see the log"


def _said(failure: tuple[str, str]) -> str:
    code, message = failure
    return f"{message} ({code})"


@register_screen("catalogue", title="Catalogue", key="2", order=2)
class CatalogueScreen(Screen[None]):
    """Market APIs and datasets: `/` searches, `f` filters, `r` syncs, `z` zooms the detail."""

    BINDINGS = bindings.define("catalogue", COMMANDS)
    SUB_TITLE = "catalogue"
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (110, "-wide")]
    DEFAULT_CSS = """
    CatalogueScreen Header { dock: none; }
    #catalogue-sync {
        height: 1; padding: 0 1; background: $panel; text-wrap: nowrap; text-overflow: ellipsis;
    }
    #catalogue-tabs { height: 1fr; }
    #catalogue-tabs TabPane { padding: 0; height: 1fr; }
    CatalogueScreen .catalogue-search { margin: 0 1; width: 1fr; }
    CatalogueScreen .catalogue-filters {
        height: 1; padding: 0 1; color: $text-muted; text-wrap: nowrap; text-overflow: ellipsis;
    }
    CatalogueScreen .catalogue-body { height: 1fr; }
    CatalogueScreen .catalogue-body > DataTable { width: 1fr; height: 100%; }
    CatalogueScreen .catalogue-detail {
        width: 45%; min-width: 44; height: 100%; padding: 0 1;
        border-left: vkey $panel-lighten-2; background: $surface;
    }
    CatalogueScreen .catalogue-empty {
        display: none; width: 1fr; height: 100%; content-align: center middle;
        color: $text-muted;
    }
    CatalogueScreen .-empty > .catalogue-body > DataTable { display: none; }
    CatalogueScreen .-empty > .catalogue-body > .catalogue-empty { display: block; }
    CatalogueScreen .-empty > .catalogue-body > .catalogue-detail { display: none; }
    CatalogueScreen.-narrow .catalogue-body { layout: vertical; }
    CatalogueScreen.-narrow .catalogue-body > DataTable { width: 100%; height: 8; }
    CatalogueScreen.-narrow .catalogue-detail {
        width: 100%; height: 1fr; border-left: none; border-top: hkey $panel-lighten-2;
    }
    CatalogueScreen.-zoomed .catalogue-body > DataTable { display: none; }
    CatalogueScreen.-zoomed .catalogue-detail { width: 100%; height: 100%; border: none; }
    """

    def __init__(self, runtime: Runtime) -> None:
        super().__init__(id="catalogue")
        assert runtime.ledger is not None, "the catalogue screen needs a started runtime"
        self.runtime = runtime
        self.ledger_path = runtime.ledger.path
        self.tabs: dict[str, _Tab] = {MARKET: _Tab(MarketFilter()), DATASETS: _Tab(DatasetFilter())}
        self.active = MARKET
        self.reader: _Reader | None = None
        self.state = SyncState(None, 0, 0, 0, 0)
        self.categories: list[str] = []
        self.syncing = False
        self.progress: SyncProgress | None = None
        self.sync_error: tuple[str, str] | None = None  # (code, message)
        # The fields a trial checks; None: the required fields of the dataset filter.
        self.trial_fields: tuple[str, ...] | None = None
        self.skills: OrderedDict[str, str] = OrderedDict()
        self.trials: OrderedDict[tuple[str, tuple[str, ...]], TrialResult] = OrderedDict()
        self.records: dict[str, Any] = {}
        self._detail_timers: dict[str, Timer] = {}
        self._mcp: McpClient | None = None
        self._first_read = True

    # -- helpers ----------------------------------------------------------------------------------

    def now(self) -> float:
        broker = self.runtime.broker
        return broker.clock() if broker is not None else time.time()

    @property
    def colours(self) -> Palette:
        return palette(self.app)

    def table(self, kind: str) -> CatalogueTable[Any]:
        return self.query_one(f"#{kind}-list", CatalogueTable)

    @property
    def endpoint_detail(self) -> EndpointDetail:
        return self.query_one(EndpointDetail)

    @property
    def dataset_detail(self) -> DatasetDetail:
        return self.query_one(DatasetDetail)

    @property
    def fields_to_check(self) -> tuple[str, ...]:
        if self.trial_fields is not None:
            return self.trial_fields
        return tuple(self.tabs[DATASETS].filter.required_fields)

    # -- layout -----------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        market = self.runtime.market
        if market is not None and market.sandbox:
            yield SandboxBanner(market.base_url, id="sandbox-banner")
        yield Header(show_clock=False, icon="$")
        yield Static("", id="catalogue-sync", markup=False)
        with TabbedContent(initial=MARKET, id="catalogue-tabs"):
            with TabPane("Market APIs (m)", id=MARKET):
                yield from self._pane(
                    MARKET,
                    "search APIs: words in a name, description or tags",
                    EndpointTable(id="market-list"),
                    EndpointDetail(id="market-detail", classes="catalogue-detail"),
                )
            with TabPane("Datasets (d)", id=DATASETS):
                yield from self._pane(
                    DATASETS,
                    "search datasets: words in a title, description or tags",
                    DatasetTable(id="datasets-list"),
                    DatasetDetail(id="datasets-detail", classes="catalogue-detail"),
                )
        yield Footer()

    def _pane(self, kind: str, placeholder: str, table: Any, detail: Any) -> ComposeResult:
        with Vertical(id=f"{kind}-pane"):
            yield Input(
                placeholder=f"/ {placeholder}",
                compact=True,
                max_length=500,
                id=f"{kind}-search",
                classes="catalogue-search",
            )
            yield Static("", id=f"{kind}-filters", classes="catalogue-filters", markup=False)
            with Horizontal(classes="catalogue-body"):
                yield table
                yield Static("", id=f"{kind}-empty", classes="catalogue-empty", markup=False)
                yield detail

    def on_mount(self) -> None:
        self.reader = _Reader(catalogue_cache.open_reader(self.ledger_path))
        blink = getattr(self.app, "cursor_blink", True)
        for field in self.query(Input):
            field.cursor_blink = blink
        self.app.theme_changed_signal.subscribe(self, lambda _theme: self._redraw())
        self.set_interval(SYNC_LINE_EVERY_S, self._draw_sync_line, name="catalogue-sync-line")
        self._draw_sync_line()
        for kind in KINDS:
            self._draw_filters(kind)
            self._search(kind)
        self._read_cache()
        self.table(MARKET).focus()

    async def on_unmount(self) -> None:
        if self.reader is not None:
            self.reader.close()
            self.reader = None
        if self._mcp is not None:
            await self._mcp.aclose()
            self._mcp = None

    # -- reading the cache (thread workers) -------------------------------------------------------

    def _in_thread(self, name: str, group: str, work: Callable[[sqlite3.Connection], None]) -> None:
        reader = self.reader

        def run() -> None:
            if reader is None or reader.closed or get_current_worker().is_cancelled:
                return  # a newer keystroke asked again before this one started
            with reader.lock:
                if not reader.closed:
                    work(reader.conn)

        self.run_worker(
            run, thread=True, group=group, exclusive=True, exit_on_error=False, name=name
        )

    def _read_cache(self) -> None:
        def read(conn: sqlite3.Connection) -> None:
            self.post_message(
                CacheRead(catalogue_cache.sync_state(conn), catalogue_cache.categories(conn))
            )

        self._in_thread("catalogue state", "catalogue-state", read)

    def on_cache_read(self, message: CacheRead) -> None:
        self.state, self.categories = message.state, message.categories
        self._draw_sync_line()
        if self._first_read:
            self._first_read = False
            stale = self.state.synced_at is not None and self.now() - self.state.synced_at > STALE_S
            if self.state.empty or stale:
                self._start_sync()

    def _search(self, kind: str) -> None:
        """Ask the cache for the tab's window of matches; the answer comes as `MatchesFound`."""
        tab = self.tabs[kind]
        tab.generation += 1
        generation, f, offset = tab.generation, tab.filter, tab.offset
        find = (
            catalogue_cache.search_endpoints if kind == MARKET else catalogue_cache.search_datasets
        )

        def search(conn: sqlite3.Connection) -> None:
            matches = find(conn, f, limit=PAGE_SIZE, offset=offset)
            self.post_message(MatchesFound(kind, generation, matches))

        self._in_thread(f"{kind} search", f"catalogue-search-{kind}", search)

    def on_matches_found(self, message: MatchesFound) -> None:
        tab = self.tabs[message.kind]
        if message.generation != tab.generation:
            return  # an answer to an older keystroke
        tab.matches = message.matches
        self._show_matches(message.kind)

    def _show_matches(self, kind: str) -> None:
        tab = self.tabs[kind]
        matches = tab.matches
        if matches is None:
            return
        table = self.table(kind)
        table.show(matches.rows, self.colours, keep=tab.selected)
        self._draw_filters(kind)
        empty = not matches.rows
        self.query_one(f"#{kind}-pane").set_class(empty, "-empty")
        if empty:
            self.query_one(f"#{kind}-empty", Static).update(self._empty_text(kind))
        self._select(kind, table.selected_id)

    def _empty_text(self, kind: str) -> Text:
        tab = self.tabs[kind]
        if self.state.empty:
            if self.syncing:
                text = "The catalogue is being fetched from the service…"
            elif self.sync_error:
                text = (
                    "No catalogue cached yet, and the service could not be reached.\nr tries again."
                )
            else:
                text = "No catalogue cached yet.\nr fetches it from the service."
        elif tab.filter.query or tab.filter.has_filters:
            what = "API" if kind == MARKET else "dataset"
            text = f"No {what} matches.\nescape clears the search, c clears the filters."
        else:
            text = "The service lists none."
        return Text(text, justify="center")

    def _redraw(self) -> None:
        for kind in KINDS:
            self._show_matches(kind)
        self._draw_sync_line()
        self._show_detail(self.active)

    # -- drawing ----------------------------------------------------------------------------------

    def _draw_sync_line(self) -> None:
        """One line, the essentials first (a long error is cut at the edge, not wrapped away)."""
        colours, s = self.colours, self.state
        line = Text(no_wrap=True, overflow="ellipsis")
        if self.syncing:
            p = self.progress
            line.append("Syncing the catalogue from the service… ", style="bold")
            if p is not None and p.stage == "storing":
                line.append("storing it")
            elif p is not None:
                of = f" of {p.total:,}" if p.total is not None else ""
                line.append(f"{p.stage} {p.fetched:,}{of}")
            if s.synced_at is not None:
                line.append(" · showing the cache meanwhile", style=colours.label)
        elif self.sync_error:
            code, message = self.sync_error
            line.append(f"Sync failed ({code})", style=colours.high)
            if s.synced_at is not None:
                line.append(" · showing the cache of ", style=colours.label)
                line.append(self._when(s.synced_at))
            else:
                line.append(" · nothing cached yet", style=colours.label)
            line.append(" · r retries · ", style=colours.label)
            line.append(message)
        elif s.synced_at is not None:
            line.append("synced ", style=colours.label)
            line.append(self._when(s.synced_at))
            line.append(f" · {s.endpoints:,} APIs · {s.datasets:,} datasets", style=colours.label)
            if not s.complete:
                line.append(
                    f" (the service reports {s.endpoints_reported:,} and {s.datasets_reported:,})",
                    style=colours.warn,
                )
            line.append(" · r refreshes", style=colours.label)
        else:
            line.append("Never synced: ", style=colours.warn)
            line.append("r fetches the catalogue from the service.")
        self.query_one("#catalogue-sync", Static).update(line)

    def _when(self, at: float) -> str:
        when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(at))
        age = self.now() - at
        return f"{when} ({present.duration(age)} ago)" if age >= 60 else f"{when} (now)"

    def _draw_filters(self, kind: str) -> None:
        colours, tab = self.colours, self.tabs[kind]
        parts = tab.filter.describe()
        text = Text("filters ", style=colours.label)
        if parts:
            text.append(inert_line(" · ".join(parts), 200), style="bold")
        else:
            text.append("none (f)", style=colours.label)
        if kind == DATASETS:
            text.append(" · ", style=colours.label)
            text.append(SORT_LABELS[tab.filter.sort_by])
        m = tab.matches
        if m is not None and m.total:
            last = m.offset + len(m.rows)
            text.append(" · ", style=colours.label)
            text.append(f"{m.offset + 1:,}\N{EN DASH}{last:,} of {m.total:,}", style="bold")
            if m.total > last or m.offset:
                text.append(" ([ ] pages)", style=colours.label)
        elif m is not None and not self.state.empty:
            text.append(" · no match", style=colours.warn)
        self.query_one(f"#{kind}-filters", Static).update(text)

    # -- the selected item ------------------------------------------------------------------------

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        event.stop()
        table = event.data_table
        if isinstance(table, CatalogueTable):
            kind = MARKET if isinstance(table, EndpointTable) else DATASETS
            self._select(kind, table.selected_id)

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        if not self.has_class("-zoomed"):
            self.action_zoom()

    def _select(self, kind: str, item_id: str | None) -> None:
        tab = self.tabs[kind]
        if item_id == tab.selected and (item_id is None or item_id in self.records):
            return
        if (item_id is None) != (tab.selected is None):
            self.refresh_bindings()  # `t` needs a selected dataset
        tab.selected = item_id
        if item_id is None:
            (self.endpoint_detail if kind == MARKET else self.dataset_detail).clear()
            return
        if item_id in self.records:
            self._show_detail(kind)
            return
        read = (
            catalogue_cache.endpoint_record if kind == MARKET else catalogue_cache.dataset_listing
        )

        def load(conn: sqlite3.Connection) -> None:
            self.post_message(RecordLoaded(kind, item_id, read(conn, item_id)))

        self._in_thread(f"{kind} record", f"catalogue-record-{kind}", load)

    def on_record_loaded(self, message: RecordLoaded) -> None:
        if message.record is not None:
            self.records[message.item_id] = message.record
        if self.tabs[message.kind].selected == message.item_id:
            self._show_detail(message.kind)

    def _show_detail(self, kind: str) -> None:
        """The selected item's record at once, and what the network adds when it has it."""
        colours = self.colours
        item_id = self.tabs[kind].selected
        record = self.records.get(item_id) if item_id else None
        if kind == MARKET:
            detail = self.endpoint_detail
            detail.show_record(record if isinstance(record, EndpointRecord) else None, colours)
            if record is None:
                return
            text = self.skills.get(record.id)
            if text is not None:
                detail.show_skill(text, colours)
            else:
                detail.show_skill_status("loading…", colours)
                self._fetch_later(kind, record.id)
        else:
            dataset = self.dataset_detail
            listing = record if isinstance(record, DatasetListing) else None
            dataset.show_listing(listing, colours)
            if listing is None:
                return
            trial = self.trials.get((listing.id, self.fields_to_check))
            if trial is not None:
                dataset.show_trial(trial, colours)
            else:
                dataset.show_trial_status("loading…", colours)
                self._fetch_later(kind, listing.id)

    def _fetch_later(self, kind: str, item_id: str) -> None:
        """Fetch once the cursor rests: scrolling through a list costs no request per row. Only
        for the tab in front; the other tab fetches when it is shown."""
        timer = self._detail_timers.pop(kind, None)
        if timer is not None:
            timer.stop()
        if kind != self.active:
            return

        def fetch() -> None:
            self._detail_timers.pop(kind, None)
            if self.tabs[kind].selected != item_id or kind != self.active:
                return
            if kind == MARKET:
                self._fetch_skill(item_id)
            else:
                self._fetch_trial(item_id, self.fields_to_check)

        self._detail_timers[kind] = self.set_timer(
            DETAIL_DELAY_S, fetch, name=f"catalogue-{kind}-detail"
        )

    def _fetch_skill(self, endpoint_id: str) -> None:
        market = self.runtime.market
        if market is None:
            return
        rest = market.rest

        async def fetch() -> None:
            try:
                text = await skill(rest, endpoint_id)
            except Exception as exc:
                if not isinstance(exc, MarketError):
                    log.exception("skill.md of %s", endpoint_id)
                self.post_message(SkillLoaded(endpoint_id, None, _said(_failure(exc))))
                return
            self.post_message(SkillLoaded(endpoint_id, text, None))

        self.run_worker(
            fetch(), group="catalogue-skill", exclusive=True, exit_on_error=False, name="skill.md"
        )

    def on_skill_loaded(self, message: SkillLoaded) -> None:
        if message.text is not None:
            self.skills[message.endpoint_id] = message.text
            while len(self.skills) > DETAILS_KEPT:
                self.skills.popitem(last=False)
        if self.tabs[MARKET].selected != message.endpoint_id:
            return
        if message.text is not None:
            self.endpoint_detail.show_skill(message.text, self.colours)
        else:
            status = f"could not be fetched: {message.error}"
            self.endpoint_detail.show_skill_status(status, self.colours, error=True)

    def _fetch_trial(self, dataset_id: str, fields: tuple[str, ...]) -> None:
        if self._mcp is None:
            self._mcp = mcp_for(self.runtime)
        mcp = self._mcp

        async def fetch() -> None:
            try:
                trial = await try_dataset(mcp, dataset_id, fields)
            except Exception as exc:
                if not isinstance(exc, MarketError):
                    log.exception("try_dataset of %s", dataset_id)
                self.post_message(TrialLoaded(dataset_id, fields, None, _said(_failure(exc))))
                return
            self.post_message(TrialLoaded(dataset_id, fields, trial, None))

        self.run_worker(
            fetch(), group="catalogue-trial", exclusive=True, exit_on_error=False, name="trial"
        )

    def on_trial_loaded(self, message: TrialLoaded) -> None:
        if message.trial is not None:
            self.trials[(message.dataset_id, message.fields)] = message.trial
            while len(self.trials) > DETAILS_KEPT:
                self.trials.popitem(last=False)
        selected = self.tabs[DATASETS].selected
        if selected != message.dataset_id or message.fields != self.fields_to_check:
            return
        if message.trial is not None:
            self.dataset_detail.show_trial(message.trial, self.colours)
        else:
            status = f"could not be fetched: {message.error}"
            self.dataset_detail.show_trial_status(status, self.colours, error=True)

    # -- syncing --------------------------------------------------------------------------------

    def _start_sync(self) -> None:
        self.syncing, self.sync_error, self.progress = True, None, None
        self.refresh_bindings()
        self._draw_sync_line()
        for kind in KINDS:
            if self.tabs[kind].matches is not None and not self.tabs[kind].matches.rows:
                self.query_one(f"#{kind}-empty", Static).update(self._empty_text(kind))
        runtime = self.runtime
        last = [0.0]

        def progressed(progress: SyncProgress) -> None:
            # A few redraws a second are news enough; hundreds would slow the sync down.
            now = time.monotonic()
            if now - last[0] >= PROGRESS_EVERY_S or progress.stage == "storing":
                last[0] = now
                self.post_message(SyncProgressed(progress))

        async def sync() -> None:
            try:
                report = await sync_runtime(runtime, progress=progressed)
            except Exception as exc:
                if not isinstance(exc, MarketError):
                    log.exception("catalogue sync")
                self.post_message(SyncEnded(None, _failure(exc)))
                return
            self.post_message(SyncEnded(report, None))

        self.run_worker(
            sync(), group="catalogue-sync", exclusive=True, exit_on_error=False, name="sync"
        )

    def on_sync_progressed(self, message: SyncProgressed) -> None:
        if self.syncing:
            self.progress = message.progress
            self._draw_sync_line()

    def on_sync_ended(self, message: SyncEnded) -> None:
        self.syncing, self.progress = False, None
        self.refresh_bindings()
        self.sync_error = message.error
        if message.report is not None:
            s = message.report.state
            self.state = s
            # Details fetched before may have changed with the catalogue.
            self.records.clear()
            for kind in KINDS:
                self.tabs[kind].selected = None
                self._search(kind)
            self._read_cache()
            self.notify(
                f"{s.endpoints:,} APIs and {s.datasets:,} datasets cached",
                title="Catalogue synced",
                markup=False,
            )
        else:
            for kind in KINDS:
                self._show_matches(kind)
            self.notify(
                f"{_said(message.error or ('', ''))}. The cached catalogue stays as it was.",
                title="Catalogue not synced",
                severity="error",
                markup=False,
            )
        self._draw_sync_line()

    # -- which actions make sense now -----------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "toggle_verified":
            return self.active == MARKET
        if action in ("next_sort", "sort"):
            return self.active == DATASETS
        if action == "trial_fields":
            if self.active != DATASETS:
                return False
            return True if self.tabs[DATASETS].selected else None
        if action == "show_tab":
            return parameters[0] != self.active
        if action == "page":
            m = self.tabs[self.active].matches
            if m is None:
                return False
            step = int(parameters[0])  # type: ignore[call-overload]
            return m.offset > 0 if step < 0 else m.offset + len(m.rows) < m.total
        if action == "refresh":
            return not self.syncing
        return True

    # -- the operator's actions -----------------------------------------------------------------

    def _set_filter(self, kind: str, f: Any) -> None:
        tab = self.tabs[kind]
        if f == tab.filter:
            return
        # A new question starts at its best match, not where the cursor was.
        tab.filter, tab.offset, tab.selected = f, 0, None
        self._draw_filters(kind)
        self._search(kind)

    @on(TabbedContent.TabActivated)
    def _tab_activated(self, event: TabbedContent.TabActivated) -> None:
        event.stop()
        kind = event.pane.id
        if kind in KINDS and kind != self.active:
            self._activate(kind)

    def _activate(self, kind: str) -> None:
        self.active = kind
        self.remove_class("-zoomed")
        self.refresh_bindings()
        self._show_detail(kind)  # fetches what the tab's selected item still lacks

    def action_show_tab(self, kind: str) -> None:
        if kind not in KINDS:
            return
        self.query_one(TabbedContent).active = kind
        if kind != self.active:
            self._activate(kind)
        self.table(kind).focus()

    def action_focus_search(self) -> None:
        self.remove_class("-zoomed")
        self.query_one(f"#{self.active}-search", Input).focus()

    @on(Input.Changed, ".catalogue-search")
    def _query_changed(self, event: Input.Changed) -> None:
        event.stop()
        kind = MARKET if event.input.id == "market-search" else DATASETS
        self._set_filter(kind, self.tabs[kind].filter.with_query(event.value))

    @on(Input.Submitted, ".catalogue-search")
    def _query_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.table(self.active).focus()

    def action_back(self) -> None:
        if self.has_class("-zoomed"):
            self.action_zoom()
            return
        search = self.query_one(f"#{self.active}-search", Input)
        if search.value:
            search.value = ""  # Input.Changed searches again
        self.table(self.active).focus()

    def action_clear_all(self) -> None:
        search = self.query_one(f"#{self.active}-search", Input)
        search.value = ""
        empty = MarketFilter() if self.active == MARKET else DatasetFilter()
        self._set_filter(self.active, empty)
        if self.active == DATASETS:
            self.trial_fields = None

    def action_filters(self) -> None:
        kind = self.active
        current = self.tabs[kind].filter

        def chosen(f: object) -> None:
            if isinstance(f, MarketFilter | DatasetFilter):
                self._set_filter(kind, f)
                self._show_detail(kind)

        if kind == MARKET:
            self.app.push_screen(MarketFilterDialog(current), chosen)
        else:
            self.app.push_screen(DatasetFilterDialog(current, self.categories), chosen)

    def action_toggle_verified(self) -> None:
        f = self.tabs[MARKET].filter
        self._set_filter(MARKET, replace(f, verified_only=not f.verified_only))

    def action_next_sort(self) -> None:
        self._set_filter(DATASETS, self.tabs[DATASETS].filter.next_sort())

    def action_sort(self, order: str) -> None:
        if order in SORT_LABELS:
            self._set_filter(DATASETS, replace(self.tabs[DATASETS].filter, sort_by=order))

    def action_trial_fields(self) -> None:
        tab = self.tabs[DATASETS]
        listing = self.records.get(tab.selected) if tab.selected else None
        if not isinstance(listing, DatasetListing):
            self.notify("No dataset is selected.", severity="warning")
            return

        def chosen(fields: object) -> None:
            if isinstance(fields, tuple):
                self.trial_fields = fields
                self._show_detail(DATASETS)

        self.app.push_screen(TrialFieldsDialog(listing.title, self.fields_to_check), chosen)

    def action_zoom(self) -> None:
        zoomed = not self.has_class("-zoomed")
        self.set_class(zoomed, "-zoomed")
        if zoomed:
            self.query_one(f"#{self.active}-detail").focus()
        else:
            self.table(self.active).focus()

    def action_refresh(self) -> None:
        if self.syncing:
            self.notify("The catalogue is already being synced.", markup=False)
            return
        self._start_sync()

    def action_page(self, step: int) -> None:
        tab = self.tabs[self.active]
        m = tab.matches
        if m is None:
            return
        offset = tab.offset + step * PAGE_SIZE
        if offset < 0 or offset >= max(m.total, 1):
            return
        tab.offset = offset
        tab.selected = None
        self._search(self.active)

    def action_move(self, step: int) -> None:
        table = self.table(self.active)
        if step > 0:
            table.action_cursor_down()
        else:
            table.action_cursor_up()
