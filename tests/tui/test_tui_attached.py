"""Consoles attached to a broker that runs elsewhere (here: started in process, as `serve` starts
it), over its real operator socket and its real ledger file: two TUIs see the same queue, follow it
live, and a decision in one leaves the other's list; the decision carries the operator socket's
evidence; closing them leaves the broker serving."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from helpers import agent_token, eventually
from operator_support import past_the_wait
from tui_support import attached_to, queue, rows, screen_text, secret_asked, type_text, until

from svc_console.agent import AsyncAgent
from svc_console.broker.params import SubmitParams
from svc_console.core.states import State
from svc_console.runtime import Runtime
from svc_console.services.broker_probe import running_broker
from svc_console.tui.app import ConsoleApp

SEARCH = {"endpoint_id": "ep_websearch_basic", "purpose": "research"}  # 0.01 USDC a call


async def submit(runtime: Runtime, query: str) -> str:
    """A request waiting for the operator (submitted in process: no agent's process tree stands
    behind it, so this test's process may decide it)."""
    params = SubmitParams(agent="bot", kind="market_call", inputs={"query": query}, **SEARCH)
    request = await runtime.broker.submit(params, verified=True)  # a registered agent's
    await eventually(lambda: runtime.broker.get(request.id).state == State.pending, timeout=30)
    return request.id


async def answering(runtime: Runtime) -> dict[str, Any] | None:
    # In a thread: the broker answers from this test's own loop, which must not be blocked.
    return await asyncio.to_thread(running_broker, runtime.paths.operator_socket)


async def attached(runtime: Runtime) -> ConsoleApp:
    hello = await answering(runtime)
    assert hello is not None, "the broker answers on its operator socket"
    return ConsoleApp(attached_to(runtime, hello), cursor_blink=False)


async def unlock(pilot: Any, passphrase: str = "lighthouse at dawn") -> None:
    from svc_console.tui.unlock import UnlockScreen

    await secret_asked(pilot, UnlockScreen)
    await type_text(pilot, passphrase)
    await pilot.press("enter")


def evidence(runtime: Runtime, request_id: str) -> dict[str, Any]:
    row = runtime.ledger.db.execute(
        "SELECT evidence FROM decisions WHERE request_id = ?", [request_id]
    ).fetchone()
    return json.loads(row[0])


async def test_two_attached_consoles_share_the_queue_and_a_decision_in_one_leaves_the_other(
    runtime,
):
    first_id = await submit(runtime, "heat pumps")
    # Agents of this user are accepted: decisions from an attached console need the passphrase.
    runtime.passphrase.set(PASSPHRASE)
    one, two = await attached(runtime), await attached(runtime)
    async with one.run_test(size=(120, 36)) as left, two.run_test(size=(120, 36)) as right:
        for pilot in (left, right):
            await unlock(pilot)
        await rows(left, 1)
        await rows(right, 1)
        assert "attached" in screen_text(one) and "attached" in screen_text(two)
        # A request that arrives is seen by both, pushed by the broker.
        second_id = await submit(runtime, "solar tariffs")
        await rows(left, 2)
        await rows(right, 2)
        # Approving in one: the other's list loses it, and the broker executes it.
        await until(left, lambda: queue(one).selected_id == first_id)  # the oldest, first
        await left.press("a")
        await until(right, lambda: list(queue(two).requests) == [second_id])
        await until(left, lambda: list(queue(one).requests) == [second_id])
        await eventually(lambda: runtime.broker.get(first_id).state == State.succeeded)
    # Decided over the operator socket, as the CLI decides: its evidence says so.
    said = evidence(runtime, first_id)
    assert said["channel"] == "cli" and said["pid"] is not None
    # The consoles are closed; the broker still serves agents and operators.
    assert await answering(runtime) is not None
    async with AsyncAgent(
        "bot", runtime.paths.socket, token=agent_token(runtime.paths, "bot")
    ) as agent:
        ticket = await agent.submit(inputs={"query": "after"}, **SEARCH)
    assert ticket["request_id"]


async def test_an_attached_console_shows_what_it_cannot_serve(runtime):
    app = await attached(runtime)
    async with app.run_test(size=(100, 30)) as pilot:
        await rows(pilot, 0)
        await until(pilot, lambda: getattr(app, "screens_open", False))
        await pilot.press("5")
        await until(pilot, lambda: "served by the console running the broker" in screen_text(app))
        assert "svc-console wallet fund ID" in screen_text(app)


PASSPHRASE = "lighthouse at dawn"


async def test_an_attached_console_asks_the_passphrase_once_and_decides_with_it(
    paths, make_runtime
):
    from svc_console.config.operator_passphrase import OperatorPassphrase
    from svc_console.tui.unlock import UnlockScreen

    OperatorPassphrase(paths.operator_passphrase).set(PASSPHRASE)
    runtime = make_runtime()
    await runtime.start()
    try:
        request_id = await submit(runtime, "heat pumps")
        app = await attached(runtime)
        async with app.run_test(size=(120, 36)) as pilot:
            await secret_asked(pilot, UnlockScreen)
            await type_text(pilot, PASSPHRASE)
            await pilot.press("enter")
            await rows(pilot, 1)
            await pilot.press("a")
            await rows(pilot, 0)
        # The broker checked the passphrase on the operator socket and let the approval through.
        assert runtime.broker.get(request_id).state in {
            State.approved,
            State.executing,
            State.succeeded,
        }
        assert evidence(runtime, request_id)["channel"] == "cli"
    finally:
        await runtime.stop()


async def test_an_attached_console_ends_when_its_broker_stops(make_runtime):
    runtime = make_runtime()
    await runtime.start()
    try:
        app = await attached(runtime)
        async with app.run_test(size=(100, 30)) as pilot:
            await rows(pilot, 0)
            await runtime.stop()
            await until(pilot, lambda: app.return_code == 1)
    finally:
        await runtime.stop()


BUDGETS = """# SKILLS.md

```policy
budgets:
  - name: daily allowance
    per: agent
    window: day
    warn_usdc: 0.02
    max_usdc: 0.05
```
"""


async def test_an_attached_console_shows_the_budgets_the_broker_reads(paths, make_runtime):
    from svc_console.tui.approvals.detail import RequestDetail

    paths.home.mkdir(parents=True, exist_ok=True)
    (paths.home / "SKILLS.md").write_text(BUDGETS)
    runtime = make_runtime()
    await runtime.start()
    try:
        await submit(runtime, "heat pumps")
        app = await attached(runtime)
        async with app.run_test(size=(120, 40)) as pilot:
            await rows(pilot, 1)
            detail = app.screen.query_one(RequestDetail)
            # Asked of the broker (approvals.budgets) once the row is shown, drawn when they come.
            await until(pilot, lambda: "Budgets: now → after approving" in detail.text)
            text = " ".join(detail.text.split())
        assert "daily allowance: bot (day) SKILLS.md:5" in text
        assert "spent 0.00 · reserved 0.00 · left 0.05 → after 0.01 of 0.05, warn 0.02" in text
    finally:
        await runtime.stop()


async def test_an_attached_console_cut_off_for_falling_behind_follows_again(runtime, caplog):
    import dataclasses
    import logging

    caplog.set_level(logging.INFO)

    from svc_console.broker.limits import Limits

    ids = [await submit(runtime, f"q{n}") for n in range(5)]
    app = await attached(runtime)
    # Its buffer holds two changes; five approvals at once are more than it can be sent.
    methods = runtime.operator_socket.methods
    methods.limits = dataclasses.replace(Limits(), follow_buffer=2)
    async with app.run_test(size=(120, 36)) as pilot:
        await rows(pilot, 5)
        methods.limits = Limits()  # for its next connection
        await runtime.broker.approve_many(ids)
        await rows(pilot, 0)
        # Still open, and following: a new request shows.
        later = await submit(runtime, "later")
        await until(pilot, lambda: list(queue(app).requests) == [later])
        assert app.return_code is None
    said = caplog.text
    assert "fell 2 changes behind: cut off" in said
    assert "following the broker's queue again" in said


async def test_an_attached_console_asks_the_amount_typed_above_the_threshold(make_runtime):
    from decimal import Decimal

    from svc_console.tui.modals import ConfirmAmountModal

    runtime = make_runtime(confirm_above_usdc=Decimal("0.005"))
    await runtime.start()
    try:
        request_id = await submit(runtime, "heat pumps")
        runtime.passphrase.set(PASSPHRASE)  # agents of this user are accepted: it is needed
        app = await attached(runtime)
        async with app.run_test(size=(120, 36)) as pilot:
            await unlock(pilot)
            await rows(pilot, 1)
            await pilot.press("a")
            await until(pilot, lambda: isinstance(app.screen, ConfirmAmountModal))
            await type_text(pilot, "0.01")
            await pilot.press("enter")
            await rows(pilot, 0)
        assert runtime.broker.get(request_id).decision.approved
    finally:
        await runtime.stop()


async def test_with_operator_accounts_an_attached_console_signs_in_and_decides_as_one(
    paths, make_runtime, clock
):
    from svc_console.config.operator_accounts import OperatorAccounts
    from svc_console.tui.attached.sign_in import SignInScreen

    token = OperatorAccounts(paths.operator_accounts).add("alice")
    runtime = make_runtime(clock=clock)
    await runtime.start()
    try:
        request_id = await submit(runtime, "heat pumps")
        app = await attached(runtime)
        async with app.run_test(size=(120, 36)) as pilot:
            await secret_asked(pilot, SignInScreen)
            await type_text(pilot, "alice")
            await pilot.press("enter")
            await type_text(pilot, "not-the-token")
            await pilot.press("enter")
            await until(pilot, lambda: "Unknown operator or wrong token" in screen_text(app))
            past_the_wait(runtime, clock)  # the broker checked it: a wrong token earns a wait
            await type_text(pilot, token)
            await pilot.press("enter")
            await rows(pilot, 1)
            await pilot.press("a")
            await rows(pilot, 0)
        said = evidence(runtime, request_id)
        assert said["channel"] == "cli" and said["operator"] == "alice"
    finally:
        await runtime.stop()
