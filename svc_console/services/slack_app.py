"""Approvals from Slack (settings.toml `[slack]`): a slack-bolt app over Socket Mode, so the console
opens the connection and needs no inbound address.

Requests that wait for an operator are posted to the channel (`slack_messages.py`, laid out by
`slack_layout.py`). A button press is a decision only from a Slack user linked to an operator
account (`svc-console operators link NAME --slack USER_ID`), as pinned when the console started;
anyone else is told so and the refusal is kept in the audit chain. Decisions go through
`Broker.approve` and `Broker.deny` with a decider of their own (channel `slack`, the operator and
the Slack user in the evidence), so every check of the broker applies: the facts the message
showed (its buttons carry their digest), the typed amount above the confirmation threshold (a
modal), the two-person rule, the policy, the request's state. A deny asks why, in a modal.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from svc_console.broker import errors
from svc_console.broker.as_shown import refuse_if_changed
from svc_console.broker.deciders import Decider
from svc_console.broker.params import ApproveParams, DenyParams
from svc_console.config.operator_accounts import SLACK_USER
from svc_console.config.slack_settings import SlackSettings
from svc_console.core.models import Evidence, SpendRequest
from svc_console.core.money import parse_usdc
from svc_console.core.shown_facts import DIGEST
from svc_console.core.states import State
from svc_console.core.tasks import cancel_and_wait
from svc_console.services import slack_layout as layout
from svc_console.services.slack_messages import RETRY_S, SlackMessages
from svc_console.services.slack_web import SlackWeb

log = logging.getLogger(__name__)

PING_INTERVAL_S = 10.0
TOLD_CHARS = 400


@dataclass(frozen=True)
class SlackDecider(Decider):
    """An operator deciding from Slack: no process of ours to name, the Slack user instead."""

    slack_user: str | None = None

    @classmethod
    def of(cls, operator: str | None, user: str | None) -> SlackDecider:
        return cls("slack", None, None, operator, slack_user=user)  # type: ignore[arg-type]

    def evidence(self) -> Evidence:
        return Evidence(channel="slack", operator=self.operator, slack_user=self.slack_user)


@dataclass(frozen=True)
class Pressed:
    """A decision asked for from Slack: which request, on which facts, by whom, from where."""

    request_id: str
    seen: str | None
    user: str
    channel: str | None
    trigger_id: str | None = None

    def metadata(self) -> dict[str, str | None]:
        """What a modal carries to its submission."""
        return {"request": self.request_id, "seen": self.seen, "channel": self.channel}


class SlackApprovals:
    def __init__(
        self,
        settings: SlackSettings,
        operators: Any,
        *,
        messages_file: Path,
        ping_interval_s: float = PING_INTERVAL_S,
        retry_s: float = RETRY_S,
    ):
        """`operators`: the accounts pinned at start (`PinnedAccounts`), whose Slack links say
        who may decide."""
        self.settings, self.operators = settings, operators
        self._messages_file, self._ping_interval_s, self._retry_s = (
            messages_file,
            ping_interval_s,
            retry_s,
        )
        self.web: SlackWeb | None = None
        self.messages: SlackMessages | None = None
        self.broker: Any = None
        self._handler: Any = None
        self._connecting: asyncio.Task[None] | None = None

    @property
    def failures(self) -> int:
        """Slack Web API calls that failed since the start."""
        return self.web.failures if self.web is not None else 0

    async def start(self, broker: Any) -> None:
        """Post and follow `broker`'s requests, and connect to Slack in the background: a Slack
        that cannot be reached delays nothing of the console's."""
        from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler
        from slack_bolt.async_app import AsyncApp

        self.broker = broker
        self.web = SlackWeb(self.settings.bot_token, self.settings.api_url)
        app = AsyncApp(client=self.web.client, logger=log)
        app.action(layout.APPROVE)(self._approve_pressed)
        app.action(layout.DENY)(self._deny_pressed)
        app.view(layout.AMOUNT_VIEW)(self._amount_given)
        app.view(layout.REASON_VIEW)(self._reason_given)
        self._handler = AsyncSocketModeHandler(
            app, self.settings.app_token, logger=log, ping_interval=self._ping_interval_s
        )
        self.messages = SlackMessages(
            self.web, self.settings.channel, self._messages_file, retry_s=self._retry_s
        )
        self.messages.start(broker)
        self._connecting = asyncio.create_task(self._connect(), name="slack-connect")

    async def _connect(self) -> None:
        assert self.web is not None
        if await self.web.call("auth_test") is not None:
            log.info("Slack: approvals posted to channel %s", self.settings.channel)
        await self._handler.connect_async()  # retried by the client until it connects

    async def stop(self) -> None:
        await cancel_and_wait([self._connecting])
        if self.messages is not None:
            await self.messages.stop()
        if self._handler is not None:
            with contextlib.suppress(Exception):
                await self._handler.close_async()
            self._handler = None

    # -- the buttons ---------------------------------------------------------------------------

    async def _approve_pressed(self, ack: Any, body: dict[str, Any]) -> None:
        await ack()
        pressed = _pressed(body)
        decider = self._decider(pressed) if pressed is not None else None
        request = await self._as_shown(pressed) if decider is not None else None
        if request is None or pressed is None or decider is None:
            return
        amount = self.broker.confirmation_needed(request)
        if amount is None:
            await self._tell(pressed, await self._decide(pressed, decider, approve=True))
            return
        view = layout.approve_modal(request, amount, pressed.metadata())
        await self._call("views_open", trigger_id=pressed.trigger_id, view=view)

    async def _deny_pressed(self, ack: Any, body: dict[str, Any]) -> None:
        await ack()
        pressed = _pressed(body)
        decider = self._decider(pressed) if pressed is not None else None
        request = await self._as_shown(pressed) if decider is not None else None
        if request is None or pressed is None:
            return
        view = layout.deny_modal(request, pressed.metadata())
        await self._call("views_open", trigger_id=pressed.trigger_id, view=view)

    # -- the modals ----------------------------------------------------------------------------

    async def _amount_given(self, ack: Any, body: dict[str, Any], view: dict[str, Any]) -> None:
        pressed = _submitted(body, view)
        try:
            amount = parse_usdc(_typed(view, "amount"))
        except ValueError as exc:
            await ack(response_action="errors", errors={"amount": f"the amount {exc}"})
            return
        await self._given(ack, pressed, "amount", approve=True, amount=amount)

    async def _reason_given(self, ack: Any, body: dict[str, Any], view: dict[str, Any]) -> None:
        reason = _typed(view, "reason").strip()
        if not reason:
            await ack(response_action="errors", errors={"reason": "say why"})
            return
        await self._given(ack, _submitted(body, view), "reason", approve=False, reason=reason)

    async def _given(self, ack: Any, pressed: Pressed | None, block: str, **decision: Any) -> None:
        """A modal submitted: decided, or left open with the broker's refusal under its input."""
        decider = self._decider(pressed) if pressed is not None else None
        if pressed is None or decider is None:
            await ack()
            return
        said = await self._decide(pressed, decider, **decision)
        if isinstance(said, errors.BrokerError):
            await ack(response_action="errors", errors={block: layout.untrusted(said, 150)})
            return
        await ack()
        await self._tell(pressed, said)

    # -- deciding ------------------------------------------------------------------------------

    def _decider(self, pressed: Pressed) -> SlackDecider | None:
        """The operator the Slack user decides as; None, after saying so and keeping the
        refusal in the audit chain, for a Slack user linked to no operator account."""
        user = pressed.user if SLACK_USER.match(pressed.user) else None
        account = self.operators.slack_operator(user) if user is not None else None
        if account is not None:
            return SlackDecider.of(account.name, user)
        refused = SlackDecider.of(None, user)
        with contextlib.suppress(errors.BrokerError):
            self.broker.refuse(
                pressed.request_id,
                f"Slack user {user or '(unrecognised)'} is not linked to an operator account",
                refused,
            )
        self._spawn_tell(
            pressed,
            "You are not linked to an operator account of this console, so nothing was decided."
            " An operator links you with: svc-console operators link NAME --slack"
            f" {user or 'YOUR_MEMBER_ID'}",
        )
        return None

    async def _as_shown(self, pressed: Pressed) -> SpendRequest | None:
        """The request, still waiting and with the facts the message showed; else None, the
        user told why and the message brought up to date."""
        try:
            request = self.broker.get(pressed.request_id)
            if request.state != State.pending:
                raise errors.WrongState(f"request {request.id} is {request.state}, not pending")
            refuse_if_changed(request, pressed.seen)
        except errors.BrokerError as exc:
            self._refresh(pressed.request_id)
            await self._tell(pressed, exc)
            return None
        return request

    async def _decide(
        self,
        pressed: Pressed,
        decider: SlackDecider,
        *,
        approve: bool,
        amount: Decimal | None = None,
        reason: str | None = None,
    ) -> str | errors.BrokerError | None:
        """The broker's decision: None when done, a line for the user when there is one to
        say, or the broker's refusal."""
        base = {"request_id": pressed.request_id, "seen": pressed.seen}
        try:
            if approve:
                params = ApproveParams(**base, confirm_amount=amount)
                request = await self.broker.approve(params, decider)
            else:
                request = await self.broker.deny(DenyParams(**base, reason=reason), decider)
        except ValidationError as exc:
            return errors.InvalidParams(f"not decided: {exc.errors()[0]['msg']}")
        except errors.BrokerError as exc:
            self._refresh(pressed.request_id)
            return exc
        if approve and request.state == State.pending:
            return (
                f"Your approval of {request.id} is recorded: under the two-person rule, a second"
                " operator approves it too."
            )
        return None

    def _refresh(self, request_id: str) -> None:
        """Bring the request's message up to date (it changed, or was decided elsewhere)."""
        if self.messages is not None:
            with contextlib.suppress(errors.BrokerError):
                self.messages.changed(self.broker.get(request_id))

    # -- telling the user ----------------------------------------------------------------------

    async def _tell(self, pressed: Pressed, said: str | Exception | None) -> None:
        """A line only the pressing user sees, in the channel of the message."""
        if said is None or pressed.channel is None:
            return
        text = layout.untrusted(said, TOLD_CHARS)
        await self._call(
            "chat_postEphemeral",
            channel=pressed.channel,
            user=pressed.user,
            text=text,
            blocks=[{"type": "section", "text": layout.plain(text)}],
        )

    def _spawn_tell(self, pressed: Pressed, said: str) -> None:
        task = asyncio.create_task(self._tell(pressed, said), name="slack-tell")
        task.add_done_callback(lambda done: done.cancelled() or done.exception())

    async def _call(self, method: str, **arguments: Any) -> None:
        if self.web is not None:
            await self.web.call(method, **arguments)


def _pressed(body: dict[str, Any]) -> Pressed | None:
    """A button press from its payload; None for one that is not ours or not whole."""
    try:
        value = json.loads(body["actions"][0]["value"])
        channel = (body.get("container") or {}).get("channel_id")
        return _checked(value, str(body["user"]["id"]), channel, body.get("trigger_id"))
    except (KeyError, IndexError, TypeError, ValueError):
        log.warning("a Slack button press that is not whole was ignored")
        return None


def _submitted(body: dict[str, Any], view: dict[str, Any]) -> Pressed | None:
    try:
        meta = json.loads(view["private_metadata"])
        return _checked(meta, str(body["user"]["id"]), meta.get("channel"), None)
    except (KeyError, TypeError, ValueError, AttributeError):
        log.warning("a Slack modal that is not whole was ignored")
        return None


def _checked(value: dict[str, Any], user: str, channel: Any, trigger_id: Any) -> Pressed | None:
    request_id, seen = value.get("request"), value.get("seen")
    if not isinstance(request_id, str) or not 0 < len(request_id) <= 100:
        raise ValueError("no request id")
    if seen is not None and not (isinstance(seen, str) and DIGEST.match(seen)):
        raise ValueError("not a digest")
    channel = channel if isinstance(channel, str) else None
    trigger = trigger_id if isinstance(trigger_id, str) else None
    return Pressed(request_id, seen, user, channel, trigger)


def _typed(view: dict[str, Any], block: str) -> str:
    """What was typed into the modal's input `block`."""
    try:
        return str(view["state"]["values"][block][block]["value"] or "")
    except (KeyError, TypeError):
        return ""
