"""The catalogue screen against the real thing: the console's runtime and ledger file, the sandbox
over HTTP for skill.md (REST), the trials (MCP `try_dataset`) and the sync; the operator is a
Textual pilot pressing keys.

Most tests start from a ledger whose cache already holds the sandbox's whole catalogue (stored
once per module with the cache's own `store`, from the sandbox's records, as of the test clock's
start), so they need not wait for a sync; the tests of the sync itself start from an empty cache.
"""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Callable, Iterator
from dataclasses import replace
from decimal import Decimal
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest
from helpers import FakeClock
from textual.app import App, ComposeResult
from textual.pilot import Pilot
from textual.widgets import Checkbox, Input, Select
from textual.widgets._markdown import MarkdownBlock
from tui_support import (
    build_console,
    record_notifications,
    screen_text,
    started,
    type_text,
    until,
)

from svc_console.config.paths import Paths
from svc_console.core.catalogue_filters import DatasetFilter, MarketFilter
from svc_console.core.datasets import DatasetListing
from svc_console.core.models import EndpointRecord
from svc_console.core.sanitize import inert_markdown
from svc_console.ledger import Ledger, catalogue_search, catalogue_store
from svc_console.ledger.readers import open_reader
from svc_console.runtime import Runtime
from svc_console.sandbox.catalog import Catalog, catalog
from svc_console.sandbox.datasets import dataset_catalog
from svc_console.tui import bindings
from svc_console.tui.app import ConsoleApp
from svc_console.tui.catalogue.dialogs import (
    DatasetFilterDialog,
    MarketFilterDialog,
    TrialFieldsDialog,
)
from svc_console.tui.catalogue.screen import DATASETS, MARKET, CatalogueScreen
from svc_console.tui.catalogue.skill_view import InertMarkdown
from svc_console.tui.catalogue.tables import PAGE_SIZE
from svc_console.tui.help import HelpScreen

SYNCED_AT = FakeClock().now
HOSTILE = "\x1b[31mRED\x1b]52;c;SGVsbG8=\x07 [@click=app.quit]quit[/] \u202eevil"
HOSTILE_SKILL = (
    "# Hostile [@click=app.quit]title[/]\n\n"
    "Text \x1b[2J\x1b]8;;https://evil.example\x07link\x1b]8;;\x07 [link=https://evil.example]x"
    "[/link]\n\n"
    "[docs](https://evil.example/a) ![img](https://evil.example/i.png)"
    " <https://evil.example/auto> https://evil.example/bare <b>raw</b> &#27;[31m &amp;\n"
)


def listings() -> list[DatasetListing]:
    datasets = dataset_catalog()
    return [DatasetListing.model_validate(datasets.listing(d.id)) for d in datasets.datasets]


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A sandbox ledger whose catalogue cache holds the sandbox's whole catalogue."""
    path = tmp_path_factory.mktemp("catalogue") / "ledger-sandbox.db"
    Ledger(path).close()
    conn = catalogue_store.open_writer(path)
    try:
        catalogue_store.store(conn, list(catalog().endpoints), listings(), synced_at=SYNCED_AT)
    finally:
        conn.close()
    return path


@pytest.fixture
def cached(template: Path, paths: Paths) -> Path:
    """Put the filled cache where the console will find it."""
    paths.home.mkdir(parents=True, exist_ok=True)
    target = paths.ledger(sandbox=True)
    shutil.copy(template, target)
    return target


@pytest.fixture
def console(make_runtime: Callable[..., Runtime], clock: FakeClock) -> Callable[..., ConsoleApp]:
    return lambda **options: build_console(make_runtime, clock, **options)


def screen(app: ConsoleApp) -> CatalogueScreen:
    found = app.screen
    assert isinstance(found, CatalogueScreen)
    return found


def on_catalogue(app: ConsoleApp) -> bool:
    return isinstance(app.screen, CatalogueScreen)


class HeldSync:
    """Syncs that wait at a gate before they start: while it is shut the screen stays in its
    syncing state for as long as the test needs, rather than for a moment that may be over
    before the test looks. `started` lists the runtime of each sync begun."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.gate = asyncio.Event()
        self.started: list[Runtime] = []
        sync_catalogue = Runtime.sync_catalogue

        async def held(runtime: Runtime, **options: Any) -> Any:
            self.started.append(runtime)
            await self.gate.wait()
            return await sync_catalogue(runtime, **options)

        monkeypatch.setattr(Runtime, "sync_catalogue", held)


async def open_catalogue(pilot: Pilot[Any]) -> CatalogueScreen:
    await started(pilot)
    await pilot.press("2")
    app = pilot.app
    await until(pilot, lambda: on_catalogue(app) and screen(app).tabs[MARKET].matches is not None)
    return screen(app)


def total(scr: CatalogueScreen, kind: str) -> int | None:
    matches = scr.tabs[kind].matches
    return None if matches is None else matches.total


def shown_ids(scr: CatalogueScreen, kind: str) -> list[str]:
    return list(scr.table(kind).ids)


def cache_search(path: Path, f: MarketFilter | DatasetFilter, **window: int) -> Any:
    conn = open_reader(path)
    try:
        if isinstance(f, MarketFilter):
            return catalogue_search.search_endpoints(conn, f, limit=PAGE_SIZE, **window)
        return catalogue_search.search_datasets(conn, f, limit=PAGE_SIZE, **window)
    finally:
        conn.close()


async def answered(pilot: Pilot[Any], scr: CatalogueScreen, kind: str, expected: Any) -> None:
    """Wait until the tab shows exactly `expected` (the cache's own answer)."""
    ids = [row.id for row in expected.rows]
    await until(pilot, lambda: total(scr, kind) == expected.total and shown_ids(scr, kind) == ids)


def skill_shown(scr: CatalogueScreen) -> bool:
    selected = scr.tabs[MARKET].selected
    markdown = scr.query_one(InertMarkdown)
    text = scr.skills.get(selected) if selected is not None else None
    return text is not None and markdown.shown == inert_markdown(text)


def trial_shown(scr: CatalogueScreen) -> bool:
    selected = scr.tabs[DATASETS].selected
    shown = scr.dataset_detail.shown_trial
    return (
        shown is not None and shown[0] == selected and (selected, scr.fields_to_check) in scr.trials
    )


# -- snapshots ------------------------------------------------------------------------------------


def test_snapshot_loading_with_an_empty_cache(
    snap_compare: Any,
    console: Callable[..., ConsoleApp],
    sandbox: Any,
    monkeypatch: pytest.MonkeyPatch,
):
    """First visit, nothing cached: the sync starts by itself and the screen says so (the sync
    is held before it asks the service, so the loading state holds still for the picture)."""
    held = HeldSync(monkeypatch)
    app = console()

    async def run_before(pilot: Pilot[Any]) -> None:
        scr = await open_catalogue(pilot)
        await until(pilot, lambda: held.started and "being fetched" in screen_text(app))
        assert scr.syncing

    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)


def test_snapshot_populated(snap_compare: Any, console: Callable[..., ConsoleApp], cached: Path):
    """The whole catalogue cached: the best endpoints first, the first one's record and skill.md."""
    app = console()

    async def run_before(pilot: Pilot[Any]) -> None:
        scr = await open_catalogue(pilot)
        await until(pilot, lambda: skill_shown(scr))

    assert snap_compare(app, terminal_size=(120, 40), run_before=run_before)


def test_snapshot_search_with_results(
    snap_compare: Any, console: Callable[..., ConsoleApp], cached: Path
):
    """A search typed letter by letter, with a filter: matches ranked as the service ranks them."""
    app = console()

    async def run_before(pilot: Pilot[Any]) -> None:
        scr = await open_catalogue(pilot)
        await pilot.press("v", "slash")
        await type_text(pilot, "web search")
        await pilot.press("enter")
        f = MarketFilter(query="web search", verified_only=True)
        await answered(pilot, scr, MARKET, cache_search(cached, f))
        await until(pilot, lambda: skill_shown(scr))

    assert snap_compare(app, terminal_size=(120, 40), run_before=run_before)


def test_snapshot_endpoint_with_skill_md_narrow(
    snap_compare: Any, console: Callable[..., ConsoleApp], cached: Path
):
    """At 80x24, a dynamic-priced endpoint zoomed: its record and its skill.md as Markdown."""
    app = console()

    async def run_before(pilot: Pilot[Any]) -> None:
        scr = await open_catalogue(pilot)
        await pilot.press("slash")
        await type_text(pilot, "page scraper scrapeworks")
        await pilot.press("enter")
        await until(pilot, lambda: shown_ids(scr, MARKET) == ["ep_scrape_page"])
        await until(pilot, lambda: skill_shown(scr))
        await pilot.press("z")
        await pilot.pause()

    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)


def test_snapshot_dataset_trial_and_coverage(
    snap_compare: Any, console: Callable[..., ConsoleApp], cached: Path
):
    """A dataset, its free trial's preview and the coverage of two fields (one missing)."""
    app = console()
    first = cache_search(cached, DatasetFilter(sort_by="popular"))
    listing = next(item for item in listings() if item.id == first.rows[0].id)

    async def run_before(pilot: Pilot[Any]) -> None:
        scr = await open_catalogue(pilot)
        await pilot.press("d", "s")
        await answered(pilot, scr, DATASETS, first)
        await until(pilot, lambda: trial_shown(scr))
        await pilot.press("t")
        await until(pilot, lambda: isinstance(app.screen, TrialFieldsDialog))
        app.screen.query_one(Input).value = ""
        await type_text(pilot, f"{listing.columns[0]} licence_number")
        await pilot.press("enter")
        await until(pilot, lambda: on_catalogue(app) and trial_shown(scr))

    assert snap_compare(app, terminal_size=(120, 40), run_before=run_before)


def test_snapshot_service_unreachable(
    snap_compare: Any, console: Callable[..., ConsoleApp], sandbox: Any
):
    """No cache and no service: the sync fails, the screen says why and how to retry."""
    app = console()

    async def run_before(pilot: Pilot[Any]) -> None:
        await started(pilot)
        sandbox.stop()
        await pilot.press("2")
        await until(pilot, lambda: on_catalogue(app) and screen(app).sync_error is not None)
        await until(pilot, lambda: "r tries again" in screen_text(app))

    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)


def test_snapshot_datasets_narrow(
    snap_compare: Any, console: Callable[..., ConsoleApp], cached: Path
):
    """The datasets tab at 80x24, filtered and sorted."""
    app = console()

    async def run_before(pilot: Pilot[Any]) -> None:
        scr = await open_catalogue(pilot)
        await pilot.press("d")
        scr._set_filter(DATASETS, DatasetFilter(tier="premium", sort_by="price_asc"))
        await answered(
            pilot,
            scr,
            DATASETS,
            cache_search(cached, DatasetFilter(tier="premium", sort_by="price_asc")),
        )
        await until(pilot, lambda: trial_shown(scr))

    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)


# -- keys -----------------------------------------------------------------------------------------


async def test_search_as_you_type_follows_every_keystroke(
    console: Callable[..., ConsoleApp], cached: Path
):
    app = console()
    async with app.run_test(size=(120, 40)) as pilot:
        scr = await open_catalogue(pilot)
        assert total(scr, MARKET) == len(catalog().endpoints)
        await pilot.press("slash")
        await until(pilot, lambda: scr.query_one("#market-search", Input).has_focus)
        typed = ""
        for char in "forecast":
            typed += char
            await pilot.press(char)
            await answered(pilot, scr, MARKET, cache_search(cached, MarketFilter(query=typed)))
        # Every word must appear; a word absent everywhere empties the list and says so.
        await type_text(pilot, " zzqx")
        await until(pilot, lambda: total(scr, MARKET) == 0)
        assert "No API matches" in screen_text(app)
        # escape clears the search and goes back to the list.
        await pilot.press("escape")
        await until(
            pilot,
            lambda: total(scr, MARKET) == len(catalog().endpoints) and scr.table(MARKET).has_focus,
        )
        assert scr.query_one("#market-search", Input).value == ""


async def test_tab_keys_move_and_zoom(console: Callable[..., ConsoleApp], cached: Path):
    app = console()
    async with app.run_test(size=(80, 24)) as pilot:
        scr = await open_catalogue(pilot)
        top = shown_ids(scr, MARKET)
        await until(pilot, lambda: scr.tabs[MARKET].selected == top[0])
        await pilot.press("j", "j")
        await until(pilot, lambda: scr.tabs[MARKET].selected == top[2])
        await pilot.press("k")
        await until(pilot, lambda: scr.tabs[MARKET].selected == top[1])
        await until(pilot, lambda: top[1] in scr.records)
        record = scr.records[top[1]]
        await pilot.press("z")
        await until(pilot, lambda: scr.has_class("-zoomed") and scr.endpoint_detail.has_focus)
        await until(pilot, lambda: record.name in screen_text(app))
        await pilot.press("z")
        await until(pilot, lambda: not scr.has_class("-zoomed") and scr.table(MARKET).has_focus)
        await pilot.press("enter")  # enter on a row zooms too; escape comes back
        await until(pilot, lambda: scr.has_class("-zoomed"))
        await pilot.press("escape")
        await until(pilot, lambda: not scr.has_class("-zoomed"))
        # d and m switch tabs; the keys of the other tab are not offered.
        await pilot.press("d")
        await until(
            pilot,
            lambda: (
                scr.active == DATASETS
                and total(scr, DATASETS) == 364
                and scr.table(DATASETS).has_focus
            ),
        )
        assert scr.check_action("toggle_verified", ()) is False
        assert scr.check_action("next_sort", ()) is True
        await pilot.press("m")
        await until(
            pilot, lambda: scr.active == MARKET and scr.check_action("next_sort", ()) is False
        )
        # No key starts a spend request from here: agents submit them.
        actions = {command.action for command in bindings.commands("catalogue")}
        assert not any(word in " ".join(actions) for word in ("buy", "spend", "request", "call"))


async def test_verified_key_sort_key_and_clear(console: Callable[..., ConsoleApp], cached: Path):
    app = console()
    async with app.run_test(size=(120, 40)) as pilot:
        scr = await open_catalogue(pilot)
        await pilot.press("v")
        await answered(pilot, scr, MARKET, cache_search(cached, MarketFilter(verified_only=True)))
        assert "verified only" in screen_text(app)
        await pilot.press("v")
        await answered(pilot, scr, MARKET, cache_search(cached, MarketFilter()))
        await pilot.press("d")
        f = DatasetFilter()
        for _ in range(4):
            await pilot.press("s")
            f = f.next_sort()
            await answered(pilot, scr, DATASETS, cache_search(cached, f))
        assert f.sort_by == "newest"
        await pilot.press("s", "slash")
        await type_text(pilot, "weather")
        await pilot.press("enter")
        f = DatasetFilter(query="weather", sort_by="popular")
        await answered(pilot, scr, DATASETS, cache_search(cached, f))
        await pilot.press("c")
        await answered(pilot, scr, DATASETS, cache_search(cached, DatasetFilter()))
        assert scr.query_one("#datasets-search", Input).value == ""


async def test_page_keys_walk_the_matches(console: Callable[..., ConsoleApp], cached: Path):
    app = console()
    async with app.run_test(size=(120, 40)) as pilot:
        scr = await open_catalogue(pilot)
        f = MarketFilter(query="search")
        scr.query_one("#market-search", Input).value = "search"
        await answered(pilot, scr, MARKET, cache_search(cached, f))
        assert scr.check_action("page", (-1,)) is False
        await pilot.press("right_square_bracket")
        await answered(pilot, scr, MARKET, cache_search(cached, f, offset=PAGE_SIZE))
        assert f"{PAGE_SIZE + 1}\N{EN DASH}" in screen_text(app)
        await pilot.press("right_square_bracket", "left_square_bracket")
        await answered(pilot, scr, MARKET, cache_search(cached, f, offset=PAGE_SIZE))
        await pilot.press("left_square_bracket")
        await answered(pilot, scr, MARKET, cache_search(cached, f))
        await pilot.press("left_square_bracket")  # nothing before the first page
        await pilot.pause()
        assert scr.tabs[MARKET].offset == 0


async def test_market_filter_dialog_sets_every_filter(
    console: Callable[..., ConsoleApp], cached: Path
):
    app = console()
    async with app.run_test(size=(120, 40)) as pilot:
        scr = await open_catalogue(pilot)
        await pilot.press("f")
        await until(pilot, lambda: isinstance(app.screen, MarketFilterDialog))
        dialog = app.screen
        # The keyboard only: open each choice, type to find the option, enter to take it.
        await pilot.press("enter")
        await type_text(pilot, "A14")
        await pilot.press("enter", "tab", "enter")
        await type_text(pilot, "B1")
        await pilot.press("enter", "tab", "enter")
        await type_text(pilot, "tempo")
        await pilot.press("enter", "tab", "space", "tab")
        await type_text(pilot, "abc")
        await pilot.press("enter")
        await until(pilot, lambda: "max price" in screen_text(app))
        assert isinstance(app.screen, MarketFilterDialog)  # a bad price keeps the dialog open
        dialog.query_one("#max_price", Input).value = ""
        await type_text(pilot, "0.01")
        assert dialog.query_one("#domain_type", Select).value == "A14"
        assert dialog.query_one("#product_class", Select).value == "B1"
        assert dialog.query_one("#chain", Select).value == "tempo"
        assert dialog.query_one("#verified_only", Checkbox).value is True
        await pilot.press("enter")
        expected = MarketFilter(
            domain_type="A14",
            product_class="B1",
            chain="tempo",
            verified_only=True,
            max_price_usdc=Decimal("0.01"),
        )
        await until(pilot, lambda: on_catalogue(app))
        assert scr.tabs[MARKET].filter == expected
        await answered(pilot, scr, MARKET, cache_search(cached, expected))
        assert 0 < total(scr, MARKET) < 100
        text = screen_text(app)
        assert "domain A14 · class B1 · chain tempo · verified only" in text
        # Clear all in the dialog keeps the query, drops the filters; escape changes nothing.
        await pilot.press("f")
        await until(pilot, lambda: isinstance(app.screen, MarketFilterDialog))
        await pilot.press("escape")
        await until(pilot, lambda: scr.tabs[MARKET].filter == expected)
        await pilot.press("f")
        await until(pilot, lambda: isinstance(app.screen, MarketFilterDialog))
        await pilot.click("#clear")
        await answered(pilot, scr, MARKET, cache_search(cached, MarketFilter()))


async def test_dataset_filter_dialog_sets_every_filter(
    console: Callable[..., ConsoleApp], cached: Path
):
    app = console()
    async with app.run_test(size=(120, 40)) as pilot:
        scr = await open_catalogue(pilot)
        await pilot.press("d", "f")
        await until(pilot, lambda: isinstance(app.screen, DatasetFilterDialog))
        dialog = app.screen
        assert "finance" in [
            str(value) for _, value in dialog.query_one("#category", Select)._options
        ]
        await pilot.press("enter")
        await type_text(pilot, "finance")
        await pilot.press("enter", "tab", "enter")
        await type_text(pilot, "standard")
        await pilot.press("enter", "tab", "enter")
        await type_text(pilot, "structured")
        await pilot.press("enter", "tab", "enter")
        await type_text(pilot, "csv")
        await pilot.press("enter", "tab")
        await type_text(pilot, "5")
        await pilot.press("tab")
        await type_text(pilot, "date")
        await pilot.press("tab", "enter")
        await type_text(pilot, "cheap")
        await pilot.press("enter")
        await until(pilot, lambda: dialog.query_one("#sort_by", Select).value == "price_asc")
        await pilot.click("#confirm")
        expected = DatasetFilter(
            category="finance",
            tier="standard",
            modality="structured",
            format="csv",
            max_price_usdc=Decimal("5"),
            required_fields=("date",),
            sort_by="price_asc",
        )
        await until(pilot, lambda: on_catalogue(app))
        assert scr.tabs[DATASETS].filter == expected
        await answered(pilot, scr, DATASETS, cache_search(cached, expected))
        broader = replace(expected, format=None, modality=None, category=None)
        assert cache_search(cached, broader).total > total(scr, DATASETS)


async def test_trial_fields_key_reports_coverage(console: Callable[..., ConsoleApp], cached: Path):
    app = console()
    async with app.run_test(size=(120, 40)) as pilot:
        scr = await open_catalogue(pilot)
        assert scr.check_action("trial_fields", ()) is False  # not on the APIs tab
        await pilot.press("d")
        await until(pilot, lambda: trial_shown(scr))
        assert "No fields to check" in screen_text(app)
        listing = scr.records[scr.tabs[DATASETS].selected]
        await pilot.press("t")
        await until(pilot, lambda: isinstance(app.screen, TrialFieldsDialog))
        await type_text(pilot, f"{listing.columns[-1].upper()} nope_field")
        await pilot.press("enter")
        await until(pilot, lambda: on_catalogue(app) and trial_shown(scr))
        text = screen_text(app)
        assert "1 of 2 fields (50%)" in text
        assert "missing nope_field" in text
        trial = scr.trials[(listing.id, scr.fields_to_check)]
        assert trial.coverage.present == [listing.columns[-1].upper()]
        # Required fields set in the filter are what the trial checks when t set none.
        await pilot.press("c")
        scr._set_filter(DATASETS, DatasetFilter(required_fields=(listing.columns[0],)))
        await until(pilot, lambda: trial_shown(scr) and "1 of 1 fields (100%)" in screen_text(app))


async def test_visiting_with_an_empty_cache_syncs_over_http(
    console: Callable[..., ConsoleApp], paths: Paths, monkeypatch: pytest.MonkeyPatch
):
    held = HeldSync(monkeypatch)  # until the test has pressed `r` during the sync
    app = console()
    notes = record_notifications(app)
    async with app.run_test(size=(120, 40)) as pilot:
        scr = await open_catalogue(pilot)
        await until(pilot, lambda: held.started)  # the empty cache started a sync
        assert scr.syncing
        assert scr.check_action("refresh", ()) is False
        await pilot.press("r")  # already syncing: said, not started twice
        held.gate.set()
        # The sync's report is the event waited for.
        await until(pilot, lambda: any("APIs and" in note for note in notes), timeout=120)
        assert not scr.syncing
        assert len(held.started) == 1
        assert scr.sync_error is None
        assert scr.state.endpoints == len(catalog().endpoints)
        await until(pilot, lambda: total(scr, MARKET) == scr.state.endpoints)
        assert scr.state.datasets == len(dataset_catalog().datasets)
        assert scr.state.synced_at == app.runtime.broker.clock()
        # r while syncing started nothing more: one sync, one report of it.
        assert sum("APIs and" in note for note in notes) == 1
        await until(pilot, lambda: f"{len(catalog().endpoints):,} APIs" in screen_text(app))
        # What the screen shows is what the ledger file now holds.
        conn = open_reader(paths.ledger(sandbox=True))
        try:
            assert catalogue_store.sync_state(conn) == scr.state
        finally:
            conn.close()


async def test_a_console_on_postgresql_opens_the_catalogue_before_any_cache_file_exists(
    paths: Paths,
    make_runtime: Callable[..., Runtime],
    postgres: Any,
    clock: FakeClock,
    monkeypatch: pytest.MonkeyPatch,
):
    """Beside a PostgreSQL ledger the cache is a local file of its own, which nothing makes
    before a first sync: the screen's first visit makes it (empty, owner-only) to read it, and
    starts the sync, rather than failing to open a file that is not there."""
    held = HeldSync(monkeypatch)
    runtime = make_runtime(clock=clock, ledger_url=postgres.new_database())
    cache = paths.ledger(sandbox=True)
    app = ConsoleApp(runtime, cursor_blink=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await started(pilot)
        assert not cache.exists()
        scr = await open_catalogue(pilot)
        await until(pilot, lambda: held.started and "being fetched" in screen_text(app))
        assert scr.state.empty and total(scr, MARKET) == 0
        assert cache.stat().st_mode & 0o777 == 0o600
        held.gate.set()
        await until(pilot, lambda: not scr.syncing, timeout=120)
        assert scr.sync_error is None
        await until(pilot, lambda: total(scr, MARKET) == len(catalog().endpoints))


async def test_a_failed_refresh_keeps_the_cache_on_screen(
    console: Callable[..., ConsoleApp], cached: Path, sandbox: Any
):
    app = console()
    async with app.run_test(size=(120, 40)) as pilot:
        scr = await open_catalogue(pilot)
        before = shown_ids(scr, MARKET)
        sandbox.state.faults.set("error", routes=["market", "rest"], status=503)
        await pilot.press("r")
        await until(pilot, lambda: scr.sync_error is not None)
        assert scr.sync_error[0] == "SERVICE_UNAVAILABLE"
        await until(pilot, lambda: "Sync failed" in screen_text(app))
        assert "showing the cache of" in screen_text(app)
        assert shown_ids(scr, MARKET) == before
        assert scr.state.synced_at == SYNCED_AT
        # skill.md cannot be fetched either: the detail says so, the record stays.
        await pilot.press("j")
        await until(pilot, lambda: "could not be fetched" in screen_text(app))
        sandbox.state.faults.clear()


async def test_help_lists_the_screen_keys(console: Callable[..., ConsoleApp], cached: Path):
    app = console()
    async with app.run_test(size=(120, 40)) as pilot:
        await open_catalogue(pilot)
        await pilot.press("f1")
        await until(pilot, lambda: isinstance(app.screen, HelpScreen))
        await until(pilot, lambda: "catalogue.search" in screen_text(app))
        text = screen_text(app)
        for binding_id in ("catalogue.search", "catalogue.filters", "catalogue.refresh"):
            assert binding_id in text
        await pilot.press("escape")


# -- untrusted text -------------------------------------------------------------------------------


def hostile_listing() -> Catalog:
    """The seeded catalogue plus one endpoint whose every text is hostile."""
    base = catalog()
    good = base.get("ep_websearch_basic")
    assert good is not None
    hostile = good.model_copy(
        update={
            "id": "ep_hostile",
            "name": f"Evil {HOSTILE}",
            "provider_name": HOSTILE,
            "description": HOSTILE_SKILL,
            "tags": [HOSTILE, "hostile"],
            "chains": ["base", HOSTILE],
        }
    )
    endpoints = (*base.endpoints, hostile)
    return Catalog(
        endpoints=endpoints,
        by_id=MappingProxyType({r.id: r for r in endpoints}),
        kinds=MappingProxyType({**base.kinds, hostile.id: base.kind(good.id)}),
        outputs=MappingProxyType({**base.outputs, hostile.id: base.outputs[good.id]}),
        provider_count=base.provider_count + 1,
        _haystacks=MappingProxyType(
            {**{r.id: base.haystack(r.id) for r in base.endpoints}, hostile.id: "hostile"}
        ),
    )


@pytest.fixture
def hostile_sandbox(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """The sandbox serving a catalogue with one hostile endpoint (its skill.md included)."""
    from svc_console.sandbox import app as sandbox_app
    from svc_console.sandbox.server import SandboxServer

    listing = hostile_listing()
    monkeypatch.setattr(sandbox_app, "catalog", lambda: listing)
    server = SandboxServer()
    server.start()
    yield server
    server.stop()


async def test_hostile_record_and_skill_md_are_shown_inert(
    clock: FakeClock,
    paths: Paths,
    template: Path,
    hostile_sandbox: Any,
):
    paths.home.mkdir(parents=True, exist_ok=True)
    path = paths.ledger(sandbox=True)
    shutil.copy(template, path)
    hostile = hostile_listing().get("ep_hostile")
    assert isinstance(hostile, EndpointRecord)
    conn = catalogue_store.open_writer(path)
    try:
        catalogue_store.store(
            conn, [hostile, *catalog().endpoints], listings(), synced_at=SYNCED_AT
        )
    finally:
        conn.close()
    runtime = Runtime(paths=paths, sandbox=hostile_sandbox, broker_options={"clock": clock})
    app = ConsoleApp(runtime, cursor_blink=False)
    async with app.run_test(size=(160, 50)) as pilot:
        scr = await open_catalogue(pilot)
        scr.query_one("#market-search", Input).value = "hostile"
        await until(pilot, lambda: shown_ids(scr, MARKET) == ["ep_hostile"])
        await until(pilot, lambda: skill_shown(scr))
        await pilot.press("z")
        await pilot.pause()
        text = screen_text(app)
        # Escapes and invisible characters are visible tokens; markup is literal text.
        assert "<ESC>[31mRED<ESC>]52;c;SGVsbG8=<BEL>" in text
        assert "[@click=app.quit]quit[/]" in text and "<U+202E>evil" in text
        # skill.md: its links, images, autolinks, raw HTML and entities are text, not actions.
        assert "Hostile [@click=app.quit]title[/]" in text
        assert "[docs](https://evil.example/a)" in text
        assert "<https://evil.example/auto>" in text and "<b>raw</b>" in text
        assert "&#27;[31m" in text
        assert "\x1b" not in text
        for block in scr.query(MarkdownBlock):
            for span in block._content.spans:
                meta = getattr(span.style, "meta", None) or {}
                assert "@click" not in meta, (block, span)
        await pilot.click(InertMarkdown)
        await pilot.press("enter")
        await until(pilot, lambda: app.is_running and isinstance(app.screen, CatalogueScreen))


class _MarkdownApp(App[None]):
    def compose(self) -> ComposeResult:
        yield InertMarkdown(id="md")


async def test_inert_markdown_makes_no_link_and_runs_no_action():
    app = _MarkdownApp()
    async with app.run_test(size=(100, 20)) as pilot:
        markdown = app.query_one(InertMarkdown)
        markdown.show(HOSTILE_SKILL)
        await until(pilot, lambda: "[docs](https://evil.example/a)" in screen_text(app))
        rendered = screen_text(app)
        assert "[docs](https://evil.example/a)" in rendered
        assert "<ESC>]8;;https://evil.example<BEL>link" in rendered
        for block in markdown.query(MarkdownBlock):
            for span in block._content.spans:
                assert "@click" not in (getattr(span.style, "meta", None) or {})
        # Even a link that got through would go nowhere.
        markdown.post_message(InertMarkdown.LinkClicked(markdown, "https://evil.example"))
        await pilot.pause()
        assert app.is_running


def test_inert_markdown_escapes_action_and_link_tags():
    text = inert_markdown("[@click=app.quit]x[/] [ /@a] [LINK=http://e]y[/link] [b]ok[/b] \x1b")
    assert text == "\\[@click=app.quit]x[/] \\[ /@a] \\[LINK=http://e]y\\[/link] [b]ok[/b] <ESC>"
