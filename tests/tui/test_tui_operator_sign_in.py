"""The console that runs the broker itself, once operator accounts exist: it asks the operator's
name (`[operator] name` filled in) and token at start, as an attached console does; the right
token opens it and its decisions name that operator; a wrong one is refused, counted, kept in
the audit chain, and decides nothing; escape quits without deciding. With no accounts, nothing
is asked."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from helpers import FakeClock, runtime_ledger, stored_text
from operator_support import refused_reasons
from textual.pilot import Pilot
from textual.widgets import Input
from tui_support import (
    build_console,
    rows,
    screen_text,
    secret_asked,
    started,
    type_text,
    until,
)

from svc_console.agent import AsyncAgent
from svc_console.config.operator_accounts import OperatorAccounts
from svc_console.config.operator_passphrase import OperatorPassphrase
from svc_console.config.paths import Paths
from svc_console.core.states import State
from svc_console.ledger import Ledger
from svc_console.runtime import Runtime
from svc_console.tui.app import ConsoleApp
from svc_console.tui.attached.sign_in import SignInScreen
from svc_console.tui.unlock import UnlockScreen

SEARCH = {"endpoint_id": "ep_websearch_basic", "inputs": {"query": "tides"}, "purpose": "research"}


@pytest.fixture
def console(make_runtime: Callable[..., Runtime], clock: FakeClock) -> Callable[..., ConsoleApp]:
    def build(settings_name: str | None = None) -> ConsoleApp:
        app = build_console(make_runtime, clock)
        app.runtime.console_operator = settings_name  # settings.toml [operator] name
        return app

    return build


@pytest.fixture
def alice(paths: Paths) -> str:
    return OperatorAccounts(paths.operator_accounts).add("alice")


async def asked(pilot: Pilot[Any]) -> SignInScreen:
    return await secret_asked(pilot, SignInScreen)


async def submitted(app: ConsoleApp) -> str:
    """A request waiting for the operator, asked over the agents' socket."""
    async with AsyncAgent("research-bot", app.runtime.paths.socket) as agent:
        ticket = await agent.submit(**SEARCH)
    return ticket["request_id"]


def refused_sign_ins(ledger: Ledger) -> list[dict[str, Any]]:
    cursor = ledger.db.execute(
        "SELECT data FROM events WHERE request_id IS NULL AND type = 'decision_refused'"
    )
    return [json.loads(row[0]) for row in cursor.fetchall()]


def after_exit(paths: Paths, request_id: str) -> tuple[Any, list[dict[str, Any]]]:
    """The request and the refused sign-ins, read from the ledger once the console is closed."""
    ledger = runtime_ledger(paths)
    try:
        return ledger.get(request_id), refused_sign_ins(ledger)
    finally:
        ledger.close()


async def test_the_right_token_opens_the_console_and_decisions_name_the_operator(console, alice):
    app = console("alice")
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await asked(pilot)
        # The name comes from the settings; the token is asked first.
        assert screen.query_one("#operator", Input).value == "alice"
        assert screen.focused is screen.query_one("#token", Input)
        await type_text(pilot, alice)
        await pilot.press("enter")
        await started(pilot)
        request_id = await submitted(app)
        await rows(pilot, 1)
        await pilot.press("a")
        broker = app.runtime.broker
        await until(pilot, lambda: broker.get(request_id).decision is not None)
        decision = broker.get(request_id).decision
        assert decision.by == "alice"
        assert decision.evidence.operator == "alice" and decision.evidence.channel == "tui"
        assert alice not in stored_text(app.runtime.ledger)


async def test_the_operator_types_their_name_when_the_settings_name_none(console, alice):
    app = console()
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await asked(pilot)
        assert screen.focused is screen.query_one("#operator", Input)
        await type_text(pilot, "alice")
        await pilot.press("enter")  # on to the token
        await type_text(pilot, alice)
        await pilot.press("enter")
        await started(pilot)
        assert app.runtime.broker.decisions.console_operator == "alice"


async def test_a_wrong_token_or_name_is_refused_counted_and_decides_nothing(console, alice, paths):
    OperatorAccounts(paths.operator_accounts).add("bob")
    app = console("alice")
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await asked(pilot)
        request_id = await submitted(app)
        await type_text(pilot, "svcop_not-it")
        await pilot.press("enter")
        await until(
            pilot, lambda: "Unknown operator or wrong token (1 attempt(s))" in screen_text(app)
        )
        assert screen.query_one("#token", Input).value == ""  # emptied for another try
        # Alice's token under bob's name is no better.
        name = screen.query_one("#operator", Input)
        name.value = "bob"
        screen.query_one("#token", Input).focus()
        await type_text(pilot, alice)
        await pilot.press("enter")
        await until(
            pilot, lambda: "Unknown operator or wrong token (2 attempt(s))" in screen_text(app)
        )
        assert app.screen is screen
        broker = app.runtime.broker
        assert broker.get(request_id).state == State.pending
        assert broker.decisions.console_operator is None
        # The first refusal whole, the second counted in its burst (refusal_log.RefusalAudit).
        refused = refused_sign_ins(app.runtime.ledger)
        assert [r["reason"] for r in refused] == [
            "sign-in at the console: unknown operator or wrong token"
        ]
        assert refused[0]["evidence"]["channel"] == "tui"
        assert refused_reasons(app.runtime) == {
            "sign-in at the console: unknown operator or wrong token": 2
        }
        dump = stored_text(app.runtime.ledger)
        assert alice not in dump and "svcop_not-it" not in dump


async def test_escape_quits_and_nothing_is_decided(console, alice, paths):
    app = console("alice")
    async with app.run_test(size=(120, 40)) as pilot:
        await asked(pilot)
        request_id = await submitted(app)
        await pilot.press("escape")
        await until(pilot, lambda: app.return_code == 1)
    request, refused = after_exit(paths, request_id)
    assert request.state == State.pending and request.decision is None
    assert refused == []


async def test_ctrl_q_quits_from_the_sign_in_and_nothing_is_decided(console, alice, paths):
    app = console("alice")
    async with app.run_test(size=(120, 40)) as pilot:
        await asked(pilot)
        request_id = await submitted(app)
        await type_text(pilot, "half a tok")
        await pilot.press("ctrl+q")
        await until(pilot, lambda: app.return_code is not None)
    request, _refused = after_exit(paths, request_id)
    assert request.state == State.pending and request.decision is None


async def test_with_accounts_the_sign_in_replaces_the_passphrase(console, alice, paths):
    OperatorPassphrase(paths.operator_passphrase).set("lighthouse at dawn")
    app = console("alice")
    async with app.run_test(size=(120, 40)) as pilot:
        await asked(pilot)
        await type_text(pilot, alice)
        await pilot.press("enter")
        await started(pilot)
        assert not any(isinstance(s, UnlockScreen) for s in app.screen_stack)


async def test_without_accounts_nothing_is_asked_and_the_setting_decides(console):
    app = console("carol")
    async with app.run_test(size=(120, 40)) as pilot:
        await started(pilot)
        assert not any(isinstance(s, SignInScreen) for s in app.screen_stack)
        request_id = await submitted(app)
        await rows(pilot, 1)
        await pilot.press("a")
        broker = app.runtime.broker
        await until(pilot, lambda: broker.get(request_id).decision is not None)
        assert broker.get(request_id).decision.by == "carol"


def test_snapshot_the_sign_in_of_the_console_running_the_broker(snap_compare: Any, console, alice):
    app = console("alice")

    async def run_before(pilot: Pilot[Any]) -> None:
        await asked(pilot)
        await type_text(pilot, "secret")  # masked

    assert snap_compare(app, terminal_size=(100, 24), run_before=run_before)


async def test_a_grant_revoked_after_signing_in_names_the_operator(console, alice):
    from svc_console.broker.params import ApproveParams
    from svc_console.tui.grants.screen import GrantsScreen
    from svc_console.tui.grants.table import GrantsTable
    from svc_console.tui.policies.dialogs import ConfirmPolicyChange

    app = console("alice")
    async with app.run_test(size=(120, 40)) as pilot:
        await asked(pilot)
        await type_text(pilot, alice)
        await pilot.press("enter")
        await started(pilot)
        broker = app.runtime.broker
        request_id = await submitted(app)
        await until(pilot, lambda: broker.get(request_id).state == State.pending)
        await broker.approve(ApproveParams(request_id=request_id, grant_for="1h", grant_total=1))
        await pilot.press("g")
        await until(pilot, lambda: isinstance(app.screen, GrantsScreen))
        await until(pilot, lambda: app.screen.query_one(GrantsTable).row_count == 1)
        await pilot.press("r")
        await until(pilot, lambda: isinstance(app.screen, ConfirmPolicyChange))
        await pilot.click("#confirm")
        await until(pilot, lambda: broker.grants.in_force() == [])
        (ended,) = broker.grants.recent()
        assert ended.created_by == "tui" and ended.ended_by == "alice"
        assert broker.get(request_id).decision.by == "alice"
