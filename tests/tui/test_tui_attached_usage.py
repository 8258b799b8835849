"""The usage screen of a console attached to a broker that runs elsewhere (here: started in
process, as `serve` starts it, or beside the test on a loop of its own for the snapshot): the
history, its summary, the filters, the detail and the export, read from the broker's ledger
read-only. The sync stays with the broker's console: the screen says so, with the last time the
ledger shows a sync, `s` tells the operator so and fetches nothing, and nothing the operator does
here writes the ledger."""

from __future__ import annotations

import csv
import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from attached_support import broker_beside
from helpers import FakeClock
from postgres import runtime_ledger_of
from test_tui_attached_snapshots import attached_app
from test_tui_usage import NOON, SEEDED, charge, read_ledger
from textual.pilot import Pilot
from textual.widgets import Input
from tui_support import listed_notices, notices, rows, screen_text, type_text, until, usage_settled

from svc_console.config.paths import Paths
from svc_console.core.usage import UsageFilter
from svc_console.ledger import Ledger
from svc_console.ledger.readers import open_reader
from svc_console.ledger.usage_seed import seed_usage
from svc_console.ledger.usage_write import sync_usage
from svc_console.runtime import Runtime
from svc_console.services.attached_console import AttachedConsole, SyncedElsewhere
from svc_console.services.broker_probe import running_broker
from svc_console.tui.app import ConsoleApp
from svc_console.tui.attached.served_elsewhere import ServedElsewhere
from svc_console.tui.usage.dialogs import UsageExportDialog, UsageFilterDialog
from svc_console.tui.usage.screen import UsageScreen

SYNCED_AT = NOON - 600  # when the broker's console last stored a sync: 11:50 UTC


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(NOON)


def seed(paths: Paths, *, url: str | None = None) -> None:
    """A history as the broker's console left it, before the broker starts: seeded charges,
    and one charge stored by a sync (which the ledger records, with its time). In the ledger
    at `url`, else in the one the test's runtimes open."""
    paths.home.mkdir(parents=True, exist_ok=True, mode=0o700)
    url = url or runtime_ledger_of(paths.home)
    seed_usage(paths.ledger(sandbox=True), SEEDED, days=60, url=url)
    ledger = Ledger(paths.ledger(sandbox=True), url=url)
    try:
        sync_usage(
            ledger, [charge("ch_synced", "0.25")], now=SYNCED_AT, service="https://svc.example"
        )
    finally:
        ledger.close()


async def attach(runtime: Runtime, clock: FakeClock, url: str | None = None) -> ConsoleApp:
    import asyncio

    # In a thread: the broker answers from this test's own loop, which must not be blocked.
    hello = await asyncio.to_thread(running_broker, runtime.paths.operator_socket)
    assert hello is not None, "the broker answers on its operator socket"
    url = url or runtime.resolved_ledger_url()
    console = AttachedConsole(runtime.paths, hello, clock=clock, ledger_url=url)
    return ConsoleApp(console, cursor_blink=False)


def usage(app: ConsoleApp) -> UsageScreen:
    screen = app.screen
    assert isinstance(screen, UsageScreen), type(screen)
    return screen


def last_sync_read(app: ConsoleApp) -> bool:
    screen = app.screen
    return isinstance(screen, UsageScreen) and screen.sync_status.synced_at is not None


async def open_usage(pilot: Pilot[Any]) -> UsageScreen:
    app = pilot.app
    await rows(pilot, 0)
    await until(pilot, lambda: app.screens_open)
    await pilot.press("3")
    await until(pilot, lambda: usage_settled(app) and last_sync_read(app))
    return usage(app)


def synced_label(app: ConsoleApp) -> str:
    return str(app.screen.query_one("#usage-synced").render())


def ledger_digest(path: Path) -> str:
    """Every row of every table of the ledger, as one digest (read-only, as the screen reads)."""
    conn = open_reader(path)
    try:
        return hashlib.sha256("\n".join(conn.iterdump()).encode()).hexdigest()
    finally:
        conn.close()


async def broker_synced(pilot: Pilot[Any], runtime: Runtime) -> None:
    """The broker's own start-up sync is over, so that it writes nothing more meanwhile."""
    follower = runtime.usage
    assert follower is not None
    await until(pilot, lambda: follower.last_synced_at is not None or follower.last_error)


# -- snapshot -----------------------------------------------------------------------------------


def test_snapshot_the_usage_screen_of_an_attached_console(
    snap_compare: Any, paths: Paths, make_runtime: Callable[..., Runtime], clock: FakeClock
):
    """The seeded history, its summary and detail, as the broker's console shows them; the label
    says the broker's console syncs, and when it last stored a sync."""
    seed(paths)
    runtime = make_runtime(clock=clock, ids=True)
    with broker_beside(runtime):
        app = attached_app(paths, clock)

        async def run_before(pilot: Pilot[Any]) -> None:
            await open_usage(pilot)

        assert snap_compare(app, terminal_size=(120, 40), run_before=run_before)


def test_snapshot_the_usage_screen_of_an_attached_console_at_80x24(
    snap_compare: Any, paths: Paths, make_runtime: Callable[..., Runtime], clock: FakeClock
):
    """Narrow: the label's short form leaves the totals whole."""
    seed(paths)
    runtime = make_runtime(clock=clock, ids=True)
    with broker_beside(runtime):
        app = attached_app(paths, clock)

        async def run_before(pilot: Pilot[Any]) -> None:
            await open_usage(pilot)

        assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)


# -- keys ---------------------------------------------------------------------------------------


async def test_filters_and_the_detail_of_an_attached_usage_screen(
    paths: Paths, make_runtime: Callable[..., Runtime], keep_started: Any, clock: FakeClock
):
    seed(paths)
    runtime = await keep_started(make_runtime(clock=clock, ids=True))
    app = await attach(runtime, clock)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_usage(pilot)
        everything = read_ledger(paths, UsageFilter())
        newest_first = everything[::-1]
        assert screen.table.total == len(everything) == SEEDED + 1
        assert "synced by the broker's console · 11:50 UTC" in synced_label(app)
        assert isinstance(screen, UsageScreen) and not isinstance(screen, ServedElsewhere)

        # The detail follows the cursor.
        await pilot.press("j")
        await until(pilot, lambda: screen.table.selected.id == newest_first[1].id)
        assert newest_first[1].id in str(screen.query_one("#usage-detail").render())

        # x: flagged only; p: the last 7 days; c: every filter cleared.
        await pilot.press("x")
        await until(pilot, lambda: usage_settled(app) and screen.filter.state == "flagged")
        assert screen.table.total == sum(1 for r in everything if r.flagged) > 0
        await pilot.press("c", "p")
        await until(pilot, lambda: usage_settled(app) and screen.filter.since is not None)
        assert screen.table.total == sum(1 for r in everything if r.at >= screen.filter.since)
        await pilot.press("c")
        await until(pilot, lambda: usage_settled(app) and screen.filter.is_default)

        # f: the dialog offers the ledger's values; a date that is not one is refused, and the
        # filter stays as it was.
        await pilot.press("f")
        await until(pilot, lambda: isinstance(app.screen, UsageFilterDialog))
        await type_text(pilot, "yesterday")
        await pilot.press("enter")
        await until(pilot, lambda: "is not a time" in screen_text(app))
        assert isinstance(app.screen, UsageFilterDialog) and screen.filter.is_default
        app.screen.query_one("#since", Input).value = "2026-05-20"
        await pilot.press("enter")
        await until(pilot, lambda: usage_settled(app) and screen.filter.since is not None)
        since = screen.filter.since
        assert screen.table.total == sum(1 for r in everything if r.at >= since)
        assert screen.summary.totals.amount == sum(r.amount for r in everything if r.at >= since)


async def test_an_attached_usage_screen_exports_what_it_shows(
    paths: Paths, make_runtime: Callable[..., Runtime], keep_started: Any, clock: FakeClock
):
    seed(paths)
    runtime = await keep_started(make_runtime(clock=clock, ids=True))
    app = await attach(runtime, clock)
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        screen = await open_usage(pilot)
        await pilot.press("x")
        await until(pilot, lambda: usage_settled(app) and screen.filter.state == "flagged")
        expected = read_ledger(paths, screen.filter)

        # A folder for a file is refused in the dialog: nothing is written.
        await pilot.press("e")
        await until(pilot, lambda: isinstance(app.screen, UsageExportDialog))
        field = app.screen.query_one("#usage-export-path", Input)
        proposed = field.value
        assert proposed == str(paths.home / "exports" / "usage-20260527-120000.csv")
        field.value = str(paths.home)
        await pilot.press("enter")
        await until(pilot, lambda: "is a folder; give a file name" in screen_text(app))
        assert isinstance(app.screen, UsageExportDialog)
        assert not (paths.home / "exports").exists()

        field.value = proposed
        await pilot.press("enter")
        await until(pilot, lambda: "Usage exported" in notices(app))
        with Path(proposed).open(newline="") as handle:
            exported = list(csv.reader(handle))
        assert [line[0] for line in exported[1:]] == [r.id for r in expected]


@pytest.mark.engines("sqlite")  # its digest reads the ledger's file
async def test_the_sync_key_of_an_attached_console_says_the_brokers_console_syncs(
    paths: Paths, make_runtime: Callable[..., Runtime], keep_started: Any, clock: FakeClock
):
    """`s` fetches nothing and says who does; `r` reads what the broker's console stored since,
    and the label follows it."""
    seed(paths)
    runtime = await keep_started(make_runtime(clock=clock, ids=True))
    app = await attach(runtime, clock)
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        screen = await open_usage(pilot)
        await broker_synced(pilot, runtime)
        before = ledger_digest(paths.ledger(sandbox=True))
        await pilot.press("s")
        await until(pilot, lambda: "Usage synced elsewhere" in notices(app))
        said = notices(app)
        assert "the console running it syncs the usage history" in said
        assert "Nothing was fetched here" in said
        assert ledger_digest(paths.ledger(sandbox=True)) == before
        assert screen.table.total == SEEDED + 1

        # The broker's console syncs a new charge: `r` shows it and when it was stored.
        sync_usage(
            runtime.ledger,
            [charge("ch_later", "0.5")],
            now=NOON - 60,
            service="https://svc.example",
        )
        await pilot.press("r")
        await until(pilot, lambda: usage_settled(app) and screen.table.total == SEEDED + 2)
        later = "synced by the broker's console · 11:59 UTC"
        await until(pilot, lambda: later in synced_label(app))


@pytest.mark.engines("sqlite")  # its digest reads the ledger's file
async def test_an_attached_usage_screen_writes_nothing_to_the_ledger(
    paths: Paths, make_runtime: Callable[..., Runtime], keep_started: Any, clock: FakeClock
):
    """Every key of the screen, the export and the sync key included: the ledger is the same,
    row for row, before and after."""
    seed(paths)
    runtime = await keep_started(make_runtime(clock=clock, ids=True))
    app = await attach(runtime, clock)
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        screen = await open_usage(pilot)
        await broker_synced(pilot, runtime)
        before = ledger_digest(paths.ledger(sandbox=True))
        await pilot.press("j", "pagedown", "end", "home", "x", "p")
        await until(pilot, lambda: usage_settled(app) and screen.filter.since is not None)
        await pilot.press("f")
        await until(pilot, lambda: isinstance(app.screen, UsageFilterDialog))
        await pilot.press("escape")
        await until(pilot, lambda: app.screen is screen)
        await pilot.press("e")
        await until(pilot, lambda: isinstance(app.screen, UsageExportDialog))
        await pilot.press("enter")
        await until(pilot, lambda: "Usage exported" in notices(app))
        await pilot.press("s", "r", "c")
        await until(pilot, lambda: usage_settled(app) and screen.filter.is_default)
        await until(pilot, lambda: "Usage synced elsewhere" in listed_notices(app))
    assert ledger_digest(paths.ledger(sandbox=True)) == before


async def test_an_attached_console_syncs_nothing_when_asked_in_code(paths: Paths, clock: FakeClock):
    """The source itself refuses a sync, with the reason, should anything ask it."""
    hello = {"service": {"sandbox": True, "base_url": "http://127.0.0.1:1"}}
    source = AttachedConsole(paths, hello, clock=clock).usage_source()
    with pytest.raises(SyncedElsewhere, match="synced by the console running the broker"):
        await source.sync()


async def test_an_attached_console_with_a_bad_ledger_url_says_so_and_reads_nothing(
    paths: Paths, clock: FakeClock, capsys: pytest.CaptureFixture[str]
):
    """A real service's ledger named by a URL that is not PostgreSQL's: the console does not
    start, says why, and no ledger file is made."""
    paths.home.mkdir(parents=True, exist_ok=True, mode=0o700)
    paths.settings.write_text('[ledger]\nurl = "mysql://ledger"\n')
    hello = {"service": {"sandbox": False, "base_url": "https://api.example"}}
    app = ConsoleApp(AttachedConsole(paths, hello, clock=clock), cursor_blink=False)
    async with app.run_test(size=(100, 30)) as pilot:
        await until(pilot, lambda: app.return_code == 1)
    said = " ".join(capsys.readouterr().err.split())  # the exit message, on the terminal
    assert "svc-console could not start" in said and "must be a postgresql:// URL" in said
    assert not paths.ledger(sandbox=False).exists()


async def test_an_attached_usage_screen_reads_a_postgresql_ledger_with_its_url(
    paths: Paths,
    make_runtime: Callable[..., Runtime],
    postgres: Any,
    clock: FakeClock,
    keep_started: Any,
):
    url = postgres.new_database()
    seed(paths, url=url)
    runtime = await keep_started(make_runtime(clock=clock, ledger_url=url))
    app = await attach(runtime, clock, url=url)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_usage(pilot)
        assert screen.ledger_url == url
        assert screen.table.total == SEEDED + 1
        assert "synced by the broker's console · 11:50 UTC" in synced_label(app)
