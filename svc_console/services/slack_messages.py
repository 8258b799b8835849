"""The Slack messages of the requests that waited for an operator, each kept true to its request.

A request that reaches `pending` is posted to the channel; every change after (a decision here,
in the TUI, over the CLI or by another broker; an expiry; the payment and what it charged; a
re-priced request back before the operator) updates its message, until the request is final.
The broker's listener only notes the request and starts one task per request, so a slow Slack
never holds up a decision; changes that arrive while a message is being updated are shown by one
more update, with the request as it last was. A call that failed is tried again every
`retry_s`. Which message shows which request is kept in an owner-only file, so a restart updates
the messages already posted rather than posting them twice.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from svc_console.core.models import SpendRequest
from svc_console.core.private_files import NotPrivate, read_private, write_private
from svc_console.core.states import FINAL, State
from svc_console.core.tasks import cancel_and_wait
from svc_console.services import slack_layout
from svc_console.services.slack_web import SlackWeb

log = logging.getLogger(__name__)

RETRY_S = 30.0
STOP_WAIT_S = 5.0


class SlackMessages:
    def __init__(self, web: SlackWeb, channel: str, file: Path, *, retry_s: float = RETRY_S):
        self.web, self.channel, self.file, self.retry_s = web, channel, file, retry_s
        self.posted: dict[str, dict[str, str]] = _load(file)  # request id → channel and ts
        self._shown: dict[str, str] = {}  # request id → digest of the message last sent
        self._latest: dict[str, SpendRequest] = {}  # changes not shown yet
        self._busy: set[str] = set()
        self._retry: set[str] = set()
        self._tasks: set[asyncio.Task[None]] = set()
        self._broker: Any = None
        self._unsubscribe: Callable[[], None] | None = None
        self._retrying: asyncio.Task[None] | None = None

    def start(self, broker: Any) -> None:
        """Follow `broker`; post what waits and is not posted yet, and bring the messages
        posted before a restart up to date."""
        self._broker = broker
        self._unsubscribe = broker.subscribe(self.changed)
        for request in broker.pending():
            self.changed(request)
        self._retry.update(request_id for request_id in self.posted if request_id not in self._busy)
        self._retrying = asyncio.create_task(self._retry_forever(), name="slack-retry")

    async def stop(self) -> None:
        if self._unsubscribe is not None:
            with contextlib.suppress(ValueError):
                self._unsubscribe()
            self._unsubscribe = None
        if self._tasks:  # a post under way is let finish, so its message is not posted twice
            await asyncio.wait(set(self._tasks), timeout=STOP_WAIT_S)
        await cancel_and_wait([*self._tasks, self._retrying])
        self._retrying = None

    def changed(self, request: SpendRequest) -> None:
        """The broker's listener: cheap, on every change of every request."""
        busy = request.id in self._busy
        if request.state != State.pending and request.id not in self.posted and not busy:
            return
        self._latest[request.id] = request
        if busy:
            return  # the task under way (its first post, maybe) shows it next
        self._busy.add(request.id)
        task = asyncio.create_task(self._keep_true(request.id), name=f"slack-{request.id}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def message_of(self, request_id: str) -> dict[str, str] | None:
        """Where the message of `request_id` is: its channel and ts."""
        return self.posted.get(request_id)

    async def _keep_true(self, request_id: str) -> None:
        try:
            while request_id in self._latest:
                request = self._latest.pop(request_id)
                try:
                    await self._show(request)
                except Exception:
                    log.exception("the Slack message of %s was not updated", request_id)
                    self._retry.add(request_id)
        finally:
            self._busy.discard(request_id)

    async def _show(self, request: SpendRequest) -> None:
        broker = self._broker
        waiting = request.state == State.pending
        body = slack_layout.message(
            request,
            confirm=broker.confirmation_needed(request) if waiting else None,
            status=broker.decisions.two_person_status(request),
        )
        digest = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()
        where = self.posted.get(request.id)
        if where is not None and self._shown.get(request.id) == digest:
            self._forget_if_final(request)
            return
        if where is None:
            answer = await self.web.call("chat_postMessage", channel=self.channel, **body)
            if answer is not None:
                where = {"channel": str(answer.get("channel")), "ts": str(answer.get("ts"))}
                self.posted[request.id] = where
                self._save()
        else:
            answer = await self.web.call("chat_update", **where, **body)
        if answer is None:
            self._retry.add(request.id)
            return
        self._shown[request.id] = digest
        self._forget_if_final(request)

    def _forget_if_final(self, request: SpendRequest) -> None:
        if request.state in FINAL and self.posted.pop(request.id, None) is not None:
            self._shown.pop(request.id, None)
            self._save()

    async def _retry_forever(self) -> None:
        while True:
            for request_id in list(self._retry):
                self._retry.discard(request_id)
                with contextlib.suppress(Exception):
                    self.changed(self._broker.get(request_id))
            await asyncio.sleep(self.retry_s)

    def _save(self) -> None:
        try:
            write_private(self.file, json.dumps({"messages": self.posted}, indent=1) + "\n")
        except OSError as exc:
            log.warning("cannot keep the Slack messages in %s: %s", self.file, exc.strerror)


def _load(file: Path) -> dict[str, dict[str, str]]:
    try:
        messages = json.loads(read_private(file)).get("messages", {})
    except FileNotFoundError:
        return {}
    except (NotPrivate, ValueError, AttributeError, OSError) as exc:
        log.warning("Slack messages file %s not read (%s): new messages are posted", file, exc)
        return {}
    return {
        str(request_id): {"channel": str(where["channel"]), "ts": str(where["ts"])}
        for request_id, where in messages.items()
        if isinstance(where, dict) and {"channel", "ts"} <= set(where)
    }
