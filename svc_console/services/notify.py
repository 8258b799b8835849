"""Telling an operator who is away: the `[notify]` webhooks, sent from beside the broker.

The broker's and the policy's listeners only hand a change to `EventWatch` and start a task per
webhook, so a slow or dead receiver never holds up a decision. Each delivery is tried up to
`attempts` times, with a doubling pause, on a network error, a 5xx or a 429; any other answer is
final. At most `max_per_minute` notices leave in any minute; beyond that they are dropped, counted,
and the log says so once per burst. A failure is one line in the log naming the receiver's host
only: a webhook's address may carry a token in its path or query.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from collections.abc import Callable
from typing import Any

import httpx

from svc_console.config.notify_settings import NotifySettings, Webhook
from svc_console.core.models import SpendRequest
from svc_console.core.tasks import cancel_and_wait
from svc_console.market.http import tls
from svc_console.services.notify_events import EventWatch
from svc_console.services.notify_messages import Notice, render

log = logging.getLogger(__name__)

ATTEMPTS = 3
BACKOFF_S = 1.0
SWEEP_S = 1.0
TIMEOUT_S = 10.0
WINDOW_S = 60.0


class Notifier:
    def __init__(
        self,
        settings: NotifySettings,
        *,
        clock: Callable[[], float] = time.time,
        attempts: int = ATTEMPTS,
        backoff_s: float = BACKOFF_S,
        sweep_s: float = SWEEP_S,
        transport: httpx.AsyncBaseTransport | None = None,
        monotonic: Callable[[], float] = time.monotonic,
    ):
        self.settings = settings
        self.watch = EventWatch(settings, clock)
        self.attempts = attempts
        self.backoff_s = backoff_s
        self.sweep_s = sweep_s
        self._transport = transport
        self._monotonic = monotonic
        self._client: httpx.AsyncClient | None = None
        self._broker: Any = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._sent_at: deque[float] = deque()
        self._tasks: set[asyncio.Task[None]] = set()
        self._sweep: asyncio.Task[None] | None = None
        self._unsubscribe: list[Callable[[], None]] = []
        self._dropping = 0  # dropped in the current burst
        # What happened to the notices, for `serve`'s operator and the tests.
        self.admitted = 0  # within the rate bound, each sent to every webhook
        self.sent = 0  # deliveries a webhook accepted
        self.failed = 0
        self.dropped = 0

    async def start(self, broker: Any, policy: Any = None) -> None:
        """Follow `broker` (and `policy`, a LivePolicy, when there is one)."""
        self._broker = broker
        self._loop = asyncio.get_running_loop()
        self._client = httpx.AsyncClient(
            verify=tls(),
            timeout=httpx.Timeout(TIMEOUT_S, connect=5.0),
            follow_redirects=False,  # a redirect would hand the notice to someone else
            transport=self._transport,
        )
        self.watch.seed(broker.pending())
        self._unsubscribe.append(broker.subscribe(self._request_changed))
        if policy is not None and hasattr(policy, "subscribe"):
            self._unsubscribe.append(policy.subscribe(self._policy_changed))
            self._policy_changed(policy.status)
        self._sweep = asyncio.create_task(self._sweep_forever(), name="notify-sweep")
        hosts = ", ".join(sorted({hook.host for hook in self.settings.webhooks}))
        log.info("notices on: %s to %s", ", ".join(sorted(self.settings.events)), hosts)

    async def stop(self) -> None:
        for unsubscribe in self._unsubscribe:
            with contextlib.suppress(ValueError):
                unsubscribe()
        self._unsubscribe.clear()
        await cancel_and_wait([*self._tasks, self._sweep])
        self._sweep = None
        self._loop = None
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    # -- events --------------------------------------------------------------------------------

    def _request_changed(self, request: SpendRequest) -> None:
        for notice in self.watch.request_changed(request):
            self.send(notice)

    def _policy_changed(self, status: Any) -> None:
        for notice in self.watch.policy_changed(status):
            self.send(notice)

    async def _sweep_forever(self) -> None:
        while True:
            try:
                self._send_due()
            except Exception:
                log.exception("the waiting requests' sweep failed")
            await asyncio.sleep(self.sweep_s)

    def _send_due(self) -> None:
        for request_id, waited_s in self.watch.due():
            request = self._broker.ledger.get(request_id)
            notice = self.watch.waiting(request, waited_s) if request is not None else None
            if notice is not None:
                self.send(notice)

    # -- sending -------------------------------------------------------------------------------

    def send(self, notice: Notice) -> None:
        """Send `notice` to every webhook in the background, within the rate bound."""
        if self._loop is None:
            return  # stopped
        try:
            here = asyncio.get_running_loop()
        except RuntimeError:
            here = None
        if here is not self._loop:  # a listener called from another thread
            self._loop.call_soon_threadsafe(self.send, notice)
            return
        client = self._client
        if client is None or not self._admitted():
            return
        for hook in self.settings.webhooks:
            delivery = self._deliver(client, notice, hook)
            task = asyncio.create_task(delivery, name=f"notify-{hook.host}")
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    def _admitted(self) -> bool:
        now = self._monotonic()
        while self._sent_at and now - self._sent_at[0] >= WINDOW_S:
            self._sent_at.popleft()
        if len(self._sent_at) >= self.settings.max_per_minute:
            self.dropped += 1
            if not self._dropping:
                log.warning(
                    "more than %d notices in a minute: dropping the rest until it passes",
                    self.settings.max_per_minute,
                )
            self._dropping += 1
            return False
        if self._dropping:
            log.warning("%d notices were dropped over the limit", self._dropping)
            self._dropping = 0
        self._sent_at.append(now)
        self.admitted += 1
        return True

    async def _deliver(self, client: httpx.AsyncClient, notice: Notice, hook: Webhook) -> None:
        problem = "not sent"
        attempt = 0
        for attempt in range(1, self.attempts + 1):
            delivery = render(notice, hook)  # signed afresh: a receiver may refuse a stale stamp
            try:
                response = await client.post(
                    hook.url, content=delivery.body, headers=delivery.headers
                )
            except (httpx.HTTPError, httpx.InvalidURL) as exc:
                # Only the class: an httpx message may quote the address.
                problem = type(exc).__name__
            else:
                status = response.status_code
                if 200 <= status < 300:
                    self.sent += 1
                    return
                problem = f"HTTP {status}"
                if status < 500 and status != 429:
                    break  # the receiver refused it: the same bytes again would be refused too
            if attempt < self.attempts:
                await asyncio.sleep(self.backoff_s * 2 ** (attempt - 1))
        self.failed += 1
        log.warning(
            "notice %s (%s) to %s not delivered after %d attempt%s: %s",
            notice.event,
            notice.delivery,
            hook.host,
            attempt,
            "" if attempt == 1 else "s",
            problem,
        )
