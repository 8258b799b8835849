"""The operator passphrase, asked once at start when one is set: a wrong one is refused and asked
again, the right one opens the console, escape quits without starting anything."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from helpers import FakeClock
from textual.pilot import Pilot
from textual.widgets import Input
from tui_support import build_console, screen_text, secret_asked, started, type_text, until

from svc_console.config.operator_passphrase import OperatorPassphrase
from svc_console.config.paths import Paths
from svc_console.runtime import Runtime
from svc_console.tui.app import ConsoleApp
from svc_console.tui.unlock import UnlockScreen

PASSPHRASE = "lighthouse at dawn"


@pytest.fixture
def console(
    paths: Paths, make_runtime: Callable[..., Runtime], clock: FakeClock
) -> Callable[[], ConsoleApp]:
    OperatorPassphrase(paths.operator_passphrase).set(PASSPHRASE)
    return lambda: build_console(make_runtime, clock)


async def asked(pilot: Pilot[Any]) -> None:
    await secret_asked(pilot, UnlockScreen)


async def test_a_wrong_passphrase_is_refused_and_the_right_one_opens_the_console(console):
    app = console()
    async with app.run_test(size=(120, 40)) as pilot:
        await asked(pilot)
        await type_text(pilot, "not the one")
        await pilot.press("enter")
        await until(pilot, lambda: "Wrong passphrase (1 attempt(s))" in screen_text(app))
        assert isinstance(app.screen, UnlockScreen)
        assert "not the one" not in screen_text(app)  # masked, then cleared
        assert app.screen.query_one(Input).value == ""
        await type_text(pilot, PASSPHRASE)
        await pilot.press("enter")
        await started(pilot)


async def test_escape_quits_without_opening_the_console(console):
    app = console()
    async with app.run_test(size=(120, 40)) as pilot:
        await asked(pilot)
        await pilot.press("escape")
        await until(pilot, lambda: app.return_code == 1)


def test_snapshot_the_passphrase_asked_at_start(snap_compare: Any, console):
    app = console()

    async def run_before(pilot: Pilot[Any]) -> None:
        await asked(pilot)
        await type_text(pilot, "secret")

    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)
