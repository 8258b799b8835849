"""The broker as a console attached to it sees it: the part of `Broker` the approvals screen uses,
served by a broker that runs in another process (`svc-console serve`, or another console).

Reads come from the ledger (its file, or its PostgreSQL database) through a read-only connection of
this process (the pages, the counts, one request): the same SQL the embedded screen runs, with no
round trip. Where this process may not read the ledger (the broker runs as a user of its own,
`service install`), the same reads are asked of the broker over its socket (`remote_requests`).
Changes come from the operator socket's `approvals.follow` notifications, never from polling.
Decisions go over the operator socket as the CLI's do, so they carry that socket's evidence (who,
which process) and its passphrase rule; this object never writes the ledger. A connection cut off
(for falling behind) is made again and the screen reads the queue afresh; when the broker itself is
gone, the listeners of `when_lost` are told, and every decision after that fails with a clear error.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Callable, Iterable, Mapping
from decimal import Decimal
from pathlib import Path
from typing import Any

from svc_console.agent import AgentError, AsyncAgent
from svc_console.broker import errors
from svc_console.broker.params import ApproveParams, DenyParams
from svc_console.core.models import SpendRequest
from svc_console.core.shown_facts import approval_ceiling
from svc_console.core.states import State
from svc_console.ledger import pauses
from svc_console.ledger.readers import open_reader
from svc_console.ledger.request_reads import RequestView
from svc_console.policy.budget_view import BudgetLine
from svc_console.services.broker_probe import CLIENT
from svc_console.services.remote_requests import RemoteRequests

log = logging.getLogger(__name__)

Listener = Callable[[SpendRequest], None]


class Service:
    """What the broker says of the service it speaks to (its hello): what the banner shows."""

    def __init__(self, described: dict[str, Any]):
        self.base_url = str(described.get("base_url") or "")
        self.wallet_api_base = str(described.get("wallet_api_base") or "")
        self.sandbox = bool(described.get("sandbox"))


def as_broker_error(exc: AgentError) -> errors.BrokerError:
    """The broker's refusal, as the screen catches it when the broker is in process (a request
    changed since it was shown, told apart: the screen shows it again)."""
    kind = errors.FactsChanged if exc.reason == errors.FactsChanged.reason else errors.BrokerError
    error = kind(exc.message, **exc.data)
    error.code, error.reason = exc.code, exc.reason
    return error


class AttachedPauses:
    """The agents the circuit breaker paused, read from the ledger; resumed over the socket."""

    def __init__(self, broker: AttachedBroker):
        self._broker = broker

    def paused(self) -> list[pauses.Pause]:
        ledger = self._broker.ledger
        if isinstance(ledger, RemoteRequests):
            return ledger.paused()
        return pauses.paused(ledger)  # type: ignore[arg-type]  # a read-only view

    async def resume(self, agent: str, _decider: object = None) -> pauses.Pause:
        said = await self._broker.call("agents.resume", {"agent": agent})
        return pauses.Pause(**said)


class AttachedBroker:
    """A broker running elsewhere, over its operator socket and its ledger file."""

    attached = True
    policy = None  # the policy lives with the broker; its banner is that console's

    def __init__(
        self,
        operator_socket: Path,
        ledger_path: Path,
        *,
        clock: Callable[[], float] = time.time,
        ledger_url: str | None = None,
    ):
        self.operator_socket, self.ledger_path, self.clock = operator_socket, ledger_path, clock
        self.ledger_url = ledger_url  # the PostgreSQL ledger's, where the broker writes one
        self.market: Service | None = None
        self.ledger: RequestView | RemoteRequests | None = None
        # `decisions.total_confirmation_needed` and `.two_person_status`, as Broker has them.
        self.decisions = self
        self.pauses = AttachedPauses(self)
        self.passphrase: str | None = None  # typed once at start, when the broker asks for one
        self.passphrase_required = False
        # With operator accounts: (name, token), given once at start (`tui/attached/sign_in`).
        self.operator: tuple[str, str] | None = None
        self.operators_required = False
        # Where agents of the owner's user are accepted and no credential is set: why nothing
        # can be decided here, and how to set one (the broker's words).
        self.no_credential: str | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._client: AsyncAgent | None = None
        self._threshold: Decimal | None = None
        self._listeners: list[Listener] = []
        self._lost: list[Callable[[], None]] = []
        self._facts: list[Callable[[], None]] = []
        # By request: its budget lines and two-person line, as the broker last gave them.
        self._facts_of: dict[str, tuple[list[BudgetLine], str | None]] = {}
        self._asking: dict[str, asyncio.Task[None]] = {}
        self._rejoining: asyncio.Task[None] | None = None
        self.gone = False

    # -- lifecycle ----------------------------------------------------------------------------

    async def attach(self) -> None:
        """Connect, follow the queue, open the ledger read-only. Following starts before the
        first read, so no change in between is missed."""
        await self._follow()
        self.ledger = self._reads()

    def _reads(self) -> RequestView | RemoteRequests:
        """The ledger, read here where this process may; else asked of the broker."""
        if self.ledger_url is None and not os.access(self.ledger_path, os.R_OK):
            return RemoteRequests(self.operator_socket)
        return RequestView(open_reader(self.ledger_path, self.ledger_url))

    @property
    def reads_ledger(self) -> bool:
        """Whether this console reads the ledger itself (the usage screen needs it to)."""
        return not isinstance(self.ledger, RemoteRequests)

    async def _follow(self) -> None:
        client = AsyncAgent(None, self.operator_socket, token="", client=CLIENT)
        client.on_notice = self._notice
        client.on_lost = self._connection_lost
        hello = await client.connect()
        self._client = client
        self.market = Service(hello.get("service") or {})
        following = await client.call("approvals.follow", {})
        self._loop = asyncio.get_running_loop()
        self._threshold = _decimal(following.get("confirm_above_usdc"))
        self.passphrase_required = bool(following.get("passphrase_required"))
        self.operators_required = bool(following.get("operators_required"))
        self.no_credential = following.get("no_credential")

    async def detach(self) -> None:
        """Stop following; the broker and its sockets go on."""
        for task in [*self._asking.values(), self._rejoining]:
            if task is not None:
                task.cancel()
        if self._client is not None:
            await self._client.close()
            self._client = None
        if isinstance(self.ledger, RemoteRequests):
            self.ledger.close()
        elif self.ledger is not None:
            self.ledger.db.close()
        self.ledger = None

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener)

    def when_lost(self, callback: Callable[[], None]) -> None:
        """`callback` once the broker's socket is gone."""
        self._lost.append(callback)

    def when_facts(self, callback: Callable[[], None]) -> Callable[[], None]:
        """`callback` when facts asked of the broker (a request's budgets) have arrived, or the
        queue is followed again after the connection was lost: the screen reads afresh."""
        self._facts.append(callback)
        return lambda: self._facts.remove(callback)

    def _notice(self, message: dict[str, Any]) -> None:
        if message.get("method") != "approvals.changed":
            return
        said = message.get("params") or {}
        self._threshold = _decimal(said.get("confirm_above_usdc"))
        self._facts_of.clear()  # any change may have spent a budget or added an approval
        request = self.ledger.get(str(said.get("request_id"))) if self.ledger else None
        if request is None:
            return
        for listener in list(self._listeners):
            try:
                listener(request)
            except Exception:
                log.exception("a listener failed")

    def _connection_lost(self) -> None:
        # Cut off for falling behind (the broker goes on), or the broker stopped: follow again
        # if it still answers, and have the screen read the queue afresh; else it is gone.
        self._client = None
        self._rejoining = asyncio.get_running_loop().create_task(self._rejoin())

    async def _rejoin(self) -> None:
        try:
            await self._follow()
        except (AgentError, OSError) as exc:
            log.info("the broker is gone: %s", exc)
            self.gone = True
            for callback in list(self._lost):
                callback()
            return
        log.info("following the broker's queue again")
        self._facts_of.clear()
        for callback in list(self._facts):
            callback()

    # -- reads --------------------------------------------------------------------------------

    def get(self, request_id: str) -> SpendRequest:
        request = self.ledger.get(request_id) if self.ledger is not None else None
        if request is None:
            raise errors.UnknownRequest(f"no request {request_id}")
        return request

    def confirmation_needed(self, request: SpendRequest) -> Decimal | None:
        """As the broker's Decisions: its threshold, as the last notification said it (the broker
        checks again, and refuses an approval typed against a stale one)."""
        if request.estimate is None or self._threshold is None:
            return None
        ceiling = approval_ceiling(request, request.estimate)
        return ceiling if ceiling > self._threshold else None

    def total_confirmation_needed(self, total: Decimal) -> bool:
        return self._threshold is not None and total > self._threshold

    def budgets_for(self, request: SpendRequest) -> list[BudgetLine]:
        """The budget lines last read from the broker for this request; none yet the first
        time, when they are asked for and `when_facts` listeners told once they arrive."""
        return self._facts_for(request)[0]

    def two_person_status(self, request: SpendRequest) -> str | None:
        """The two-person rule's line, as the broker gave it with the budgets."""
        return self._facts_for(request)[1]

    def _facts_for(self, request: SpendRequest) -> tuple[list[BudgetLine], str | None]:
        cached = self._facts_of.get(request.id)
        if cached is not None:
            return cached
        if request.id not in self._asking and not self.gone:
            task = asyncio.get_running_loop().create_task(self._ask_facts(request.id))
            self._asking[request.id] = task
            task.add_done_callback(lambda _: self._asking.pop(request.id, None))
        return [], None

    async def _ask_facts(self, request_id: str) -> None:
        try:
            said = await self.call("approvals.facts", {"request_id": request_id})
        except errors.BrokerError:
            return  # decided or gone meanwhile: nothing to show
        budgets = [BudgetLine(**line) for line in said.get("budgets", [])]
        self._facts_of[request_id] = (budgets, said.get("two_person"))
        for callback in list(self._facts):
            callback()

    def pending_total(self, request_ids: Iterable[str]) -> tuple[list[SpendRequest], Decimal]:
        requests = [self.get(request_id) for request_id in dict.fromkeys(request_ids)]
        for request in requests:
            if request.state != State.pending:
                raise errors.WrongState(f"request {request.id} is {request.state}, not pending")
        total = sum(
            (approval_ceiling(r, r.estimate) for r in requests if r.estimate is not None),
            Decimal(0),
        )
        return requests, total

    # -- decisions, over the operator socket ----------------------------------------------------

    async def call(self, method: str, params: dict[str, Any]) -> Any:
        if self.gone:
            raise errors.BrokerError("the console running the broker is gone; nothing was decided")
        if self._client is None:
            raise errors.BrokerError(
                "reconnecting to the console running the broker; nothing was decided, try again"
            )
        if self.operator is not None:
            params = {**params, "operator": self.operator[0], "token": self.operator[1]}
        elif self.passphrase is not None:
            params = {**params, "passphrase": self.passphrase}
        try:
            return await self._client.call(method, params)
        except AgentError as exc:
            raise as_broker_error(exc) from None

    def check_from_thread(self, credentials: dict[str, str]) -> tuple[str | None, str | None]:
        """Ask the broker whether `credentials` would let this console act, from a worker
        thread (a slow hash, and a wait after wrong ones, are the broker's): the operator they
        prove (None for a passphrase) and None, or None and the broker's refusal."""
        if self._client is None or self._loop is None:
            return None, "not attached to the broker; nothing was checked"
        asked = self._client.call("operators.check", credentials)
        try:
            said = asyncio.run_coroutine_threadsafe(asked, self._loop).result()
        except AgentError as exc:
            return None, exc.message
        except Exception as exc:  # the connection lost meanwhile: nothing was let in
            return None, f"the broker could not check it ({exc}); try again"
        return said.get("operator"), None

    async def approve(self, params: ApproveParams, _decider: object = None) -> SpendRequest:
        said = params.model_dump(mode="json", exclude_none=True, exclude={"passphrase"})
        await self.call("approvals.approve", said)
        return self.get(params.request_id)

    async def deny(self, params: DenyParams, _decider: object = None) -> SpendRequest:
        said = params.model_dump(mode="json", exclude_none=True, exclude={"passphrase"})
        await self.call("approvals.deny", said)
        return self.get(params.request_id)

    async def approve_many(
        self,
        request_ids: Iterable[str],
        *,
        confirm_total: Decimal | None = None,
        note: str | None = None,
        decider: object = None,
        seen: Mapping[str, str] | None = None,
    ) -> dict[str, str]:
        params: dict[str, Any] = {"request_ids": list(request_ids)}
        if seen:
            params["seen"] = dict(seen)
        if confirm_total is not None:
            params["confirm_total"] = str(confirm_total)
        if note is not None:
            params["note"] = note
        return await self.call("approvals.approve_many", params)

    async def deny_many(
        self,
        request_ids: Iterable[str],
        reason: str,
        decider: object = None,
        seen: Mapping[str, str] | None = None,
    ) -> dict[str, str]:
        params: dict[str, Any] = {"request_ids": list(request_ids), "reason": reason}
        if seen:
            params["seen"] = dict(seen)
        return await self.call("approvals.deny_many", params)


def _decimal(text: Any) -> Decimal | None:
    return None if text is None else Decimal(str(text))
