"""Agents of the operator's own user accepted, as the TUI meets it.

Against a real service, on the first start with such agents and no credential, the console offers
to set the operator passphrase: set, it is in force at once for every other channel; skipped,
those channels stay refused, the notice says how to set one, and the offer is not made again.
The sandbox and the demo never ask. A console attached to a broker that refuses its decisions
says so at once, and each refusal names the command; its passphrase dialog is checked by the
broker, which makes wrong tries wait."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from helpers import FakeClock, eventually, operator
from operator_support import PASSPHRASE, past_the_wait, set_passphrase
from textual.pilot import Pilot
from tui_support import (
    attached_to,
    build_console,
    listed_notices,
    notices,
    record_notifications,
    rows,
    screen_text,
    secret_asked,
    started,
    type_text,
    until,
)

from svc_console.agent import AgentError
from svc_console.broker.params import SubmitParams
from svc_console.config.agents import AgentSettings
from svc_console.config.operator_passphrase import OperatorPassphrase
from svc_console.config.paths import Paths
from svc_console.config.service import ServiceConfig
from svc_console.core.states import State
from svc_console.runtime import Runtime
from svc_console.services.broker_probe import running_broker
from svc_console.tui.app import ConsoleApp
from svc_console.tui.passphrase_offer import PassphraseOfferScreen
from svc_console.tui.unlock import UnlockScreen

SAME_USER = AgentSettings(enrolment="strict", allow_same_user=True)
SEARCH = {"endpoint_id": "ep_websearch_basic", "purpose": "research"}


def real_console(paths: Paths, sandbox: Any, clock: FakeClock) -> ConsoleApp:
    """The console against a service configured like a real one (the sandbox's address), with
    agents of the operator's own user accepted."""
    service = ServiceConfig(
        base_url=sandbox.base_url,
        wallet_api_base=sandbox.base_url,
        api_key=sandbox.state.api_key,
        username=sandbox.state.username,
        api_token=sandbox.state.api_token,
    )
    runtime = Runtime(
        paths=paths, service=service, agent_settings=SAME_USER, broker_options={"clock": clock}
    )
    return ConsoleApp(runtime, cursor_blink=False)


async def offered(pilot: Pilot[Any]) -> None:
    await until(pilot, lambda: isinstance(pilot.app.screen, PassphraseOfferScreen))
    await until(pilot, lambda: pilot.app.screen.focused is not None)


async def pending(runtime: Runtime) -> str:
    """A request waiting for the operator, submitted in process."""
    params = SubmitParams(agent="bot", kind="market_call", inputs={"query": "q"}, **SEARCH)
    request = await runtime.broker.submit(params)
    await eventually(lambda: runtime.broker.get(request.id).state == State.pending, timeout=30)
    return request.id


async def test_set_at_the_first_start_it_guards_the_other_channels_at_once(paths, sandbox, clock):
    app = real_console(paths, sandbox, clock)
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await offered(pilot)
        assert "Set an operator passphrase?" in screen_text(app)
        await type_text(pilot, "too short")  # 9: long enough; the second differs
        await pilot.press("enter")
        await type_text(pilot, "too shorT")
        await pilot.press("enter")
        await until(pilot, lambda: "The two passphrases differ" in screen_text(app))
        await type_text(pilot, PASSPHRASE)
        await pilot.press("enter")
        await type_text(pilot, PASSPHRASE)
        await pilot.press("enter")
        await started(pilot)
        await until(pilot, lambda: "Operator passphrase set" in notices(app))
        runtime = app.runtime
        request_id = await pending(runtime)
        # In force for the running console: without it nothing, with it a decision.
        async with operator(runtime) as line:
            assert line.hello_info["passphrase_required"] is True
            with pytest.raises(AgentError) as bare:
                await line.call("approvals.approve", {"request_id": request_id})
            assert bare.value.reason == "passphrase_required"
            said = {"request_id": request_id, "passphrase": PASSPHRASE}
            assert (await line.call("approvals.approve", said))["decision"]["approved"]
    assert OperatorPassphrase(paths.operator_passphrase).verify(PASSPHRASE)
    assert PASSPHRASE not in paths.operator_passphrase.read_text()


async def test_skipped_the_channels_stay_refused_and_it_is_not_asked_again(paths, sandbox, clock):
    app = real_console(paths, sandbox, clock)
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await offered(pilot)
        await pilot.press("escape")
        await started(pilot)
        await until(pilot, lambda: "svc-console operators passwd" in notices(app))
        await until(pilot, lambda: "are refused until one is set" in listed_notices(app))
        request_id = await pending(app.runtime)
        async with operator(app.runtime) as line:
            assert "svc-console operators passwd" in line.hello_info["no_credential"]
            with pytest.raises(AgentError) as refused:
                await line.call("approvals.approve", {"request_id": request_id})
        assert refused.value.reason == "credential_required"
        assert "svc-console operators passwd" in refused.value.message
        assert app.runtime.broker.get(request_id).state == State.pending
    assert not OperatorPassphrase(paths.operator_passphrase).is_set()
    again = real_console(paths, sandbox, clock)
    async with again.run_test(size=(120, 40)) as pilot:
        await started(pilot)
        assert not isinstance(again.screen, PassphraseOfferScreen)


async def test_the_sandbox_never_asks(make_runtime, clock):
    app = build_console(make_runtime, clock)
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await started(pilot)
        assert app.runtime.access.same_user_accepted  # open enrolment: the newcomer's tour
        assert not app.runtime.passphrase.is_set()
    assert not OperatorPassphrase(app.runtime.paths.operator_passphrase).offered()


def test_snapshot_the_offer(snap_compare: Any, paths: Paths, sandbox: Any, clock: FakeClock):
    app = real_console(paths, sandbox, clock)

    async def run_before(pilot: Pilot[Any]) -> None:
        await offered(pilot)
        await type_text(pilot, "secret")

    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)


# -- consoles attached to such a broker -----------------------------------------------------------


async def attached(runtime: Runtime) -> ConsoleApp:
    hello = await asyncio.to_thread(running_broker, runtime.paths.operator_socket)
    assert hello is not None
    return ConsoleApp(attached_to(runtime, hello), cursor_blink=False)


async def test_an_attached_console_says_at_once_that_it_cannot_decide_and_how_to_fix_it(runtime):
    request_id = await pending(runtime)
    app = await attached(runtime)
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        said = record_notifications(app)
        await rows(pilot, 1)
        await until(pilot, lambda: "Decisions refused here" in screen_text(app))
        await pilot.press("a")
        await until(pilot, lambda: len([s for s in said if "operators passwd" in s]) >= 2)
    assert runtime.broker.get(request_id).state == State.pending
    refused = [s for s in said if "operators passwd" in s]
    assert all("none is set" in s for s in refused)


async def test_an_attached_consoles_wrong_passphrase_waits_as_the_cli_would(
    paths, make_runtime, clock
):
    set_passphrase(paths.home)
    runtime = make_runtime(clock=clock)
    await runtime.start()
    try:
        await pending(runtime)
        app = await attached(runtime)
        async with app.run_test(size=(120, 40), notifications=True) as pilot:
            await secret_asked(pilot, UnlockScreen)
            for attempts in ("(1 attempt(s))", "(2 attempt(s))"):
                await type_text(pilot, "a guess")
                await pilot.press("enter")
                await until(pilot, lambda shown=attempts: shown in screen_text(app))
            # The second came within the wait the first earned: the broker did not check it.
            said = app.runtime.passphrase.refusal
            assert said.startswith("too many wrong credentials") and "try again in 1 s" in said
            past_the_wait(runtime, clock)
            await type_text(pilot, PASSPHRASE)
            await pilot.press("enter")
            await rows(pilot, 1)
    finally:
        await runtime.stop()
