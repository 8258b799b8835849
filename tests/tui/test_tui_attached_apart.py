"""A console attached to a broker whose ledger it cannot read: the broker running as a user of its
own (`service install`), its home out of the operator's reach. Here the console's home is another
folder, where no ledger is, and it reaches the broker by the operator socket alone. It reads the
queue over that socket (`approvals.read`), filters and pages it there, signs in once and decides;
the usage history, which only the broker's user reads, it names the command that shows it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from attached_support import BrokerThread, broker_beside
from helpers import FakeClock, eventually
from textual.pilot import Pilot
from tui_support import (
    PINNED_SANDBOX,
    pin_sandbox_address,
    rows,
    screen_text,
    secret_asked,
    type_text,
    until,
)

from svc_console.broker.params import SubmitParams
from svc_console.config.operator_accounts import OperatorAccounts
from svc_console.config.paths import Paths
from svc_console.core.models import SpendRequest
from svc_console.core.states import State
from svc_console.runtime import Runtime
from svc_console.services.attached_console import AttachedConsole
from svc_console.services.broker_probe import running_broker
from svc_console.tui.app import ConsoleApp

SEARCH = {"endpoint_id": "ep_websearch_basic", "purpose": "research"}  # 0.01 USDC a call


async def pending(runtime: Runtime, agent: str, query: str) -> str:
    params = SubmitParams(agent=agent, kind="market_call", inputs={"query": query}, **SEARCH)
    request = await runtime.broker.submit(params, verified=True)
    await eventually(lambda: runtime.broker.get(request.id).state == State.pending, timeout=30)
    return request.id


def apart(paths: Paths, tmp_path: Path) -> Paths:
    """The operator's own home, with no ledger in it, and the broker's operator socket."""
    home = tmp_path / "operator-home"
    home.mkdir(mode=0o700)
    return Paths(home, paths.socket, True, paths.operator_socket)


def attached_apart(paths: Paths, tmp_path: Path, clock: FakeClock) -> ConsoleApp:
    own = apart(paths, tmp_path)
    hello = running_broker(own.operator_socket)
    assert hello is not None, "the broker answers on its operator socket"
    console = AttachedConsole(own, hello, clock=clock)
    console.sandbox.base_url = PINNED_SANDBOX  # the first frame's banner
    pin_sandbox_address(console)  # type: ignore[arg-type]  # the screen's
    return ConsoleApp(console, cursor_blink=False)


async def signed_in(pilot: Pilot[Any], token: str) -> None:
    from svc_console.tui.attached.sign_in import SignInScreen

    await secret_asked(pilot, SignInScreen)
    await type_text(pilot, "alice")
    await pilot.press("enter")
    await type_text(pilot, token)
    await pilot.press("enter")


@pytest.fixture
def beside(paths: Paths, make_runtime: Callable[..., Runtime], clock: FakeClock) -> Any:
    """The broker, with an operator account, serving beside the test; alice's token."""
    token = OperatorAccounts(paths.operator_accounts).add("alice")
    runtime = make_runtime(clock=clock, ids=True)
    with broker_beside(runtime) as broker:
        yield broker, token


def decision_of(broker: BrokerThread, request_id: str) -> SpendRequest:
    async def read() -> SpendRequest:
        return broker.runtime.broker.get(request_id)

    return broker.run(read())


async def test_it_reads_the_queue_over_the_socket_filters_it_and_decides_as_the_signed_in_operator(
    beside: Any, paths: Paths, tmp_path: Path, clock: FakeClock
):
    broker, token = beside
    solar = broker.run(pending(broker.runtime, "alpha", "solar tiles"))
    heat = broker.run(pending(broker.runtime, "beta", "heat pumps"))
    app = attached_apart(paths, tmp_path, clock)
    async with app.run_test(size=(120, 36)) as pilot:
        await signed_in(pilot, token)
        await rows(pilot, 2)
        assert app.runtime.apart  # type: ignore[attr-defined]  # read over the socket
        assert not (tmp_path / "operator-home" / "ledger-sandbox.db").exists()
        await pilot.press("slash")
        await type_text(pilot, "beta")
        await pilot.press("enter")
        await until(pilot, lambda: "1/2" in screen_text(app))
        await rows(pilot, 1)
        await pilot.press("a")
        await until(pilot, lambda: decision_of(broker, heat).state != State.pending)
        await pilot.press("escape")
        await rows(pilot, 1)  # the other request, still waiting
    decided = decision_of(broker, heat)
    assert decided.decision is not None and decided.decision.approved
    assert decided.decision.by == "alice"
    assert decision_of(broker, solar).state == State.pending


async def test_the_usage_history_is_named_where_it_is_read(
    beside: Any, paths: Paths, tmp_path: Path, clock: FakeClock
):
    _, token = beside
    app = attached_apart(paths, tmp_path, clock)
    async with app.run_test(size=(120, 36)) as pilot:
        await signed_in(pilot, token)
        await rows(pilot, 0)
        await until(pilot, lambda: app.screens_open)
        await pilot.press("3")
        await until(pilot, lambda: app.screen.id == "usage-elsewhere")
        said = screen_text(app)
    assert "Usage is read where the service's files are" in said
    assert "sudo -u svc-console env SVC_CONSOLE_HOME=/var/lib/svc-console" in said


def test_snapshot_the_usage_screen_attached_to_the_service(
    snap_compare: Any,
    paths: Paths,
    tmp_path: Path,
    make_runtime: Callable[..., Runtime],
    clock: FakeClock,
):
    token = OperatorAccounts(paths.operator_accounts).add("alice")
    runtime = make_runtime(clock=clock, ids=True)
    with broker_beside(runtime):
        app = attached_apart(paths, tmp_path, clock)

        async def run_before(pilot: Pilot[Any]) -> None:
            await signed_in(pilot, token)
            await rows(pilot, 0)
            await until(pilot, lambda: app.screens_open)
            await pilot.press("3")
            await until(pilot, lambda: app.screen.id == "usage-elsewhere")

        assert snap_compare(app, terminal_size=(100, 24), run_before=run_before)


async def test_the_console_ends_when_the_broker_it_reads_over_the_socket_stops(
    paths: Paths, tmp_path: Path, make_runtime: Callable[..., Runtime], clock: FakeClock
):
    token = OperatorAccounts(paths.operator_accounts).add("alice")
    broker = BrokerThread(make_runtime(clock=clock, ids=True))
    broker.start()
    stopped = False
    try:
        broker.run(pending(broker.runtime, "alpha", "solar tiles"))
        app = attached_apart(paths, tmp_path, clock)
        async with app.run_test(size=(120, 36)) as pilot:
            await signed_in(pilot, token)
            await rows(pilot, 1)
            broker.stop()
            stopped = True
            await until(pilot, lambda: app.return_code == 1)
    finally:
        if not stopped:
            broker.stop()
