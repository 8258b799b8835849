"""The grants screen (`7`, or `g` from the approvals screen): the decisions made for a while, in
force and (on `e`) ended, with whose calls, to what, the effect, the per-call amount, how much of
the total is used and until when; `r` revokes the selected one after a confirmation."""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from typing import Any

import pytest
from helpers import FakeClock, agent_token
from textual.pilot import Pilot
from tui_support import (
    build_console,
    clear_notices,
    listed_notices,
    screen_text,
    started,
    until,
)

from svc_console.agent import AsyncAgent
from svc_console.broker.params import ApproveParams, DenyParams
from svc_console.core.states import State
from svc_console.runtime import Runtime
from svc_console.tui.app import ConsoleApp
from svc_console.tui.grants.screen import GrantsScreen
from svc_console.tui.grants.table import GrantsTable
from svc_console.tui.policies.dialogs import ConfirmPolicyChange

SEARCH = {"endpoint_id": "ep_websearch_basic", "purpose": "research"}  # 0.01 USDC a call


@pytest.fixture
def console(make_runtime: Callable[..., Runtime], clock: FakeClock) -> Callable[..., ConsoleApp]:
    return lambda **options: build_console(make_runtime, clock, **options)


async def pending(pilot: Pilot[Any], app: ConsoleApp, agent: str, query: str) -> str:
    broker = app.runtime.broker
    async with AsyncAgent(
        agent, app.runtime.paths.socket, token=agent_token(app.runtime.paths, agent)
    ) as client:
        request_id = (await client.submit(**SEARCH, inputs={"query": query}))["request_id"]
    await until(pilot, lambda: broker.get(request_id).state == State.pending)
    return request_id


async def two_grants(pilot: Pilot[Any], app: ConsoleApp) -> tuple[str, str]:
    """An approving grant for research-bot (an hour, 0.05 in all) and a denying one for
    scrape-bot (until the console stops)."""
    broker = app.runtime.broker
    first = await pending(pilot, app, "research-bot", "solar")
    second = await pending(pilot, app, "scrape-bot", "wind")
    await broker.approve(
        ApproveParams(request_id=first, grant_for="1h", grant_total=Decimal("0.05"))
    )
    await broker.deny(DenyParams(request_id=second, reason="not now", grant_for="session"))
    return first, second


def grants_table(app: ConsoleApp) -> GrantsTable:
    return app.screen.query_one(GrantsTable)


async def open_grants(pilot: Pilot[Any], count: int) -> None:
    await pilot.press("g")
    await until(pilot, lambda: isinstance(pilot.app.screen, GrantsScreen))
    await until(pilot, lambda: grants_table(pilot.app).row_count == count)


async def test_grants_are_listed_and_one_is_revoked_after_a_confirmation(console):
    app = console()
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await started(pilot)
        await two_grants(pilot, app)
        broker = app.runtime.broker
        await open_grants(pilot, 2)
        text = screen_text(app)
        assert "research-bot" in text and "scrape-bot" in text
        assert "0.00 / 0.05" in text and "the console stops" in text and "(60m left)" in text

        grants_table(app).move_cursor(row=0)
        await pilot.press("r")
        await until(pilot, lambda: isinstance(app.screen, ConfirmPolicyChange))
        assert "Revoke grant 1?" in screen_text(app)
        await pilot.press("escape")  # kept
        await until(pilot, lambda: [g.id for g in broker.grants.in_force()] == [1, 2])

        await pilot.press("r")
        await until(pilot, lambda: isinstance(app.screen, ConfirmPolicyChange))
        await pilot.click("#confirm")
        await until(pilot, lambda: isinstance(app.screen, GrantsScreen))
        await until(pilot, lambda: grants_table(app).row_count == 1)
        assert [g.id for g in broker.grants.in_force()] == [2]
        # Read from the notices said: a newer toast (requests arriving) may cover this one.
        await until(pilot, lambda: "Grant 1 revoked" in listed_notices(app))

        # The ended one is shown again, dimmed and saying when it ended, on `e`.
        await pilot.press("e")
        await until(pilot, lambda: grants_table(app).row_count == 2)
        assert "ended " in screen_text(app)
        grants_table(app).move_cursor(row=grants_table(app).get_row_index("1"))
        await until(pilot, lambda: "revoked by the operator" in screen_text(app))


async def test_a_grant_shows_what_it_used(console):
    app = console()
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await started(pilot)
        await two_grants(pilot, app)
        await open_grants(pilot, 2)
        # A call like the approved one, let through by the grant: the screen counts it.
        async with AsyncAgent(
            "research-bot",
            app.runtime.paths.socket,
            token=agent_token(app.runtime.paths, "research-bot"),
        ) as client:
            ticket = await client.submit(**SEARCH, inputs={"query": "tides"})
            await client.wait_for_outcome(ticket["request_id"], timeout_s=15)
        await until(pilot, lambda: "0.01 / 0.05" in screen_text(app))


async def grants_shown(pilot: Pilot[Any]) -> None:
    await started(pilot)
    await two_grants(pilot, pilot.app)
    await clear_notices(pilot)
    await open_grants(pilot, 2)


def test_snapshot_grants(snap_compare: Any, console):
    """Two grants, one approving within a total for an hour, one denying until the console stops."""
    assert snap_compare(console(), terminal_size=(120, 30), run_before=grants_shown)


def test_snapshot_grants_at_80x24(snap_compare: Any, console):
    """The same two grants on a small terminal: the footer keeps q and F1."""
    assert snap_compare(console(), terminal_size=(80, 24), run_before=grants_shown)


async def test_grants_move_with_j_and_k_and_revoke_with_the_approvals_dialog_keys(console):
    """The approvals screen's keys: j/k select; the revoke dialog names its key on the button
    that acts, starts on the safe one (enter keeps), Left/Right move between them, and the
    named key revokes."""
    app = console()
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await started(pilot)
        await two_grants(pilot, app)
        broker = app.runtime.broker
        await open_grants(pilot, 2)
        table = grants_table(app)
        table.move_cursor(row=0)
        await pilot.press("j")
        await until(pilot, lambda: table.cursor_row == 1)
        await pilot.press("k")
        await until(pilot, lambda: table.cursor_row == 0)

        await pilot.press("r")
        await until(pilot, lambda: isinstance(app.screen, ConfirmPolicyChange))
        dialog = app.screen
        await until(pilot, lambda: dialog.focused is not None)
        assert dialog.focused.id == "keep" and "r Revoke" in screen_text(app)
        await pilot.press("left")
        await until(pilot, lambda: dialog.focused.id == "confirm")
        await pilot.press("right")
        await until(pilot, lambda: dialog.focused.id == "keep")
        await pilot.press("enter")  # the safe button: kept
        await until(pilot, lambda: isinstance(app.screen, GrantsScreen))
        assert [g.id for g in broker.grants.in_force()] == [1, 2]

        await pilot.press("r")
        await until(pilot, lambda: isinstance(app.screen, ConfirmPolicyChange))
        await pilot.press("r")  # the key the button names
        await until(pilot, lambda: [g.id for g in broker.grants.in_force()] == [2])
        assert isinstance(app.screen, GrantsScreen)


async def revoke_asked(pilot: Pilot[Any]) -> None:
    app = pilot.app
    await started(pilot)
    await two_grants(pilot, app)
    await open_grants(pilot, 2)
    grants_table(app).move_cursor(row=0)
    await pilot.press("r")
    await until(pilot, lambda: isinstance(app.screen, ConfirmPolicyChange))
    await until(pilot, lambda: app.screen.focused is not None)


def test_snapshot_revoke_dialog(snap_compare: Any, console):
    """The revoke dialog: the acting button named by its key, the safe one focused."""
    assert snap_compare(console(), terminal_size=(120, 30), run_before=revoke_asked)


def test_snapshot_revoke_dialog_at_80x24(snap_compare: Any, console):
    assert snap_compare(console(), terminal_size=(80, 24), run_before=revoke_asked)
