"""The usage screen against the real thing: a seeded or synced SQLite ledger, the sandbox over HTTP,
the broker, the console app; the operator is a Textual pilot pressing keys.

Snapshots fix the screen's look (empty, populated, flagged, 80x24) with the clock frozen and the
cursor not blinking; Pilot tests press every key of the screen and follow finance's full path:
sync from the service, filter, export, and compare the file with the ledger."""

from __future__ import annotations

import csv
import json
import stat
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from helpers import FakeClock, runtime_ledger
from postgres import runtime_ledger_of
from textual.pilot import Pilot
from textual.widgets import Input, RadioSet, Select
from tui_support import (
    build_console,
    clear_notices,
    listed_notices,
    notices,
    screen_text,
    until,
    usage_settled,
)

from svc_console.agent import AsyncAgent
from svc_console.broker.params import ApproveParams
from svc_console.config.paths import Paths
from svc_console.core.money import from_atomic
from svc_console.core.usage import DAY_S, UsageCharge, UsageFilter, iso_instant
from svc_console.ledger import usage_query as ledger_usage
from svc_console.ledger.readers import open_reader
from svc_console.ledger.usage_seed import DEFAULT_END, seed_usage
from svc_console.ledger.usage_write import sync_usage
from svc_console.runtime import Runtime
from svc_console.services.usage_export import FIELDS
from svc_console.tui import navigation
from svc_console.tui.app import ConsoleApp
from svc_console.tui.commands import ConsoleCommands
from svc_console.tui.usage.dialogs import UsageExportDialog, UsageFilterDialog
from svc_console.tui.usage.screen import UsageScreen
from svc_console.tui.usage.sync_status import SyncStatus

SEEDED = 1000
# Noon of the last seeded day: "the last 7 days" holds charges.
NOON = DEFAULT_END - DAY_S / 2
HOSTILE = "\x1b[31mRED\x1b]52;c;SGVsbG8=\x07 [@click=app.quit]x[/] \u202eevil"


# -- helpers ------------------------------------------------------------------------------------


def usage(app: ConsoleApp) -> UsageScreen:
    screen = app.screen
    assert isinstance(screen, UsageScreen), type(screen)
    return screen


def sync_shown(app: ConsoleApp) -> bool:
    """The background sync at start is over and the screen says so (screenshots are stable)."""
    follower = app.runtime.usage
    if follower is None:
        return True
    over = follower.last_synced_at is not None or follower.last_error is not None
    return over and usage(app).sync_status == SyncStatus.of(follower)


async def open_usage(pilot: Pilot[Any]) -> UsageScreen:
    app = pilot.app
    await until(pilot, lambda: getattr(app, "_started", False))
    await pilot.press("3")
    await until(pilot, lambda: usage_settled(app) and sync_shown(app))
    return usage(app)


def sync(paths: Paths, charges: list[UsageCharge]) -> None:
    """Charges stored as a sync stores them, before the console starts."""
    ledger = runtime_ledger(paths)
    try:
        sync_usage(ledger, charges, now=NOON, service="https://svc.example")
    finally:
        ledger.close()


def charge(charge_id: str, amount: str, **fields: Any) -> UsageCharge:
    wire = {
        "id": charge_id,
        "createdAt": iso_instant(NOON - 3600),
        "resourceId": "ep_websearch_basic",
        "provider": "prov_search",
        "agent": "research-bot",
        "domainType": "A7",
        "chain": "base",
        "protocol": "x402",
        "amountUsdc": amount,
        "idempotencyKey": None,
        "receipt": "0xfeed",
        **fields,
    }
    return UsageCharge.model_validate(wire)


@pytest.fixture
def usage_clock() -> FakeClock:
    return FakeClock(NOON)


@pytest.fixture
def console(
    make_runtime: Callable[..., Runtime], usage_clock: FakeClock, paths: Paths
) -> Callable[..., ConsoleApp]:
    def build(*, seeded: int = 0) -> ConsoleApp:
        paths.home.mkdir(parents=True, exist_ok=True, mode=0o700)
        if seeded:
            url = runtime_ledger_of(paths.home)
            seed_usage(paths.ledger(sandbox=True), seeded, days=60, url=url)
        return build_console(make_runtime, usage_clock)

    return build


def read_ledger(paths: Paths, f: UsageFilter) -> list[ledger_usage.UsageRow]:
    conn = open_reader(paths.ledger(sandbox=True), runtime_ledger_of(paths.home))
    try:
        return list(ledger_usage.stream(conn, f))
    finally:
        conn.close()


# -- snapshots ----------------------------------------------------------------------------------


def test_snapshot_empty(snap_compare: Any, console: Callable[..., ConsoleApp]):
    """Nothing synced yet: totals of zero and the way to fetch the history."""
    app = console()

    async def run_before(pilot: Pilot[Any]) -> None:
        await open_usage(pilot)

    assert snap_compare(app, terminal_size=(120, 40), run_before=run_before)


def test_snapshot_populated(snap_compare: Any, console: Callable[..., ConsoleApp]):
    """A thousand seeded charges: totals, the chart, the breakdowns, the newest rows."""
    app = console(seeded=SEEDED)

    async def run_before(pilot: Pilot[Any]) -> None:
        await open_usage(pilot)

    assert snap_compare(app, terminal_size=(120, 40), run_before=run_before)


def test_snapshot_reconciliation_flags(
    snap_compare: Any, console: Callable[..., ConsoleApp], paths: Paths
):
    """Only flagged charges (x): each one in red with why, the first one's detail below."""
    app = console(seeded=SEEDED)

    async def run_before(pilot: Pilot[Any]) -> None:
        await open_usage(pilot)
        await pilot.press("x")
        await until(pilot, lambda: usage_settled(app) and usage(app).filter.state == "flagged")

    assert snap_compare(app, terminal_size=(120, 40), run_before=run_before)


def test_snapshot_narrow(snap_compare: Any, console: Callable[..., ConsoleApp]):
    """80x24: fewer columns, a shorter chart, the detail cut at the edge, never wrapped."""
    app = console(seeded=SEEDED)

    async def run_before(pilot: Pilot[Any]) -> None:
        await open_usage(pilot)

    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)


# -- keys ---------------------------------------------------------------------------------------


async def test_moving_and_paging_show_the_ledgers_rows(
    console: Callable[..., ConsoleApp], paths: Paths
):
    app = console(seeded=SEEDED)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_usage(pilot)
        table = screen.table
        newest_first = read_ledger(paths, UsageFilter())[::-1]
        assert table.total == SEEDED
        assert table.selected.id == newest_first[0].id

        await pilot.press("j", "down")
        await until(pilot, lambda: table.cursor == 2 and table.selected.id == newest_first[2].id)
        await pilot.press("k")
        await until(pilot, lambda: table.selected.id == newest_first[1].id)
        await until(pilot, lambda: newest_first[1].id in screen_text(app))  # the detail names it

        page = table.page
        for n in range(1, 6):
            await pilot.press("pagedown")
            await until(pilot, lambda: usage_settled(app))
            assert table.cursor == 1 + n * page
            top = int(table.scroll_y)
            assert [table.rows[i].id for i in range(top, top + page)] == [
                r.id for r in newest_first[top : top + page]
            ]
        await pilot.press("pageup")
        await until(pilot, lambda: usage_settled(app))
        assert table.cursor == 1 + 4 * page

        await pilot.press("end")
        await until(pilot, lambda: usage_settled(app))
        assert table.cursor == SEEDED - 1 and table.selected.id == newest_first[-1].id
        assert newest_first[-1].id in screen_text(app)
        await pilot.press("pageup")
        await until(pilot, lambda: usage_settled(app))
        assert table.selected.id == newest_first[SEEDED - 1 - page].id

        await pilot.press("home")
        await until(pilot, lambda: usage_settled(app))
        assert table.cursor == 0 and int(table.scroll_y) == 0
        assert table.selected.id == newest_first[0].id
        # Never more rows in memory than the cache allows, however far the operator went.
        assert len(table.rows) <= 3000


async def test_flagged_period_and_clear_keys(console: Callable[..., ConsoleApp], paths: Paths):
    app = console(seeded=SEEDED)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_usage(pilot)
        everything = read_ledger(paths, UsageFilter())

        await pilot.press("x")
        await until(pilot, lambda: usage_settled(app) and screen.filter.state == "flagged")
        flagged = [r for r in everything if r.flagged]
        assert flagged and screen.table.total == len(flagged)
        assert screen.summary.totals.count == len(flagged)
        assert all(row.flagged for row in screen.table.rows.values())
        text = screen_text(app)
        assert "state flagged" in text and ("NO APPROVAL" in text or "ABOVE APPROVAL" in text)
        await pilot.press("x")
        await until(pilot, lambda: usage_settled(app) and screen.filter.state is None)
        assert screen.table.total == SEEDED

        # p: the last 7 days (today included), then 30, 90, then all dates again.
        today = int(NOON // DAY_S)
        for days in (7, 30, 90):
            await pilot.press("p")
            await until(pilot, lambda: usage_settled(app) and screen.filter.since is not None)
            since = (today - days + 1) * DAY_S
            assert screen.filter.since == since
            assert screen.table.total == sum(1 for r in everything if r.at >= since)
        await pilot.press("p")
        await until(pilot, lambda: usage_settled(app) and screen.filter.since is None)
        assert screen.table.total == SEEDED

        await pilot.press("x", "p")
        await until(pilot, lambda: usage_settled(app) and screen.filter.since is not None)
        await pilot.press("c")
        await until(pilot, lambda: usage_settled(app) and screen.filter.is_default)
        assert screen.table.total == SEEDED
        assert "all dates" in screen_text(app)


async def test_filter_dialog(console: Callable[..., ConsoleApp], paths: Paths):
    app = console(seeded=SEEDED)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_usage(pilot)
        everything = read_ledger(paths, UsageFilter())
        agent = everything[-1].agent

        await pilot.press("f")
        await until(pilot, lambda: isinstance(app.screen, UsageFilterDialog))
        dialog = app.screen
        # Offered values are those in the ledger.
        assert agent in [v for _, v in dialog.query_one("#agent", Select)._options]
        await pilot.press(*"yesterday")
        await pilot.press("enter")
        await until(pilot, lambda: "is not a time" in screen_text(app))
        assert isinstance(app.screen, UsageFilterDialog)

        dialog.query_one("#since", Input).value = ""
        await pilot.press(*"2026-05-01")
        dialog.query_one("#until", Input).value = "2026-05-20"
        dialog.query_one("#agent", Select).value = agent
        dialog.query_one("#state", Select).value = "ok"
        await pilot.click("#confirm")
        await until(pilot, lambda: usage_settled(app) and screen.filter.agent == agent)

        since, until_ = 1_777_593_600.0, 1_779_321_600.0  # 2026-05-01 and 2026-05-21, UTC
        assert screen.filter == UsageFilter(since=since, until=until_, agent=agent, state="ok")
        expected = [
            r for r in everything if since <= r.at < until_ and r.agent == agent and not r.flagged
        ]
        assert screen.table.total == len(expected) > 0
        assert screen.summary.totals.amount == sum(r.amount for r in expected)
        assert "2026-05-01 … 2026-05-20" in screen_text(app)

        # escape leaves the filter as it was; "Clear all" clears it.
        await pilot.press("f")
        await until(pilot, lambda: isinstance(app.screen, UsageFilterDialog))
        await pilot.press("escape")
        await until(pilot, lambda: isinstance(app.screen, UsageScreen))
        assert screen.filter.agent == agent
        await pilot.press("f")
        await until(pilot, lambda: isinstance(app.screen, UsageFilterDialog))
        await pilot.click("#clear")
        await until(pilot, lambda: usage_settled(app) and screen.filter.is_default)


async def test_export_usage_and_compare_the_file_with_the_ledger(
    console: Callable[..., ConsoleApp], paths: Paths
):
    """Finance's full path: filter, export to CSV and to JSON from the screen, and find in each
    file exactly the ledger's rows under that filter, oldest first."""
    app = console(seeded=SEEDED)
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        screen = await open_usage(pilot)
        await pilot.press("p")  # the last 7 days
        await until(pilot, lambda: usage_settled(app) and screen.filter.since is not None)
        f = screen.filter
        expected = read_ledger(paths, f)
        assert 0 < len(expected) < SEEDED

        await pilot.press("e")
        await until(pilot, lambda: isinstance(app.screen, UsageExportDialog))
        proposed = app.screen.query_one("#usage-export-path", Input).value
        assert proposed == str(paths.home / "exports" / "usage-20260527-120000.csv")
        await pilot.press("enter")
        await until(pilot, lambda: "Usage exported" in notices(app))
        csv_path = Path(proposed)
        assert stat.S_IMODE(csv_path.stat().st_mode) == 0o600
        with csv_path.open(newline="") as handle:
            rows = list(csv.reader(handle))
        assert rows[0] == list(FIELDS)
        assert [r[0] for r in rows[1:]] == [r.id for r in expected]
        for line, row in zip(rows[1:], expected, strict=True):
            item = dict(zip(FIELDS, line, strict=True))
            assert item["time"] == iso_instant(row.at)
            assert Decimal(item["amount_usdc"]) == from_atomic(row.amount)
            assert item["reconciled"] == row.state and item["agent"] == row.agent
        assert sum(Decimal(r[FIELDS.index("amount_usdc")]) for r in rows[1:]) == from_atomic(
            screen.summary.totals.amount
        )

        await pilot.press("e")
        await until(pilot, lambda: isinstance(app.screen, UsageExportDialog))
        await pilot.click("#fmt-json")
        await until(pilot, lambda: app.screen.query_one(RadioSet).pressed_index == 1)
        json_path = Path(app.screen.query_one("#usage-export-path", Input).value)
        assert json_path.suffix == ".json"
        await pilot.press("enter")
        await until(pilot, lambda: json_path.exists())
        exported = json.loads(json_path.read_text())
        assert [item["id"] for item in exported] == [r.id for r in expected]
        flagged = [item for item in exported if item["reconciled"] != "ok"]
        assert all(item["flag_reason"] for item in flagged)
        assert stat.S_IMODE(json_path.stat().st_mode) == 0o600

        # escape exports nothing.
        await pilot.press("e")
        await until(pilot, lambda: isinstance(app.screen, UsageExportDialog))
        await pilot.press("escape")
        await until(pilot, lambda: isinstance(app.screen, UsageScreen))
        assert sorted(p.name for p in (paths.home / "exports").iterdir()) == sorted(
            [csv_path.name, json_path.name]
        )


async def test_sync_fetches_the_services_charges_and_reconciles_them(
    console: Callable[..., ConsoleApp],
):
    """A request approved and paid through the console, then `s`: the service's charge is in the
    usage table, matched with the approval; `r` re-reads what changed behind the screen."""
    app = console()
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        screen = await open_usage(pilot)
        assert screen.table.total == 0
        assert "No usage synced yet" in screen_text(app)
        broker = app.runtime.broker
        async with AsyncAgent("research-bot", app.runtime.paths.socket) as agent:
            ticket = await agent.submit(
                endpoint_id="ep_websearch_basic",
                inputs={"query": "solar"},
                purpose="usage sync test",
            )
            await until(pilot, lambda: broker.get(ticket["request_id"]).state == "pending")
            await broker.approve(ApproveParams(request_id=ticket["request_id"]))
            done = await agent.wait_for_outcome(ticket["request_id"], timeout_s=15)
        assert done["state"] == "succeeded"

        await pilot.press("s")
        # Read in the list of notices said: the arrival's announcement may come after the sync's
        # and be the one drawn.
        await until(pilot, lambda: "Usage synced 1 new" in listed_notices(app))
        await until(pilot, lambda: usage_settled(app) and screen.table.total == 1)
        row = screen.table.rows[0]
        assert row.request_id == ticket["request_id"] and row.state == "ok"
        assert row.agent == "research-bot" and row.decision == "approved"
        assert from_atomic(row.amount) == Decimal(done["outcome"]["charged_usdc"])

        # Syncing again finds nothing new.
        await clear_notices(pilot)
        await pilot.press("s")
        await until(pilot, lambda: "Usage synced 0 new, 1 unchanged" in listed_notices(app))
        assert screen.table.total == 1

        # A charge written behind the screen's back appears on `r`.
        sync_usage(app.runtime.ledger, [charge("ch_other", "0.5")], service="https://svc.example")
        await pilot.press("r")
        await until(pilot, lambda: usage_settled(app) and screen.table.total == 2)
        assert screen.summary.totals.flagged_count == 1


async def test_untrusted_text_is_shown_inert(console: Callable[..., ConsoleApp], paths: Paths):
    """Escape sequences, markup and bidi overrides from the service, each in a field the table,
    the breakdowns and the detail show: all visible as text, none acting."""
    paths.home.mkdir(parents=True, exist_ok=True, mode=0o700)
    hostile = {
        "agent": "\x1b[31mRED\x07",
        "provider": "[@click=app.quit]x[/]",
        "resourceId": "\u202eevil",
        "chain": "[b]base",
    }
    sync(paths, [charge("ch_evil", "1.25", **hostile)])
    app = console()
    async with app.run_test(size=(160, 40)) as pilot:
        await open_usage(pilot)
        text = screen_text(app)
        assert text.count("<ESC>[31mRED<BEL>") >= 3  # table, per agent, detail
        assert text.count("[@click=app.quit]x[/]") >= 2  # table, per provider
        assert "<U+202E>evil" in text and "[b]base" in text
        assert "\x1b" not in text and "\u202e" not in text and "\x07" not in text
        for target in ("#usage-providers", "#usage-agents", "#usage-detail", "#usage-table"):
            await pilot.click(target)
        await pilot.pause()
        assert app.is_running and app.return_code is None


async def test_the_screen_is_registered_with_its_key_and_commands(
    console: Callable[..., ConsoleApp],
):
    app = console()
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_usage(pilot)
        entry = navigation.entry_for(screen)
        assert entry is not None and (entry.name, entry.key) == ("usage", "3")
        keys = {binding.id: binding.key for binding in screen.BINDINGS}  # type: ignore[union-attr]
        assert keys["usage.export"] == "e" and keys["usage.filters"] == "f"
        titles = [title for title, _, _ in ConsoleCommands(screen).entries()]
        assert {"Filters", "Flagged", "Export", "Sync", "Period", "Clear"} <= set(titles)
        # Back to the approvals screen and here again: the same screen, still usage_settled.
        await pilot.press("1")
        await until(pilot, lambda: not isinstance(app.screen, UsageScreen))
        await pilot.press("3")
        await until(pilot, lambda: app.screen is screen and usage_settled(app))
