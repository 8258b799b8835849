"""Deciding with a scope from the approvals screen: for a while (`A`, `D`: a grant in the ledger,
a bad total refused in the dialog with nothing decided) and always (`w`: the diff of SKILLS.md,
then the approval and the saved rule; an invalid rule decides nothing). Against the sandbox over
HTTP, the Unix socket and the SQLite ledger."""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from helpers import FakeClock, agent_token
from textual.pilot import Pilot
from textual.widgets import Button, Input, RadioSet
from tui_support import (
    build_console,
    clear_notices,
    listed_notices,
    notices,
    record_notifications,
    rows,
    screen_text,
    started,
    type_text,
    until,
)

from svc_console.agent import AsyncAgent
from svc_console.config.paths import Paths
from svc_console.core.states import State
from svc_console.policy.loader import load_paths
from svc_console.runtime import Runtime
from svc_console.tui.app import ConsoleApp
from svc_console.tui.approvals.always import AlwaysModal
from svc_console.tui.approvals.bulk import BulkModal
from svc_console.tui.approvals.for_a_while import ForAWhileModal
from svc_console.tui.approvals.screen import ApprovalsScreen
from svc_console.tui.modals import ConfirmAmountModal
from svc_console.tui.policies.diff import PolicyDiff

SEARCH = {
    "endpoint_id": "ep_websearch_basic",  # 0.01 USDC a call
    "inputs": {"query": "solar panel prices"},
    "purpose": "background for the weekly energy note",
}
POLICY = """# SKILLS.md

Nothing above a dollar a call.

```policy
per_call_max_usdc: 1
```
"""


@pytest.fixture
def console(make_runtime: Callable[..., Runtime], clock: FakeClock) -> Callable[..., ConsoleApp]:
    return lambda **options: build_console(make_runtime, clock, **options)


@pytest.fixture
def policy(paths: Paths) -> Path:
    paths.home.mkdir(parents=True, exist_ok=True)
    file = paths.home / "SKILLS.md"
    file.write_text(POLICY)
    return file


async def one_request(pilot: Pilot[Any], app: ConsoleApp) -> str:
    async with AsyncAgent(
        "research-bot",
        app.runtime.paths.socket,
        token=agent_token(app.runtime.paths, "research-bot"),
    ) as agent:
        request_id = (await agent.submit(**SEARCH))["request_id"]
    await rows(pilot, 1)
    await until(pilot, lambda: "New request from research-bot" in notices(app))
    await clear_notices(pilot)
    return request_id


async def choose(pilot: Pilot[Any], index: int) -> None:
    """Pick the dialog's `index`-th duration with the keys an operator uses."""
    radios = pilot.app.screen.query_one(RadioSet)
    radios.focus()
    await pilot.pause()
    for _ in range(index):
        await pilot.press("down")
    await pilot.press("enter")
    await until(pilot, lambda: radios.pressed_index == index)


async def type_into(pilot: Pilot[Any], selector: str, text: str) -> None:
    field = pilot.app.screen.query_one(selector, Input)
    field.value = ""
    field.focus()
    await pilot.pause()
    await type_text(pilot, text)


def error_text(app: ConsoleApp) -> str:
    return str(app.screen.query_one("#dialog-error").render())


# -- for a while --------------------------------------------------------------------------------


async def test_approve_for_a_while_makes_a_grant(console, clock: FakeClock):
    app = console()
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await started(pilot)
        request_id = await one_request(pilot, app)
        broker = app.runtime.broker
        said = record_notifications(app)  # a toast lasts seconds; the grant may take longer

        await pilot.press("A")
        await until(pilot, lambda: isinstance(app.screen, ForAWhileModal))
        await choose(pilot, 1)  # one hour
        await type_into(pilot, "#total", "0.05")
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, ApprovalsScreen))

        (grant,) = broker.grants.in_force()
        assert (grant.agent, grant.target, grant.effect) == (
            "research-bot",
            "ep_websearch_basic",
            "approve",
        )
        assert grant.per_call_max_usdc == 10_000 and grant.total_usdc == 50_000
        assert grant.expires_at == clock() + 3600 and grant.request_id == request_id
        await until(pilot, lambda: broker.get(request_id).state == State.succeeded)
        assert any("research-bot's calls to Web Search for 1 hour" in note for note in said)


async def test_a_total_that_is_not_enough_is_refused_in_the_dialog(console):
    app = console()
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await started(pilot)
        request_id = await one_request(pilot, app)
        broker = app.runtime.broker

        await pilot.press("A")
        await until(pilot, lambda: isinstance(app.screen, ForAWhileModal))
        await type_into(pilot, "#total", "lots")
        await pilot.press("enter")
        await until(pilot, lambda: "Type the total in USDC" in error_text(app))

        await type_into(pilot, "#total", "0.005")
        await pilot.press("enter")
        await until(pilot, lambda: "below one call's 0.01 USDC" in error_text(app))
        assert "Nothing was decided" in error_text(app)
        assert isinstance(app.screen, ForAWhileModal)
        assert broker.get(request_id).state == State.pending
        assert broker.grants.recent() == []

        await pilot.press("escape")
        await until(pilot, lambda: isinstance(app.screen, ApprovalsScreen))
        assert broker.get(request_id).state == State.pending


async def test_deny_for_a_while_makes_a_denying_grant(console, clock: FakeClock):
    app = console()
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await started(pilot)
        request_id = await one_request(pilot, app)
        broker = app.runtime.broker

        await pilot.press("D")
        await until(pilot, lambda: isinstance(app.screen, ForAWhileModal))
        await pilot.press("enter")  # no reason yet
        await until(pilot, lambda: "A reason is required" in error_text(app))
        await type_into(pilot, "#reason", "not this week")
        await pilot.press("enter")  # fifteen minutes, the default
        await until(pilot, lambda: isinstance(app.screen, ApprovalsScreen))

        denied = broker.get(request_id)
        assert denied.state == State.denied and denied.reason == "not this week"
        (grant,) = broker.grants.in_force()
        assert grant.effect == "deny" and grant.expires_at == clock() + 900
        # The next call like it is denied by the grant, without the operator.
        async with AsyncAgent(
            "research-bot",
            app.runtime.paths.socket,
            token=agent_token(app.runtime.paths, "research-bot"),
        ) as agent:
            ticket = await agent.submit(**SEARCH)
            done = await agent.wait_for_outcome(ticket["request_id"], timeout_s=10)
        assert done["state"] == "denied"


async def test_for_a_while_above_the_threshold_needs_the_amount_typed(console):
    app = console(confirm_above_usdc=Decimal("0.005"))
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await started(pilot)
        request_id = await one_request(pilot, app)
        broker = app.runtime.broker

        await pilot.press("A")
        await until(pilot, lambda: isinstance(app.screen, ForAWhileModal))
        await type_into(pilot, "#total", "0.05")
        await type_into(pilot, "#confirm-amount", "0.02")
        await pilot.press("enter")
        await until(pilot, lambda: "0.02 is not the amount" in error_text(app))
        assert broker.get(request_id).state == State.pending

        await type_into(pilot, "#confirm-amount", "0.01")
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, ApprovalsScreen))
        assert broker.get(request_id).decision.approved
        assert len(broker.grants.in_force()) == 1


def test_snapshot_approve_for_a_while(snap_compare: Any, console):
    """The for-a-while dialog: how long, the total, an error from the broker."""
    app = console()

    async def run_before(pilot: Pilot[Any]) -> None:
        await started(pilot)
        await one_request(pilot, app)
        await pilot.press("A")
        await until(pilot, lambda: isinstance(app.screen, ForAWhileModal))
        await type_into(pilot, "#total", "0.005")
        await pilot.press("enter")
        await until(pilot, lambda: "below one call's" in error_text(app))

    assert snap_compare(app, terminal_size=(120, 40), run_before=run_before)


def test_snapshot_deny_for_a_while(snap_compare: Any, console):
    """Deny for a while: how long, and the reason every denied call will carry."""
    app = console()

    async def run_before(pilot: Pilot[Any]) -> None:
        await started(pilot)
        await one_request(pilot, app)
        await pilot.press("D")
        await until(pilot, lambda: isinstance(app.screen, ForAWhileModal))
        await type_into(pilot, "#reason", "not this week")
        await until(pilot, lambda: "not this week" in screen_text(app))

    assert snap_compare(app, terminal_size=(120, 40), run_before=run_before)


def test_snapshot_this_request_only_with_the_amount_typed(snap_compare: Any, console):
    """This request only, above the threshold: the amount to type, then a mistyped one refused."""
    app = console(confirm_above_usdc=Decimal("0.005"))

    async def run_before(pilot: Pilot[Any]) -> None:
        await started(pilot)
        await one_request(pilot, app)
        await pilot.press("a")
        await until(pilot, lambda: isinstance(app.screen, ConfirmAmountModal))
        await type_text(pilot, "0.02")
        await pilot.press("enter")
        await until(
            pilot, lambda: "0.02" in screen_text(app) and "not the amount" in screen_text(app)
        )

    assert snap_compare(app, terminal_size=(120, 40), run_before=run_before)


# -- always -------------------------------------------------------------------------------------


async def test_always_shows_the_diff_then_approves_and_saves_the_rule(console, policy: Path):
    app = console()
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await started(pilot)
        request_id = await one_request(pilot, app)
        broker = app.runtime.broker

        await pilot.press("w")
        await until(pilot, lambda: isinstance(app.screen, AlwaysModal))
        diff = str(app.screen.query_one(PolicyDiff).query_one("Static").render())
        assert '+      agents: ["research-bot"]' in diff and "+        max_usdc: 0.20" in diff
        assert policy.read_text() == POLICY  # nothing written yet

        await type_into(pilot, "#daily", "0.05")
        await until(
            pilot,
            lambda: (
                "+        max_usdc: 0.05"
                in str(app.screen.query_one(PolicyDiff).query_one("Static").render())
            ),
        )
        app.screen.query_one("#confirm", Button).press()
        await until(pilot, lambda: isinstance(app.screen, ApprovalsScreen))

        assert broker.get(request_id).decision.approved
        text = policy.read_text()
        assert text.startswith(POLICY) and f"from request {request_id}" in text
        (rule,) = load_paths([policy]).rules.auto_approve
        assert rule.name == "always research-bot ep_websearch_basic"
        await until(pilot, lambda: "saved to SKILLS.md" in listed_notices(app))


async def test_always_with_a_rule_that_would_break_the_policy_decides_nothing(
    console, policy: Path
):
    # A rule of the same name already there: two auto-approve rules of one name are an error.
    policy.write_text(
        POLICY + '\n```policy\nauto_approve:\n  - name: "always research-bot ep_websearch_basic"\n'
        '    when:\n      agents: ["nobody"]\n```\n'
    )
    app = console()
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await started(pilot)
        request_id = await one_request(pilot, app)
        before = policy.read_text()

        await pilot.press("w")
        await until(pilot, lambda: isinstance(app.screen, AlwaysModal))
        assert "The policy would be invalid" in screen_text(app)
        assert app.screen.query_one("#confirm", Button).disabled
        app.screen.query_one("#daily", Input).focus()
        await pilot.press("enter")
        await until(pilot, lambda: "nothing was decided" in error_text(app))
        await pilot.press("escape")
        await until(pilot, lambda: isinstance(app.screen, ApprovalsScreen))
        assert app.runtime.broker.get(request_id).state == State.pending
        assert policy.read_text() == before


def test_snapshot_approve_always(snap_compare: Any, console, policy: Path):
    """The always dialog: the file, the daily budget, the check and the diff of SKILLS.md."""
    app = console()

    async def run_before(pilot: Pilot[Any]) -> None:
        await started(pilot)
        await one_request(pilot, app)
        await pilot.press("w")
        await until(pilot, lambda: isinstance(app.screen, AlwaysModal))
        await pilot.pause()

    assert snap_compare(app, terminal_size=(120, 40), run_before=run_before)


# -- the requests already waiting that a grant or a rule matches ---------------------------------


async def three_alike(pilot: Pilot[Any], app: ConsoleApp) -> list[str]:
    """Three searches of research-bot's and one of another agent's, all waiting."""
    ids = []
    for agent, query in (("research-bot", "a"), ("research-bot", "b"), ("research-bot", "c")):
        async with AsyncAgent(
            agent, app.runtime.paths.socket, token=agent_token(app.runtime.paths, agent)
        ) as client:
            ids.append(
                (await client.submit(**{**SEARCH, "inputs": {"query": query}}))["request_id"]
            )
    async with AsyncAgent(
        "other-bot", app.runtime.paths.socket, token=agent_token(app.runtime.paths, "other-bot")
    ) as client:
        await client.submit(**SEARCH)
    await rows(pilot, 4)
    await clear_notices(pilot)
    return ids


async def select(pilot: Pilot[Any], app: ConsoleApp, request_id: str) -> None:
    """Put the cursor on `request_id` and wait for its detail."""
    app.screen.queue.move_cursor(row=list(app.screen.queue.requests).index(request_id))
    await until(pilot, lambda: app.screen.query_one("#detail").request.id == request_id)


async def offered_after(
    pilot: Pilot[Any], key: str, field: str, typed: str
) -> tuple[str, list[str]]:
    """Three alike waiting, `key` (A or D) on the first with `typed` in its dialog's `field`:
    the offer of the others is open. The first request's id, and the others'."""
    app = pilot.app
    await started(pilot)
    first, *others = await three_alike(pilot, app)
    await select(pilot, app, first)
    await pilot.press(key)
    await until(pilot, lambda: isinstance(app.screen, ForAWhileModal))
    await type_into(pilot, field, typed)
    await pilot.press("enter")
    await until(pilot, lambda: isinstance(app.screen, BulkModal))
    return first, others


async def test_after_a_grant_the_waiting_requests_it_matches_are_offered(console):
    """`A` on one of three alike: the two others waiting are offered, with their total, and
    approved through the dialog of marked requests (each its own decision, as shown); the
    other agent's request is left alone."""
    app = console()
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        first, others = await offered_after(pilot, "A", "#total", "0.05")
        broker = app.runtime.broker
        asked = "2 more waiting requests match: approve them too?"
        await until(pilot, lambda: asked in screen_text(app))
        text = screen_text(app)
        assert "2 requests, up to 0.02 USDC in all" in text
        assert sorted(r.id for r in app.screen.requests) == sorted(others)
        app.screen.query_one("#confirm", Button).press()
        await until(pilot, lambda: isinstance(app.screen, ApprovalsScreen))
        await until(pilot, lambda: all(broker.get(i).decision is not None for i in others))
        assert all(broker.get(i).decision.approved for i in others)
        # Each by the operator's own decision on the facts the dialog showed.
        assert all(broker.get(i).decision.by == broker.get(first).decision.by for i in others)
        await rows(pilot, 1)


async def test_declining_the_offer_decides_nothing_more(console):
    app = console()
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        first, others = await offered_after(pilot, "D", "#reason", "not this week")
        broker = app.runtime.broker
        await until(
            pilot, lambda: "2 more waiting requests match: deny them too?" in screen_text(app)
        )
        await pilot.press("escape")
        await until(pilot, lambda: isinstance(app.screen, ApprovalsScreen))
        assert broker.get(first).state == State.denied
        assert [broker.get(i).state for i in others] == [State.pending, State.pending]


async def test_after_a_rule_the_waiting_requests_it_matches_are_offered(console, policy: Path):
    app = console()
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await started(pilot)
        first, *_others = await three_alike(pilot, app)
        await select(pilot, app, first)
        await pilot.press("w")
        await until(pilot, lambda: isinstance(app.screen, AlwaysModal))
        app.screen.query_one("#confirm", Button).press()
        await until(pilot, lambda: isinstance(app.screen, BulkModal))
        asked = "2 more waiting requests match: approve them too?"
        await until(pilot, lambda: asked in screen_text(app))
