"""Providers by name on the usage screen, as on the approvals screen: from the ledger's catalogue
cache, or from the endpoint record of a request paid to the provider; an id neither knows is shown
as it is."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from helpers import FakeClock
from test_tui_usage import NOON, charge, console, open_usage, sync, usage_clock
from textual.widgets import Select
from tui_support import screen_text, until

from svc_console.config.paths import Paths
from svc_console.ledger import Ledger
from svc_console.ledger.catalogue_store import open_writer, store
from svc_console.ledger.usage_write import sync_usage
from svc_console.runtime import Runtime
from svc_console.sandbox.catalog import catalog
from svc_console.tui.app import ConsoleApp
from svc_console.tui.usage.dialogs import UsageFilterDialog

__all__ = ["console", "usage_clock"]  # fixtures, shared with the usage tests


def cache_the_catalogue(paths: Paths) -> None:
    path = paths.ledger(sandbox=True)
    Ledger(path).close()  # migrated, with the catalogue's tables
    conn = open_writer(path)
    try:
        store(conn, [catalog().get("ep_websearch_basic")], [], synced_at=NOON)
    finally:
        conn.close()


async def test_providers_are_shown_by_name_where_the_ledger_knows_it(
    console: Callable[..., ConsoleApp], paths: Paths
):
    paths.home.mkdir(parents=True, exist_ok=True, mode=0o700)
    sync(
        paths,
        [
            charge("ch_named", "0.75", provider="prov_searchly"),
            charge("ch_unknown", "0.25", provider="prov_nobody"),
        ],
    )
    cache_the_catalogue(paths)
    app = console()
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_usage(pilot)
        text = screen_text(app)
        table_lines = [line for line in text.splitlines() if "2026-05-27 11:00" in line]
        assert any("Searchly" in line for line in table_lines), table_lines
        assert any("prov_nobody" in line for line in table_lines), table_lines
        assert "prov_searchly" not in "".join(table_lines)
        breakdown = str(screen.query_one("#usage-providers").render())
        assert "Searchly" in breakdown and "prov_nobody" in breakdown
        # The detail gives both, so the name can be matched with an export (which has ids).
        screen.table.move_to(
            next(i for i, row in screen.table.rows.items() if row.id == "ch_named")
        )
        await until(pilot, lambda: "Searchly · prov_searchly" in screen_text(app))

        await pilot.press("f")
        await until(pilot, lambda: isinstance(app.screen, UsageFilterDialog))
        options = app.screen.query_one("#provider", Select)._options
        assert {(str(label), value) for label, value in options} >= {
            ("Searchly", "prov_searchly"),
            ("prov_nobody", "prov_nobody"),
        }


async def test_beside_a_postgresql_ledger_names_come_from_the_caches_own_file(
    paths: Paths, make_runtime: Callable[..., Runtime], postgres: Any, usage_clock: FakeClock
):
    """On PostgreSQL the catalogue cache is a local file of its own, the charges are in the
    database: the names are read from the one for the ids of the other."""
    url = postgres.new_database()
    paths.home.mkdir(parents=True, exist_ok=True, mode=0o700)
    ledger = Ledger(paths.ledger(sandbox=True), url=url)
    try:
        sync_usage(
            ledger,
            [
                charge("ch_named", "0.75", provider="prov_searchly"),
                charge("ch_unknown", "0.25", provider="prov_nobody"),
            ],
            now=NOON,
            service="https://svc.example",
        )
    finally:
        ledger.close()
    cache = paths.ledger(sandbox=True)
    assert not cache.exists()  # the ledger on PostgreSQL made no file
    conn = open_writer(cache)
    try:
        store(conn, [catalog().get("ep_websearch_basic")], [], synced_at=NOON)
    finally:
        conn.close()
    app = ConsoleApp(make_runtime(clock=usage_clock, ledger_url=url), cursor_blink=False)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_usage(pilot)
        await until(pilot, lambda: "Searchly" in str(screen.query_one("#usage-providers").render()))
        table_lines = [line for line in screen_text(app).splitlines() if "2026-05-27" in line]
        assert any("Searchly" in line for line in table_lines), table_lines
        assert any("prov_nobody" in line for line in table_lines), table_lines
