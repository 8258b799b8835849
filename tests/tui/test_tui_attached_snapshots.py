"""How an attached console looks: the approvals screen with "attached" in its header, and a screen
it cannot serve saying which console does. The broker runs beside the test on a loop of its own,
as `serve` would in another process."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from attached_support import broker_beside
from helpers import FakeClock, eventually
from operator_support import PASSPHRASE, set_passphrase
from postgres import runtime_ledger_of
from textual.pilot import Pilot
from tui_support import (
    PINNED_SANDBOX,
    notices,
    pin_sandbox_address,
    rows,
    secret_asked,
    type_text,
    until,
)

from svc_console.broker.params import SubmitParams
from svc_console.config.paths import Paths
from svc_console.core.states import State
from svc_console.runtime import Runtime
from svc_console.services.attached_console import AttachedConsole
from svc_console.services.broker_probe import running_broker
from svc_console.tui.app import ConsoleApp

SEARCH = {"endpoint_id": "ep_websearch_basic", "purpose": "research"}


async def one_pending(runtime: Runtime) -> None:
    params = SubmitParams(agent="bot", kind="market_call", inputs={"query": "heat pumps"}, **SEARCH)
    request = await runtime.broker.submit(params)
    await eventually(lambda: runtime.broker.get(request.id).state == State.pending, timeout=30)


def attached_app(paths: Paths, clock: FakeClock) -> ConsoleApp:
    hello = running_broker(paths.operator_socket)
    assert hello is not None
    console = AttachedConsole(paths, hello, clock=clock, ledger_url=runtime_ledger_of(paths.home))
    console.sandbox.base_url = PINNED_SANDBOX  # the first frame's banner
    pin_sandbox_address(console)  # type: ignore[arg-type]  # the screen's
    return ConsoleApp(console, cursor_blink=False)


async def unlocked(pilot: Pilot[Any]) -> None:
    """The passphrase typed: agents of this user are accepted, so the broker asks for it."""
    from svc_console.tui.unlock import UnlockScreen

    await secret_asked(pilot, UnlockScreen)
    await type_text(pilot, PASSPHRASE)
    await pilot.press("enter")


def test_snapshot_an_attached_console(
    snap_compare: Any, paths: Paths, make_runtime: Callable[..., Runtime], clock: FakeClock
):
    set_passphrase(paths.home)
    runtime = make_runtime(clock=clock, ids=True)
    with broker_beside(runtime) as broker:
        broker.run(one_pending(runtime))
        app = attached_app(paths, clock)

        async def run_before(pilot: Pilot[Any]) -> None:
            await unlocked(pilot)
            await rows(pilot, 1)

        assert snap_compare(app, terminal_size=(120, 30), run_before=run_before)


def test_snapshot_an_attached_console_that_may_not_decide(
    snap_compare: Any, paths: Paths, make_runtime: Callable[..., Runtime], clock: FakeClock
):
    """No credential set where agents of the operator's user are accepted: said at once."""
    runtime = make_runtime(clock=clock, ids=True)
    with broker_beside(runtime) as broker:
        broker.run(one_pending(runtime))
        app = attached_app(paths, clock)

        async def run_before(pilot: Pilot[Any]) -> None:
            await rows(pilot, 1)
            await until(pilot, lambda: "Decisions refused here" in notices(app))

        assert snap_compare(app, terminal_size=(120, 30), run_before=run_before)


def test_snapshot_a_screen_an_attached_console_does_not_serve(
    snap_compare: Any, paths: Paths, make_runtime: Callable[..., Runtime], clock: FakeClock
):
    set_passphrase(paths.home)
    runtime = make_runtime(clock=clock, ids=True)
    with broker_beside(runtime):
        app = attached_app(paths, clock)

        async def run_before(pilot: Pilot[Any]) -> None:
            await unlocked(pilot)
            await rows(pilot, 0)
            await until(pilot, lambda: app.screens_open)
            await pilot.press("5")
            await until(pilot, lambda: app.screen.id == "wallet-elsewhere")

        assert snap_compare(app, terminal_size=(100, 24), run_before=run_before)


def test_snapshot_the_sign_in_of_an_attached_console(
    snap_compare: Any, paths: Paths, make_runtime: Callable[..., Runtime], clock: FakeClock
):
    """A broker with operator accounts: the attached console asks who decides here."""
    from svc_console.config.operator_accounts import OperatorAccounts
    from svc_console.tui.attached.sign_in import SignInScreen

    OperatorAccounts(paths.operator_accounts).add("alice")
    runtime = make_runtime(clock=clock, ids=True)
    with broker_beside(runtime):
        app = attached_app(paths, clock)

        async def run_before(pilot: Pilot[Any]) -> None:
            await secret_asked(pilot, SignInScreen)

        assert snap_compare(app, terminal_size=(100, 24), run_before=run_before)
