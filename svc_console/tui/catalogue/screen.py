"""The catalogue screen: the market's APIs and its datasets side by side in two tabs, searched as
the operator types, with every filter of `list_market_apis` and of `list_datasets` /
`search_datasets`; the selected endpoint's record and skill.md, or the selected dataset's listing,
free trial (coverage of the fields needed, preview rows) and datacard.

Searches never go to the network: they read the ledger's catalogue cache
(`ledger/catalogue_search.py`), which answers one keystroke over the whole catalogue in a few
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
import time
from dataclasses import replace
from typing import Any

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import DataTable, Input, Static, TabbedContent, TabPane

from svc_console.core.catalogue_filters import SORT_LABELS, DatasetFilter, MarketFilter
from svc_console.core.datasets import DatasetListing
from svc_console.ledger.catalogue_store import SyncState
from svc_console.runtime import Runtime
from svc_console.services.catalogue_sync import SyncProgress
from svc_console.tui import bindings
from svc_console.tui.catalogue import lines, network
from svc_console.tui.catalogue.commands import COMMANDS
from svc_console.tui.catalogue.detail import DatasetDetail, EndpointDetail
from svc_console.tui.catalogue.dialogs import (
    DatasetFilterDialog,
    MarketFilterDialog,
    TrialFieldsDialog,
)
from svc_console.tui.catalogue.messages import (
    CacheRead,
    MatchesFound,
    RecordLoaded,
    SkillLoaded,
    SyncEnded,
    SyncProgressed,
    TrialLoaded,
)
from svc_console.tui.catalogue.search import DATASETS, KINDS, MARKET, CacheQueries, Tab, new_tabs
from svc_console.tui.catalogue.selection import SelectedDetail
from svc_console.tui.catalogue.tables import CatalogueTable, DatasetTable, EndpointTable
from svc_console.tui.colors import Palette, palette
from svc_console.tui.navigation import register_screen
from svc_console.tui.widgets.banner import service_banner
from svc_console.tui.widgets.chrome import ConsoleFooter, heading

log = logging.getLogger(__name__)

# How long the cursor rests on an item before its skill.md or trial is fetched.
DETAIL_DELAY_S = 0.3
STALE_S = 24 * 3600  # a cache older than this is refreshed when the screen opens
SYNC_LINE_EVERY_S = 30.0


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
        self.tabs: dict[str, Tab] = new_tabs()
        self.active = MARKET
        self.cache = CacheQueries(self.ledger_path, self.run_worker, self.post_message)
        self.state = SyncState(None, 0, 0, 0, 0)
        self.categories: list[str] = []
        self.syncing = False
        self.progress: SyncProgress | None = None
        self.sync_error: tuple[str, str] | None = None  # (code, message)
        # The fields a trial checks; None: the required fields of the dataset filter.
        self.trial_fields: tuple[str, ...] | None = None
        self.detail = SelectedDetail(self, lambda: DETAIL_DELAY_S)
        # What is known of the selected items (the detail's, kept for the session).
        d = self.detail
        self.records, self.skills, self.trials = d.records, d.skills, d.trials
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
        banner = service_banner(self.runtime.market, self.runtime.agent_warning)
        if banner is not None:
            yield banner
        yield from heading()
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
        yield ConsoleFooter()

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
        self.cache.open()
        blink = getattr(self.app, "cursor_blink", True)
        for field in self.query(Input):
            field.cursor_blink = blink
        self.app.theme_changed_signal.subscribe(self, lambda _theme: self._redraw())
        self.set_interval(SYNC_LINE_EVERY_S, self._draw_sync_line, name="catalogue-sync-line")
        self._draw_sync_line()
        for kind in KINDS:
            self._draw_filters(kind)
            self._search(kind)
        self.cache.read_state()
        self.table(MARKET).focus()

    async def on_unmount(self) -> None:
        self.cache.close()
        await self.detail.aclose()

    # -- reading the cache (thread workers) -------------------------------------------------------

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
        self.cache.search(kind, self.tabs[kind])

    def on_matches_found(self, message: MatchesFound) -> None:
        if self.tabs[message.kind].accept(message.generation, message.matches):
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
        tab, empty = self.tabs[kind], self.state.empty
        return lines.empty_text(kind, tab, empty, self.syncing, self.sync_error)

    def _redraw(self) -> None:
        for kind in KINDS:
            self._show_matches(kind)
        self._draw_sync_line()
        self._show_detail(self.active)

    # -- drawing ----------------------------------------------------------------------------------

    def _draw_sync_line(self) -> None:
        line = lines.sync_line(
            self.state, self.syncing, self.progress, self.sync_error, self.colours, self.now()
        )
        self.query_one("#catalogue-sync", Static).update(line)

    def _draw_filters(self, kind: str) -> None:
        text = lines.filters_line(kind, self.tabs[kind], self.state.empty, self.colours)
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
        self.detail.select(kind, item_id)

    def on_record_loaded(self, message: RecordLoaded) -> None:
        self.detail.record_loaded(message)

    def _show_detail(self, kind: str) -> None:
        self.detail.show(kind)

    def on_skill_loaded(self, message: SkillLoaded) -> None:
        self.detail.skill_loaded(message)

    def on_trial_loaded(self, message: TrialLoaded) -> None:
        self.detail.trial_loaded(message)

    # -- syncing --------------------------------------------------------------------------------

    def _start_sync(self) -> None:
        self.syncing, self.sync_error, self.progress = True, None, None
        self.refresh_bindings()
        self._draw_sync_line()
        for kind in KINDS:
            if self.tabs[kind].matches is not None and not self.tabs[kind].matches.rows:
                self.query_one(f"#{kind}-empty", Static).update(self._empty_text(kind))
        self.run_worker(
            network.sync(self.runtime, self.post_message),
            group="catalogue-sync",
            exclusive=True,
            exit_on_error=False,
            name="sync",
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
            self.cache.read_state()
            self.notify(
                f"{s.endpoints:,} APIs and {s.datasets:,} datasets cached",
                title="Catalogue synced",
                markup=False,
            )
        else:
            for kind in KINDS:
                self._show_matches(kind)
            self.notify(
                f"{network.said(message.error or ('', ''))}. The cached catalogue stays as it was.",
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
            step = int(parameters[0])  # type: ignore[call-overload]
            return self.tabs[self.active].can_page(step)
        if action == "refresh":
            return not self.syncing
        return True

    # -- the operator's actions -----------------------------------------------------------------

    def _set_filter(self, kind: str, f: Any) -> None:
        if not self.tabs[kind].refilter(f):
            return
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
        if self.tabs[self.active].turn_page(step):
            self._search(self.active)

    def action_move(self, step: int) -> None:
        table = self.table(self.active)
        if step > 0:
            table.action_cursor_down()
        else:
            table.action_cursor_up()
