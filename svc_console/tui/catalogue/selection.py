"""The selected item of each catalogue tab and its detail pane: the full record read from the
cache, then what the network adds (an endpoint's skill.md over REST, a dataset's trial over MCP),
fetched once the cursor rests on it and kept for the session.

`SelectedDetail` belongs to the catalogue screen: the screen passes it the messages its workers
post (`RecordLoaded`, `SkillLoaded`, `TrialLoaded`), and it fills the screen's detail widgets."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from textual.timer import Timer

from svc_console.core.datasets import DatasetListing, TrialResult
from svc_console.core.models import EndpointRecord
from svc_console.market.mcp import McpClient
from svc_console.tui.catalogue import network
from svc_console.tui.catalogue.messages import RecordLoaded, SkillLoaded, TrialLoaded
from svc_console.tui.catalogue.search import DATASETS, MARKET

if TYPE_CHECKING:
    from svc_console.runtime import Runtime
    from svc_console.tui.catalogue.detail import DatasetDetail, EndpointDetail
    from svc_console.tui.catalogue.search import CacheQueries, Tab
    from svc_console.tui.colors import Palette


class CatalogueView(Protocol):
    """What the selection reads and fills on its screen (the catalogue screen is one)."""

    active: str
    cache: CacheQueries
    runtime: Runtime
    tabs: dict[str, Tab]

    @property
    def colours(self) -> Palette: ...
    @property
    def endpoint_detail(self) -> EndpointDetail: ...
    @property
    def dataset_detail(self) -> DatasetDetail: ...
    @property
    def fields_to_check(self) -> tuple[str, ...]: ...
    def post_message(self, message: Any) -> bool: ...
    def refresh_bindings(self) -> None: ...
    def run_worker(self, work: Any, *args: Any, **kwargs: Any) -> Any: ...
    def set_timer(self, delay: float, callback: Any, *args: Any, **kwargs: Any) -> Timer: ...


class SelectedDetail:
    """`records`: the cached records read so far, by id. `skills`, `trials`: what the network
    answered, the latest `network.DETAILS_KEPT` of each. `delay()`: how long the cursor must rest
    before a fetch (read at each fetch)."""

    def __init__(self, screen: CatalogueView, delay: Callable[[], float]) -> None:
        self.screen = screen
        self.delay = delay
        self.records: dict[str, Any] = {}
        self.skills: OrderedDict[str, str] = OrderedDict()
        self.trials: OrderedDict[tuple[str, tuple[str, ...]], TrialResult] = OrderedDict()
        self._timers: dict[str, Timer] = {}
        self._mcp: McpClient | None = None

    async def aclose(self) -> None:
        if self._mcp is not None:
            await self._mcp.aclose()
            self._mcp = None

    def select(self, kind: str, item_id: str | None) -> None:
        s = self.screen
        tab = s.tabs[kind]
        if item_id == tab.selected and (item_id is None or item_id in self.records):
            return
        if (item_id is None) != (tab.selected is None):
            s.refresh_bindings()  # `t` needs a selected dataset
        tab.selected = item_id
        if item_id is None:
            (s.endpoint_detail if kind == MARKET else s.dataset_detail).clear()
            return
        if item_id in self.records:
            self.show(kind)
            return
        s.cache.record(kind, item_id)

    def record_loaded(self, message: RecordLoaded) -> None:
        if message.record is not None:
            self.records[message.item_id] = message.record
        if self.screen.tabs[message.kind].selected == message.item_id:
            self.show(message.kind)

    def show(self, kind: str) -> None:
        """The selected item's record at once, and what the network adds when it has it."""
        s = self.screen
        colours = s.colours
        item_id = s.tabs[kind].selected
        record = self.records.get(item_id) if item_id else None
        if kind == MARKET:
            detail = s.endpoint_detail
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
            dataset = s.dataset_detail
            listing = record if isinstance(record, DatasetListing) else None
            dataset.show_listing(listing, colours)
            if listing is None:
                return
            trial = self.trials.get((listing.id, s.fields_to_check))
            if trial is not None:
                dataset.show_trial(trial, colours)
            else:
                dataset.show_trial_status("loading…", colours)
                self._fetch_later(kind, listing.id)

    def _fetch_later(self, kind: str, item_id: str) -> None:
        """Fetch once the cursor rests: scrolling through a list costs no request per row. Only
        for the tab in front; the other tab fetches when it is shown."""
        s = self.screen
        timer = self._timers.pop(kind, None)
        if timer is not None:
            timer.stop()
        if kind != s.active:
            return

        def fetch() -> None:
            self._timers.pop(kind, None)
            if s.tabs[kind].selected != item_id or kind != s.active:
                return
            if kind == MARKET:
                self._fetch_skill(item_id)
            else:
                self._fetch_trial(item_id, s.fields_to_check)

        self._timers[kind] = s.set_timer(self.delay(), fetch, name=f"catalogue-{kind}-detail")

    def _fetch_skill(self, endpoint_id: str) -> None:
        s = self.screen
        market = s.runtime.market
        if market is None:
            return
        rest = market.rest

        async def fetch() -> None:
            s.post_message(await network.fetch_skill(rest, endpoint_id))

        s.run_worker(
            fetch(), group="catalogue-skill", exclusive=True, exit_on_error=False, name="skill.md"
        )

    def skill_loaded(self, message: SkillLoaded) -> None:
        s = self.screen
        if message.text is not None:
            network.remember(self.skills, message.endpoint_id, message.text)
        if s.tabs[MARKET].selected != message.endpoint_id:
            return
        if message.text is not None:
            s.endpoint_detail.show_skill(message.text, s.colours)
        else:
            status = f"could not be fetched: {message.error}"
            s.endpoint_detail.show_skill_status(status, s.colours, error=True)

    def _fetch_trial(self, dataset_id: str, fields: tuple[str, ...]) -> None:
        s = self.screen
        if self._mcp is None:
            self._mcp = s.runtime.mcp_client()
        mcp = self._mcp

        async def fetch() -> None:
            s.post_message(await network.fetch_trial(mcp, dataset_id, fields))

        s.run_worker(
            fetch(), group="catalogue-trial", exclusive=True, exit_on_error=False, name="trial"
        )

    def trial_loaded(self, message: TrialLoaded) -> None:
        s = self.screen
        if message.trial is not None:
            network.remember(self.trials, (message.dataset_id, message.fields), message.trial)
        selected = s.tabs[DATASETS].selected
        if selected != message.dataset_id or message.fields != s.fields_to_check:
            return
        if message.trial is not None:
            s.dataset_detail.show_trial(message.trial, s.colours)
        else:
            status = f"could not be fetched: {message.error}"
            s.dataset_detail.show_trial_status(status, s.colours, error=True)
