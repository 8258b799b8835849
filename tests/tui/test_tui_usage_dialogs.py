"""The usage screen's dialogs where the operator sees them: both centred like every other dialog
(at 120x40 and at 80x24), and the filter's example dates taken from the screen's clock, never
fixed in the code."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest
from helpers import FakeClock
from test_tui_usage import NOON, console, open_usage, usage_clock
from textual.pilot import Pilot
from textual.widgets import Input
from tui_support import until

from svc_console.core.usage import DAY_S
from svc_console.tui.app import ConsoleApp
from svc_console.tui.usage.dialogs import UsageExportDialog, UsageFilterDialog, example_dates
from svc_console.tui.usage.screen import UsageScreen

__all__ = ["console", "usage_clock"]  # fixtures, shared with the usage tests

DIALOGS = {"f": UsageFilterDialog, "e": UsageExportDialog}


async def open_dialog(pilot: Pilot[Any], key: str) -> Any:
    await open_usage(pilot)
    await pilot.press(key)
    await until(pilot, lambda: isinstance(pilot.app.screen, DIALOGS[key]))
    await pilot.pause()  # laid out
    return pilot.app.screen


@pytest.mark.parametrize("size", [(120, 40), (80, 24)])
@pytest.mark.parametrize("key", ["f", "e"])
async def test_the_dialogs_open_in_the_middle(
    console: Callable[..., ConsoleApp], key: str, size: tuple[int, int]
):
    app = console(seeded=50)
    async with app.run_test(size=size) as pilot:
        dialog = await open_dialog(pilot, key)
        box = dialog.query_one("#dialog").region
        width, height = size
        assert abs(box.x - (width - box.right)) <= 1, box
        assert abs(box.y - (height - box.bottom)) <= 1, box
        await pilot.press("escape")
        await until(pilot, lambda: isinstance(app.screen, UsageScreen))


def test_example_dates_follow_the_clock():
    assert example_dates(NOON) == ("2026-05-01", "2026-05-27")
    assert example_dates(1_800_000_000.0) == ("2027-01-01", "2027-01-15")


async def test_the_filter_examples_are_this_months(
    console: Callable[..., ConsoleApp], usage_clock: FakeClock
):
    """Months after the seeded history, the examples name the clock's month, not a fixed one."""
    usage_clock.advance(200 * DAY_S)
    today = time.strftime("%Y-%m-%d", time.gmtime(usage_clock.now))
    app = console(seeded=50)
    async with app.run_test(size=(120, 40)) as pilot:
        dialog = await open_dialog(pilot, "f")
        assert dialog.query_one("#since", Input).placeholder == f"30d, {today[:8]}01 or empty"
        assert dialog.query_one("#until", Input).placeholder == f"{today} or empty"


@pytest.mark.parametrize("key", ["f", "e"])
def test_snapshot_dialog(snap_compare: Any, console: Callable[..., ConsoleApp], key: str):
    """Each dialog centred over the screen; the filter's examples from the frozen clock. The
    export's proposed file lies in a temporary folder: shown as a fixed one, for a stable image."""
    app = console(seeded=50)

    async def run_before(pilot: Pilot[Any]) -> None:
        dialog = await open_dialog(pilot, key)
        if key == "e":
            path = dialog.query_one("#usage-export-path", Input)
            path.value = "~/.svc-console/exports/usage-20260527-120000.csv"
            path.cursor_position = len(path.value)

    assert snap_compare(app, terminal_size=(120, 40), run_before=run_before)
