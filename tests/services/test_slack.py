"""Approvals from Slack, end to end: a real runtime against the sandbox, the real slack-bolt app
connected over Socket Mode to a stand-in of Slack on loopback (tests/slack_standin.py), and
operators pressing the buttons of the messages the console posted."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from decimal import Decimal
from typing import Any

import pytest
from helpers import FakeClock, submit
from slack_standin import APP_TOKEN, BOT_TOKEN, CHANNEL, Message, SlackStandIn
from test_metrics import scrape, value

from svc_console.broker.deciders import Decider
from svc_console.broker.params import ApproveParams, DenyParams
from svc_console.config.operator_accounts import OperatorAccounts
from svc_console.config.slack_settings import SlackSettings
from svc_console.core.shown_facts import facts_digest
from svc_console.core.states import FINAL, State
from svc_console.runtime import Runtime
from svc_console.services.slack_layout import APPROVE, DENY

ALICE, BOB, STRANGER = "U0ALICE", "U0BOB", "U0STRANGER"
# A web search costs 0.01 USDC in the sandbox.
TWO_PERSON = "```policy\ntwo_person:\n  above_usdc: 0.005\n```\n"


@pytest.fixture
async def standin() -> AsyncIterator[SlackStandIn]:
    slack = await SlackStandIn().start()
    yield slack
    await slack.stop()


@pytest.fixture
async def console(make_runtime, standin) -> AsyncIterator[Callable[..., Any]]:
    """Start a console whose [slack] speaks to the stand-in, with operators alice and bob linked
    to their Slack users; connected once it returns."""
    started: list[Runtime] = []

    async def run(
        *, policy: str | None = None, clock: Any = None, metrics: bool = False, **config: Any
    ) -> Runtime:
        runtime = make_runtime(clock=clock, **config)
        runtime.metrics_at = ("127.0.0.1", 0) if metrics else None
        accounts = OperatorAccounts(runtime.paths.operator_accounts)
        for name, user in (("alice", ALICE), ("bob", BOB)):
            accounts.add(name)
            accounts.link_slack(name, user)
        if policy is not None:
            (runtime.paths.home / "SKILLS.md").write_text(policy)
        runtime.slack_settings = SlackSettings(CHANNEL, BOT_TOKEN, APP_TOKEN, standin.api_url)
        runtime.slack_options = {"ping_interval_s": 0.2, "retry_s": 0.05}
        await runtime.start()
        started.append(runtime)
        await standin.wait_for(lambda: standin.connections >= 1)
        return runtime

    yield run
    for runtime in started:
        if runtime.broker is not None:
            await runtime.stop()


async def waiting(runtime: Runtime, standin: SlackStandIn, **overrides: Any) -> tuple[str, Message]:
    """A web search waiting for an operator, and its message in the channel."""
    ticket = await submit(runtime, "research-bot", **overrides)
    rid = ticket["request_id"]
    request = await runtime.broker.wait(rid, 15, any_change=True, seen=State.received)
    while request.state in (State.received, State.inspecting):
        request = await runtime.broker.wait(rid, 15, any_change=True, seen=request.state)
    assert request.state == State.pending
    message = await standin.wait_for(lambda: standin.message_of(rid))
    return rid, message


async def settled(runtime: Runtime, rid: str) -> Any:
    return await runtime.broker.wait(rid, 15)


def shows(message: Message, *words: str) -> bool:
    return all(word in message.shown() for word in words)


async def test_a_waiting_request_is_posted_facts_first_then_the_agent_words_then_buttons(
    console, standin
):
    runtime = await console()
    rid, message = await waiting(runtime, standin, purpose="compare heat pump prices")
    lines = message.shown().split("\n")
    labels = [line.split(":")[0] for line in lines if ":" in line]
    assert labels[:9] == [
        "Waiting for an operator", "cost", "recipient", "provider", "pays on", "verdict",
        "risks", "agent", "buying",
    ]  # fmt: skip
    assert "cost: 0.01 USDC · approving allows up to 0.01 USDC" in lines
    assert "agent: research-bot (unverified name)" in lines
    words = lines.index("What the agent wrote (its words, not the console's):")
    assert words > lines.index("cost: 0.01 USDC · approving allows up to 0.01 USDC")
    assert lines[words + 1] == 'purpose: "compare heat pump prices"'
    for action in (APPROVE, DENY):
        _block, button = message.button(action)
        value = json.loads(button["value"])
        assert value == {"request": rid, "seen": facts_digest(runtime.broker.get(rid))}
    assert len(standin.messages) == 1


async def test_a_linked_operator_approves_and_the_message_shows_what_was_paid(console, standin):
    runtime = await console()
    rid, message = await waiting(runtime, standin)
    await standin.press(ALICE, message, APPROVE)
    request = await settled(runtime, rid)
    assert request.state == State.succeeded
    decision = request.decision
    assert decision.approved and decision.by == "alice"
    evidence = decision.evidence
    assert (evidence.channel, evidence.operator, evidence.slack_user) == ("slack", "alice", ALICE)
    assert evidence.summary() == f"operator alice · slack · user {ALICE}"
    await standin.wait_for(lambda: shows(message, "Paid: ", "paid 0.01 USDC on"))
    assert "approved by alice (slack) up to 0.01 USDC" in message.shown()
    assert message.button(APPROVE) is None and message.button(DENY) is None


async def test_a_deny_asks_why_and_the_reason_is_recorded(console, standin):
    runtime = await console()
    rid, message = await waiting(runtime, standin)
    await standin.press(BOB, message, DENY)
    view_id = await standin.wait_for(lambda: next(iter(standin.views), None))
    assert standin.views[view_id]["callback_id"] == "svc_deny_reason"
    assert runtime.broker.get(rid).state == State.pending  # nothing decided by the press

    kept_open = await standin.submit(BOB, view_id, {"reason": "   "})
    assert kept_open == {"response_action": "errors", "errors": {"reason": "say why"}}
    assert runtime.broker.get(rid).state == State.pending

    assert await standin.submit(BOB, view_id, {"reason": "not this provider"}) == {}
    request = runtime.broker.get(rid)
    assert request.state == State.denied
    assert request.decision.note == "not this provider" and request.decision.by == "bob"
    assert request.decision.evidence.slack_user == BOB
    await standin.wait_for(lambda: shows(message, "Denied: ", 'denied by bob (slack): "not'))


async def test_above_the_threshold_the_amount_is_typed_in_a_modal(console, standin):
    runtime = await console(confirm_above_usdc=Decimal("0.005"))
    rid, message = await waiting(runtime, standin)
    assert "type 0.01 to confirm" in message.shown()
    await standin.press(ALICE, message, APPROVE)
    view_id = await standin.wait_for(lambda: next(iter(standin.views), None))
    modal = standin.views[view_id]
    assert modal["callback_id"] == "svc_approve_amount"
    assert "Type the amount to approve: 0.01 USDC" in json.dumps(modal)
    assert runtime.broker.get(rid).state == State.pending  # the press alone approved nothing

    for typed, said in (("0.1", "0.10 USDC is not the amount"), ("ten", "the amount must be")):
        kept_open = await standin.submit(ALICE, view_id, {"amount": typed})
        assert kept_open["response_action"] == "errors"
        assert said in kept_open["errors"]["amount"]
        assert runtime.broker.get(rid).state == State.pending

    assert await standin.submit(ALICE, view_id, {"amount": "0.01"}) == {}
    request = await settled(runtime, rid)
    assert request.state == State.succeeded and request.decision.evidence.channel == "slack"


async def test_a_slack_user_linked_to_no_operator_is_refused_and_the_refusal_kept(console, standin):
    runtime = await console()
    rid, message = await waiting(runtime, standin)
    for action in (APPROVE, DENY):
        await standin.press(STRANGER, message, action)
    told = await standin.wait_for(lambda: len(standin.told(STRANGER)) == 2)
    told = standin.told(STRANGER)
    assert all("not linked to an operator account" in line for line in told)
    assert f"svc-console operators link NAME --slack {STRANGER}" in told[0]
    assert standin.views == {}  # no modal for someone who may not decide
    request = runtime.broker.get(rid)
    assert request.state == State.pending and request.decision is None
    refusals = [e for e in runtime.ledger.events(rid) if e["type"] == "decision_refused"]
    assert len(refusals) == 2
    data = json.loads(refusals[0]["data"])
    assert data["evidence"]["channel"] == "slack" and data["evidence"]["slack_user"] == STRANGER
    assert data["evidence"]["operator"] is None


async def test_a_decision_elsewhere_updates_the_message(console, standin):
    runtime = await console()
    rid, message = await waiting(runtime, standin)
    await runtime.broker.deny(DenyParams(request_id=rid, reason="seen in the TUI"))
    await standin.wait_for(lambda: shows(message, "Denied: ", "(tui)", "seen in the TUI"))
    assert message.button(APPROVE) is None

    # A press on the old message (a client not redrawn yet) decides nothing more.
    await standin.press(ALICE, message, APPROVE, blocks=message.versions[0])
    told = await standin.wait_for(lambda: standin.told(ALICE))
    assert f"request {rid} is denied, not pending" in told[0]
    assert runtime.broker.get(rid).decision.evidence.channel == "tui"


async def test_an_expired_request_says_so(console, standin):
    clock = FakeClock()
    runtime = await console(clock=clock, pending_ttl_s=60)
    rid, message = await waiting(runtime, standin)
    clock.advance(61)
    await standin.wait_for(lambda: shows(message, "Expired: ", "no operator decided in time"))
    assert runtime.broker.get(rid).state == State.expired


async def test_a_press_on_facts_changed_since_the_post_is_refused_and_the_message_updated(
    console, standin, sandbox
):
    runtime = await console()
    rid, message = await waiting(runtime, standin)
    first = message.versions[0]
    sandbox.state.reprice_factor = Decimal(3)  # the provider asks three times the price
    await standin.press(ALICE, message, APPROVE)
    await standin.wait_for(lambda: shows(message, "Waiting", "approving allows up to 0.03 USDC"))
    sandbox.state.reprice_factor = Decimal(1)
    repriced = runtime.broker.get(rid)
    assert repriced.state == State.pending and repriced.reason

    # Pressed on the message as first posted (a client not redrawn yet): refused.
    await standin.press(BOB, message, APPROVE, blocks=first)
    told = await standin.wait_for(lambda: standin.told(BOB))
    assert f"{rid} changed since it was shown" in told[0]
    assert runtime.broker.get(rid).state == State.pending
    _block, button = message.button(APPROVE)
    assert json.loads(button["value"])["seen"] == facts_digest(runtime.broker.get(rid))

    await standin.press(BOB, message, APPROVE)  # on the facts shown now
    request = await settled(runtime, rid)
    assert request.state == State.succeeded and request.decision.by == "bob"


async def test_the_two_person_rule_counts_slack_and_terminal_approvals_alike(console, standin):
    runtime = await console(policy=TWO_PERSON)
    rid, message = await waiting(runtime, standin)
    await standin.press(ALICE, message, APPROVE)
    told = await standin.wait_for(lambda: standin.told(ALICE))
    assert "a second operator approves it too" in told[0]
    await standin.wait_for(lambda: shows(message, "approved by alice; needs a second operator"))
    assert runtime.broker.get(rid).state == State.pending

    await standin.press(ALICE, message, APPROVE)  # the same operator again: refused
    await standin.wait_for(lambda: len(standin.told(ALICE)) == 2)
    assert "already approved" in standin.told(ALICE)[1]

    await runtime.broker.approve(ApproveParams(request_id=rid), Decider.this_process("bob"))
    request = await settled(runtime, rid)
    assert request.state == State.succeeded and request.decision.by == "alice, bob"
    await standin.wait_for(lambda: shows(message, "Paid: ", "approved by alice, bob (tui)"))


@pytest.mark.parametrize("abrupt", [False, True], ids=["disconnect", "cut"])
async def test_the_console_reconnects_after_the_socket_drops(console, standin, abrupt):
    runtime = await console()
    rid, message = await waiting(runtime, standin)
    await standin.drop(abrupt=abrupt)
    await standin.wait_for(lambda: standin.connections == 2 and standin._sockets)
    assert standin.calls.count("apps.connections.open") == 2
    await standin.press(ALICE, message, APPROVE)
    request = await settled(runtime, rid)
    assert request.state in FINAL and request.decision.evidence.channel == "slack"


async def test_a_post_that_failed_is_tried_again_and_counted_in_the_metrics(console, standin):
    runtime = await console(metrics=True)
    standin.fail_next["chat.postMessage"] = "internal_error"
    rid, message = await waiting(runtime, standin)
    assert standin.calls.count("chat.postMessage") == 2
    await standin.press(ALICE, message, APPROVE)
    assert (await settled(runtime, rid)).state == State.succeeded
    samples = await scrape(runtime)
    assert value(samples, "svc_console_slack_failures_total") == 1
    decided = {"outcome": "approved", "channel": "slack"}
    assert value(samples, "svc_console_decisions_total", **decided) == 1


async def test_a_restart_updates_the_messages_already_posted(console, standin):
    runtime = await console()
    rid, message = await waiting(runtime, standin)
    await runtime.stop()
    runtime.slack_settings = None  # read again at the start, as a real restart does
    (runtime.paths.settings).write_text(
        f'[slack]\nchannel = "{CHANNEL}"\nbot_token_file = "bot.token"\n'
        f'app_token_file = "app.token"\napi_url = "{standin.api_url}"\n'
    )
    for name, token in (("bot.token", BOT_TOKEN), ("app.token", APP_TOKEN)):
        (runtime.paths.home / name).write_text(token)
        (runtime.paths.home / name).chmod(0o600)
    await runtime.start()
    await standin.wait_for(lambda: standin.connections == 2)
    await standin.press(BOB, message, APPROVE)
    assert (await settled(runtime, rid)).state == State.succeeded
    await standin.wait_for(lambda: shows(message, "Paid: "))
    assert standin.calls.count("chat.postMessage") == 1  # the same message, updated
