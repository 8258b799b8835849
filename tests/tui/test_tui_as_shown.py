"""A decision made on the approvals screen is bound to what the operator saw: every dialog is about
the request the detail shows and holds the digest of its facts from the moment it opened; a key
decides the request the detail shows, never a row the cursor reached before the detail was drawn;
and a request that changed since it was shown is refused by the broker, said, and shown again.

Driven against the real thing (the sandbox over HTTP, the Unix sockets, the SQLite ledger) while
requests of one agent with identical inputs arrive, expire and are decided elsewhere, over the
operator socket."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import pytest
from helpers import FakeClock, eventually
from operator_support import PASSPHRASE, operator_knowing
from test_tui_attached import unlock
from textual import events
from textual.pilot import Pilot
from tui_support import (
    announcements_made,
    attached_to,
    build_console,
    clear_notices,
    listed_notices,
    notices,
    queue,
    record_notifications,
    rows,
    started,
    type_text,
    until,
)

from svc_console.agent import AsyncAgent
from svc_console.broker.params import ApproveParams
from svc_console.core.models import Decision, Estimate
from svc_console.core.money import format_usdc
from svc_console.core.shown_facts import facts_digest
from svc_console.core.states import State
from svc_console.runtime import Runtime
from svc_console.tui.app import ConsoleApp
from svc_console.tui.approvals.always import AlwaysModal
from svc_console.tui.approvals.bulk import BulkModal
from svc_console.tui.approvals.detail import RequestDetail
from svc_console.tui.approvals.for_a_while import ForAWhileModal
from svc_console.tui.approvals.screen import ApprovalsScreen
from svc_console.tui.modals import ConfirmAmountModal, DenyReasonModal

# One agent asking again and again for the very same thing: only the id tells them apart.
SAME = {"endpoint_id": "ep_websearch_basic", "inputs": {"query": "same"}, "purpose": "same"}
ONE_REQUEST = (ConfirmAmountModal, DenyReasonModal, ForAWhileModal, AlwaysModal)


@pytest.fixture
def console(make_runtime: Callable[..., Runtime], clock: FakeClock) -> Callable[..., ConsoleApp]:
    return lambda **options: build_console(make_runtime, clock, **options)


def approvals(app: ConsoleApp) -> ApprovalsScreen:
    return next(s for s in app.screen_stack if isinstance(s, ApprovalsScreen))


def shown(app: ConsoleApp) -> Any:
    """The request the detail shows, as it drew it."""
    return approvals(app).query_one(RequestDetail).request


def decided_here(app: ConsoleApp) -> list[tuple[str, bool, str | None]]:
    """The decisions the TUI made (its channel), in order: request, approved, note."""
    rows_ = app.runtime.ledger.db.execute(
        "SELECT request_id, approved, note, evidence FROM decisions ORDER BY id"
    ).fetchall()
    return [
        (row[0], bool(row[1]), row[2])
        for row in rows_
        if json.loads(row[3] or "{}").get("channel") == "tui"
    ]


async def recorded(app: ConsoleApp) -> tuple[int, int]:
    """How many decisions and audit events the ledger holds, once all it was given is committed."""
    ledger = app.runtime.ledger
    await ledger.committed()
    counts = [
        ledger.db.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
        for t in ("decisions", "events")
    ]
    return counts[0], counts[1]


def lagging(app: Any) -> None:
    """The detail drawn a message after the cursor moves, as after a click (the table moves its
    own cursor): the keys' moves no longer draw it at once, so what is attacked is the check
    behind that, in `as_shown`."""
    queue(app).follow = None


class Operator:
    """Presses keys and checks, after every one, that a dialog about one request is about the
    request the detail shows, with the digest of the facts the detail showed as it opened, and
    that a bulk dialog holds the digests of the requests it lists."""

    def __init__(self, pilot: Pilot[Any]):
        self.pilot, self.app = pilot, pilot.app
        self.dialogs: set[int] = set()
        self.checks = 0

    async def press(self, *keys: str) -> None:
        for key in keys:
            await self.pilot.press(key)
            self.check()

    async def together(self, *keys: str) -> None:
        """Keys that arrive at once (typed fast, a loaded machine, a browser's frame): all
        queued before the app handles the first."""
        for key in keys:
            self.app.post_message(events.Key(key, key if len(key) == 1 else None))
        await self.pilot.pause()
        self.check()

    async def type(self, text: str) -> None:
        for char in text:
            await self.press("space" if char == " " else char)

    def check(self) -> None:
        self.checks += 1
        top = self.app.screen
        if isinstance(top, ONE_REQUEST):
            request = shown(self.app)
            assert request is not None and top.request.id == request.id
            if id(top) not in self.dialogs:  # as it opened: the facts the detail showed
                self.dialogs.add(id(top))
                assert top.seen == facts_digest(request)
        elif isinstance(top, BulkModal) and id(top) not in self.dialogs:
            self.dialogs.add(id(top))
            assert top.seen == {r.id: facts_digest(r) for r in top.requests}


async def submit_twin(app: ConsoleApp) -> str:
    async with AsyncAgent("twin-bot", app.runtime.paths.socket) as agent:
        request_id = (await agent.submit(**SAME))["request_id"]
    await eventually(lambda: app.runtime.broker.get(request_id).state == State.pending)
    return request_id


async def decide_elsewhere(app: ConsoleApp, method: str, **params: Any) -> None:
    """Another operator's decision, over the operator socket (as the CLI or a web console)."""
    async with operator_knowing(app.runtime) as line:
        await line.call(method, params)


async def reprice_elsewhere(app: ConsoleApp, sandbox: Any, request_id: str) -> None:
    """Approved elsewhere, then the provider asks three times the price: the request is back
    before the operators at 0.03 USDC, nothing paid."""
    broker = app.runtime.broker
    sandbox.state.reprice_factor = Decimal(3)
    try:
        typed = broker.confirmation_needed(broker.get(request_id))
        amount = {} if typed is None else {"confirm_amount": format_usdc(typed)}
        await decide_elsewhere(app, "approvals.approve", request_id=request_id, **amount)
        await eventually(lambda: (r := broker.get(request_id)).state == State.pending and r.reason)
    finally:
        sandbox.state.reprice_factor = Decimal(1)


async def test_the_dialog_is_always_about_the_request_the_detail_shows(console, clock: FakeClock):
    app = console(pending_ttl_s=300)
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await started(pilot)
        you = Operator(pilot)
        twins = []
        for _ in range(3):
            twins.append(await submit_twin(app))
            clock.advance(10)  # each expires ten seconds after the one before
        await rows(pilot, 3)
        await until(pilot, lambda: shown(app) is not None)

        # Down and deny arrive together while the detail lags: it still showed the row above.
        lagging(app)
        before = shown(app).id
        await you.together("j", "d")
        assert not isinstance(app.screen, DenyReasonModal)
        await until(
            pilot, lambda: "was not yet shown when the key was pressed" in listed_notices(app)
        )
        assert shown(app).id == queue(app).selected_id != before
        # Pressed again, now that it is shown: the dialog is about it.
        await you.press("d")
        await until(pilot, lambda: isinstance(app.screen, DenyReasonModal))
        dialog = app.screen
        you.check()

        # While the dialog is open: a fourth twin arrives, and another is decided elsewhere.
        fourth = await submit_twin(app)
        await until(pilot, lambda: fourth in approvals(app).queue.requests)
        you.check()
        elsewhere = next(t for t in twins if t != dialog.request.id)
        await decide_elsewhere(app, "approvals.deny", request_id=elsewhere, reason="not this")
        await until(pilot, lambda: elsewhere not in approvals(app).queue.requests)
        you.check()
        await you.type("dup")
        await you.press("enter")
        await until(pilot, lambda: len(decided_here(app)) == 1)
        assert decided_here(app) == [(dialog.request.id, False, "dup")]

        # A plain approval: the request the detail shows, and only it.
        await until(
            pilot, lambda: shown(app) is not None and shown(app).id == queue(app).selected_id
        )
        target = shown(app).id
        await you.press("a")
        await until(pilot, lambda: len(decided_here(app)) == 2)
        assert decided_here(app)[1] == (target, True, None)

        # The selected request expires: nothing is selected, and no key decides it.
        await until(
            pilot, lambda: shown(app) is not None and shown(app).id == queue(app).selected_id
        )
        selected = shown(app)
        clock.advance(selected.expires_at - clock() + 1)
        await until(pilot, lambda: app.runtime.broker.get(selected.id).state == State.expired)
        await until(pilot, lambda: queue(app).gone_id == selected.id or not queue(app).row_count)
        await you.press("a", "d", "A")
        assert isinstance(app.screen, ApprovalsScreen) and len(decided_here(app)) == 2

        # Two more twins arrive, the cursor moves, keys come together, a dialog opens
        # on a request that is then decided elsewhere.
        await submit_twin(app)
        await submit_twin(app)
        await until(pilot, lambda: queue(app).row_count >= 2)
        await you.press("j", "k")
        lagging(app)
        await you.together("j", "a")
        await you.together("k", "d")
        await until(pilot, lambda: "was not yet shown" in listed_notices(app))
        assert len(decided_here(app)) == 2
        await you.press("D")
        await until(pilot, lambda: isinstance(app.screen, ForAWhileModal))
        doomed = app.screen.request.id
        await decide_elsewhere(app, "approvals.deny", request_id=doomed, reason="mine")
        await until(pilot, lambda: app.runtime.broker.get(doomed).state == State.denied)
        you.check()
        await you.type("dup")
        await you.press("enter")
        await until(
            pilot, lambda: "not pending" in str(app.screen.query_one("#dialog-error").render())
        )
        you.check()
        await you.press("escape")
        assert len(decided_here(app)) == 2 and you.checks > 20


async def two_twins_the_first_shown(pilot: Pilot[Any]) -> tuple[str, str, Operator]:
    """Two twins waiting, the first in the detail; their ids, and the operator at the keys."""
    app = pilot.app
    await started(pilot)
    first, second = await submit_twin(app), await submit_twin(app)
    await rows(pilot, 2)
    await until(pilot, lambda: shown(app) is not None and shown(app).id == first)
    return first, second, Operator(pilot)


async def test_keys_that_arrive_together_decide_the_request_the_move_showed(console):
    """A move draws the detail at once: `a` arriving with `j` approves the request `j`
    selected, which the detail showed when `a` was handled, and no other."""
    app = console()
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        first, second, you = await two_twins_the_first_shown(pilot)
        await you.together("j", "a")
        await until(pilot, lambda: decided_here(app) == [(second, True, None)])
        assert app.runtime.broker.get(first).state == State.pending


async def test_keys_that_arrive_together_approve_nothing_unseen(console):
    """The cause of a dialog naming another request than the detail: the detail drawn a
    message after the cursor moved (`lagging`), and a key handled in between took the cursor's
    row."""
    app = console()
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        first, second, you = await two_twins_the_first_shown(pilot)
        lagging(app)
        await you.together("j", "a")
        await until(
            pilot, lambda: "was not yet shown when the key was pressed" in listed_notices(app)
        )
        assert decided_here(app) == []
        assert app.runtime.broker.get(second).state == State.pending
        assert shown(app).id == second  # shown now: the next key decides it
        await you.press("a")
        await until(pilot, lambda: decided_here(app) == [(second, True, None)])
        assert app.runtime.broker.get(first).state == State.pending


async def test_a_request_repriced_while_its_dialog_is_open_is_refused_and_shown_again(
    console, sandbox
):
    app = console()
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await started(pilot)
        request_id = await submit_twin(app)
        await rows(pilot, 1)
        you = Operator(pilot)
        await until(pilot, lambda: shown(app) is not None)
        await you.press("d")
        await until(pilot, lambda: isinstance(app.screen, DenyReasonModal))
        seen = app.screen.seen
        await reprice_elsewhere(app, sandbox, request_id)
        before = await recorded(app)
        await you.type("too dear")
        await you.press("enter")
        await until(
            pilot, lambda: f"{request_id} changed since it was shown" in listed_notices(app)
        )
        assert "up to 0.03 USDC on base (x402)" in listed_notices(app)
        assert "nothing was decided" in listed_notices(app)
        assert decided_here(app) == [] and await recorded(app) == before
        assert app.runtime.broker.get(request_id).state == State.pending
        # Shown again, as it is now: selected, at its new price; a new dialog binds the new facts.
        await until(pilot, lambda: shown(app).estimate.amount_usdc == Decimal("0.03"))
        assert queue(app).selected_id == request_id
        await you.press("d")
        await until(pilot, lambda: isinstance(app.screen, DenyReasonModal))
        assert app.screen.seen != seen
        await you.type("too dear")
        await you.press("enter")
        await until(pilot, lambda: decided_here(app) == [(request_id, False, "too dear")])


async def test_the_typed_amount_and_for_a_while_dialogs_refuse_a_repriced_request(console, sandbox):
    app = console(confirm_above_usdc=Decimal("0.005"))  # every approval types its amount
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await started(pilot)
        first, second = await submit_twin(app), await submit_twin(app)
        await rows(pilot, 2)
        you = Operator(pilot)
        await until(pilot, lambda: shown(app) is not None and shown(app).id == first)
        await you.press("a")
        await until(pilot, lambda: isinstance(app.screen, ConfirmAmountModal))
        await reprice_elsewhere(app, sandbox, first)
        await you.type("0.01")
        await you.press("enter")
        await until(pilot, lambda: f"{first} changed since it was shown" in listed_notices(app))
        assert decided_here(app) == [] and queue(app).selected_id == first

        await you.press("j")
        await until(pilot, lambda: shown(app).id == second)
        await you.press("A")
        await until(pilot, lambda: isinstance(app.screen, ForAWhileModal))
        await reprice_elsewhere(app, sandbox, second)
        for field, text in (("#total", "1"), ("#confirm-amount", "0.01")):
            app.screen.query_one(field).focus()
            await pilot.pause()
            await you.type(text)
        await you.press("enter")
        await until(pilot, lambda: isinstance(app.screen, ApprovalsScreen))
        await until(pilot, lambda: f"{second} changed since it was shown" in listed_notices(app))
        assert decided_here(app) == [] and app.runtime.broker.grants.in_force() == []
        assert queue(app).selected_id == second


async def test_a_bulk_decision_with_one_request_changed_decides_none(console, sandbox):
    app = console()
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await started(pilot)
        ids = [await submit_twin(app) for _ in range(3)]
        await rows(pilot, 3)
        you = Operator(pilot)
        queue(app).move_cursor(row=0)
        await you.press("space", "space", "space")
        await you.press("d")
        await until(pilot, lambda: isinstance(app.screen, BulkModal))
        you.check()
        changed = app.screen.requests[1].id
        await reprice_elsewhere(app, sandbox, changed)
        await you.type("duplicates")
        await you.press("enter")
        await until(pilot, lambda: isinstance(app.screen, ApprovalsScreen))
        await until(pilot, lambda: f"{changed} changed since it was shown" in listed_notices(app))
        assert decided_here(app) == []
        assert all(app.runtime.broker.get(i).state == State.pending for i in ids)
        assert queue(app).selected_id == changed


def reprice_behind_the_screen(
    runtime: Runtime, request_id: str, amount: Decimal, attempt: int
) -> None:
    """What the executor writes when a dearer challenge comes back (approved, executing,
    repriced, pending again), written behind the screen's back: no broker notification, so the
    detail still shows the facts from before, as in the moment before the screen hears."""
    ledger, now = runtime.ledger, runtime.broker.clock()
    request = ledger.get(request_id)
    assert request is not None and request.estimate is not None
    decision = Decision(approved=True, by="elsewhere", at=now, ceiling_usdc=Decimal("0.01"))
    decision_id = ledger.decide(request_id, decision, State.approved)
    key = f"{request_id}-{attempt}"
    execution = ledger.start_execution(request_id, decision_id, attempt, key, now)
    ledger.finish_execution(execution, State.repriced, at=now, error="dearer")
    dearer = Estimate(amount_usdc=amount, chain="base", protocol="x402")
    ledger.transition(request_id, State.pending, at=now, estimate=dearer, expires_at=now + 600)


async def test_a_key_on_facts_the_detail_no_longer_holds_decides_nothing(console):
    app = console()
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await started(pilot)
        request_id = await submit_twin(app)
        await rows(pilot, 1)
        await until(pilot, lambda: shown(app) is not None)
        # Its arrival announced first (gathered for a second), or it would be the newest notice.
        await clear_notices(pilot)
        you = Operator(pilot)
        for attempt, (key, amount) in enumerate((("a", "0.05"), ("d", "0.07")), start=1):
            dearer = Decimal(amount)
            reprice_behind_the_screen(app.runtime, request_id, dearer, attempt)
            before = await recorded(app)
            await you.press(key)
            assert isinstance(app.screen, ApprovalsScreen)  # no dialog on facts not shown
            await until(pilot, lambda: f"{request_id} changed since it was shown" in notices(app))
            assert decided_here(app) == [] and await recorded(app) == before
            # Shown again as it is now.
            await until(pilot, lambda: shown(app).estimate.amount_usdc == dearer)  # noqa: B023
            app.clear_notifications()


async def test_an_attached_console_binds_its_decision_over_the_operator_socket(runtime, sandbox):
    from svc_console.broker.params import SubmitParams
    from svc_console.services.broker_probe import running_broker

    broker = runtime.broker
    # Submitted in process, as an agent of no process tree of this test's.
    request = await broker.submit(SubmitParams(agent="twin-bot", kind="market_call", **SAME))
    await eventually(lambda: broker.get(request.id).state == State.pending, timeout=30)
    # Agents of this user are accepted: decisions from an attached console need the passphrase.
    runtime.passphrase.set(PASSPHRASE)
    hello = await asyncio.to_thread(running_broker, runtime.paths.operator_socket)
    assert hello is not None
    app = ConsoleApp(attached_to(runtime, hello), cursor_blink=False)
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await unlock(pilot, PASSPHRASE)
        await rows(pilot, 1)
        await until(pilot, lambda: shown(app) is not None)
        you = Operator(pilot)
        await you.press("d")
        await until(pilot, lambda: isinstance(app.screen, DenyReasonModal))
        sandbox.state.reprice_factor = Decimal(3)
        try:
            await broker.approve(ApproveParams(request_id=request.id))
            await eventually(
                lambda: (r := broker.get(request.id)).state == State.pending and r.reason
            )
        finally:
            sandbox.state.reprice_factor = Decimal(1)
        await you.type("too dear")
        await you.press("enter")
        # Its return comes over the socket, before or after the refusal: either is drawn.
        await until(
            pilot, lambda: f"{request.id} changed since it was shown" in listed_notices(app)
        )
        await until(pilot, lambda: shown(app).estimate.amount_usdc == Decimal("0.03"))
        assert queue(app).selected_id == request.id
    assert broker.get(request.id).state == State.pending
    notes = runtime.ledger.db.execute("SELECT note FROM decisions").fetchall()
    assert ("too dear",) not in notes


def test_snapshot_a_request_changed_since_it_was_shown(
    snap_compare: Any, console: Callable[..., ConsoleApp], sandbox: Any
):
    """The refusal said, and the request shown again as it is now: at its new price, with the
    console's note of why it came back."""
    app = console()

    async def run_before(pilot: Pilot[Any]) -> None:
        await started(pilot)
        request_id = await submit_twin(app)
        await rows(pilot, 1)
        await until(pilot, lambda: "New request from twin-bot" in notices(app))
        await clear_notices(pilot)
        await pilot.press("d")
        await until(pilot, lambda: isinstance(app.screen, DenyReasonModal))
        told = record_notifications(app)
        await reprice_elsewhere(app, sandbox, request_id)
        # Behind the dialog, the detail shows it at its new price, and its return is announced:
        # held while the dialog is open, so the refusal after it is the notice drawn, counting it.
        await until(pilot, lambda: any("Web Search · 0.03 USDC" in said for said in told))
        await until(pilot, lambda: shown(app).estimate.amount_usdc == Decimal("0.03"))
        await until(pilot, lambda: announcements_made(app))
        await type_text(pilot, "too dear")
        await pilot.press("enter")
        await until(pilot, lambda: f"{request_id} changed since it was shown" in notices(app))
        await until(pilot, lambda: queue(app).selected_id == request_id)

    assert snap_compare(app, terminal_size=(120, 40), run_before=run_before)
