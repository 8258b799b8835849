"""A charge the service reported twice with other facts, as finance sees it on the usage screen:
both versions in the table, the second labelled CONFLICT with why, the totals counting both; the
filter dialog's `conflict` state and `x` (flagged only) both show it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from helpers import runtime_ledger
from test_tui_usage import NOON, charge, console, open_usage, usage, usage_clock
from textual.pilot import Pilot
from textual.widgets import Select
from tui_support import screen_text, until, usage_settled

from svc_console.config.paths import Paths
from svc_console.core.usage import iso_instant
from svc_console.ledger.usage_write import sync_usage
from svc_console.tui.app import ConsoleApp
from svc_console.tui.usage.dialogs import UsageFilterDialog

__all__ = ["console", "usage_clock"]  # fixtures, shared with the usage tests

SERVICE = "sandbox-0123456789abcdef"


def two_versions(paths: Paths) -> None:
    """Three charges, then the service lists ch_000002 again at three times the amount."""
    paths.home.mkdir(parents=True, exist_ok=True, mode=0o700)
    ledger = runtime_ledger(paths)
    try:
        first = [
            charge(f"ch_00000{n}", "0.01", createdAt=iso_instant(NOON - 3600 * n))
            for n in (1, 2, 3)
        ]
        sync_usage(ledger, first, now=NOON, service=SERVICE)
        again = charge("ch_000002", "0.03", createdAt=iso_instant(NOON - 1800), receipt="0xbeef")
        sync_usage(ledger, [again], now=NOON, service=SERVICE)
    finally:
        ledger.close()


def test_snapshot_a_conflict(snap_compare: Any, console: Callable[..., ConsoleApp], paths: Paths):
    """The second version on top (the newest), in red, CONFLICT with why in the detail; the
    first version below it as it was; four charges in the totals."""
    two_versions(paths)
    app = console()

    async def run_before(pilot: Pilot[Any]) -> None:
        await open_usage(pilot)
        await until(pilot, lambda: "CONFLICT (version 2)" in screen_text(app))

    assert snap_compare(app, terminal_size=(120, 40), run_before=run_before)


async def test_the_conflict_state_and_flagged_only_show_the_second_version(
    console: Callable[..., ConsoleApp], paths: Paths
):
    two_versions(paths)
    app = console()
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_usage(pilot)
        table = screen.table
        assert table.total == 4
        assert "4 charges · 0.06 USDC" in screen_text(app)
        top = table.selected
        assert (top.id, top.version, top.state) == ("ch_000002", 2, "conflict")
        text = screen_text(app)
        assert "CONFLICT (version 2): the service reported this charge before" in text
        assert f"ch_000002 · {SERVICE} · " in text
        await pilot.press("j", "j")  # the first version, below: as it was
        await until(pilot, lambda: table.cursor == 2)
        first = table.selected
        assert (first.id, first.version, first.amount, first.flag) == (
            "ch_000002",
            1,
            10_000,
            "no_key",
        )

        await pilot.press("f")
        await until(pilot, lambda: isinstance(app.screen, UsageFilterDialog))
        app.screen.query_one("#state", Select).value = "conflict"
        await pilot.press("enter")
        await until(pilot, lambda: usage(app).filter.state == "conflict" and usage_settled(app))
        assert table.total == 1 and table.selected.id == "ch_000002"

        await pilot.press("c")
        await until(pilot, lambda: usage(app).filter.is_default and usage_settled(app))
        await pilot.press("x")
        await until(pilot, lambda: usage(app).filter.state == "flagged" and usage_settled(app))
        flagged = [table.rows[i] for i in range(table.total or 0)]
        assert ("ch_000002", 2) in [(r.id, r.version) for r in flagged]
