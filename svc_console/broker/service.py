"""The broker's API, used alike by the socket (agents, the CLI) and the TUI (in process).

It owns the request lifecycle: submit → intake → pending → decision (decisions) → execution, plus
expiry and recovery after a restart. Listeners (the TUI) are told of every change; agents waiting on
a request are woken when it reaches a final state.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import time
from collections.abc import Callable, Coroutine, Iterable, Mapping
from decimal import Decimal
from typing import Any

from svc_console.broker import errors, upkeep
from svc_console.broker.as_shown import refuse_if_any_changed, refuse_if_changed
from svc_console.broker.config import BrokerConfig
from svc_console.broker.deciders import Decider
from svc_console.broker.decisions import Decisions
from svc_console.broker.endpoint_cache import EndpointCache
from svc_console.broker.executor import MAX_ATTEMPTS, Executor
from svc_console.broker.grants import OperatorGrants, check_total, parse_lasting
from svc_console.broker.intake import Intake
from svc_console.broker.params import ApproveParams, DenyParams, SubmitParams
from svc_console.broker.pauses import AgentPauses
from svc_console.core import states
from svc_console.core.models import SpendRequest, Submitter
from svc_console.core.money import format_usdc
from svc_console.core.same_inputs import comparable
from svc_console.core.shown_facts import approval_ceiling
from svc_console.core.states import CANCELLABLE, FINAL, IllegalTransition, State
from svc_console.core.tasks import cancel_and_wait
from svc_console.ledger import Ledger, group_commit
from svc_console.ledger.budgets import open_reserved
from svc_console.market.gateway import Marketplace
from svc_console.policy import ManualReview, PolicyEngine

log = logging.getLogger(__name__)

Listener = Callable[[SpendRequest], None]


# What a request is: the same idempotency key must come with the same of each (as Stripe does).
_IDENTIFYING = ("kind", "endpoint_id", "dataset_id", "inputs", "purpose", "max_usdc")


def _same_request(existing: SpendRequest, params: SubmitParams) -> None:
    """Refuse a reused idempotency key whose parameters differ, naming the fields that do. The
    inputs compare as the service will see them (`core/same_inputs.py`), against the schema of
    the endpoint the first request was inspected with (none yet: no defaults, no case)."""
    schema = existing.endpoint.inputs if existing.endpoint is not None else None
    differing = [
        f
        for f in _IDENTIFYING
        if (
            comparable(existing.inputs, schema) != comparable(params.inputs, schema)
            if f == "inputs"
            else getattr(existing, f) != getattr(params, f)
        )
    ]
    if differing:
        raise errors.IdempotencyConflict(
            f"idempotency key {params.idempotency_key} was used for request {existing.id} with"
            f" other {', '.join(differing)}",
            request_id=existing.id,
            fields=differing,
        )


def _lasting(text: str | None) -> str | None:
    if text is None:
        return None
    try:
        return parse_lasting(text)
    except ValueError as exc:
        raise errors.InvalidParams(str(exc)) from None


def new_request_id() -> str:
    return f"req_{secrets.token_hex(6)}"


class Broker:
    def __init__(
        self,
        ledger: Ledger,
        market: Marketplace,
        *,
        config: BrokerConfig | None = None,
        policy: PolicyEngine | None = None,
        clock: Callable[[], float] = time.time,
        new_id: Callable[[], str] = new_request_id,
    ):
        self.ledger = ledger
        self.market = market
        self.config = config or BrokerConfig()
        self.clock = clock
        self._new_id = new_id
        self.policy: PolicyEngine = policy or ManualReview()
        self._endpoints = endpoints = EndpointCache(market.rest)
        self.decisions = Decisions(
            ledger,
            self.policy,
            pending_ttl_s=self.config.pending_ttl_s,
            confirm_above_usdc=self.config.confirm_above_usdc,
            clock=clock,
        )
        self._intake = Intake(ledger, market, self.policy, self.decisions, endpoints)
        self._executor = Executor(ledger, market, clock, started=self._changed)
        self.pauses = AgentPauses(ledger, self.policy, clock)
        self.grants = OperatorGrants(ledger, getattr(self.policy, "grants", None), clock)
        self._listeners: list[Listener] = []
        self._waiters: dict[str, set[asyncio.Future[None]]] = {}
        self._watchers: dict[str, set[asyncio.Future[None]]] = {}  # woken by any change
        self._tasks: set[asyncio.Task[Any]] = set()
        # The funding retries under way, by request: one at a time, awaited by `retried`.
        self._retries: dict[str, asyncio.Task[Any]] = {}
        self._expiry: asyncio.Task[None] | None = None

    # -- lifecycle ----------------------------------------------------------------------------

    async def start(self) -> list[SpendRequest]:
        """Recover what a previous process left mid-way, start the expiry clock. Returns the
        requests recovery could not settle (left `unknown`) for the operator to reconcile."""
        unsettled = upkeep.recover(self)
        self.grants.start()
        self._expiry = asyncio.create_task(upkeep.tick_forever(self), name="broker-upkeep")
        if self.ledger.member is not None:  # a ledger shared with other brokers
            self._spawn(upkeep.hear_others(self), "broker-hear-others")
        return unsettled

    async def stop(self) -> None:
        self.grants.stop()
        await cancel_and_wait([*self._tasks, self._expiry])
        await self._endpoints.stop()  # a fetch whose waiters gave up is no task of ours
        for waiters in [*self._waiters.values(), *self._watchers.values()]:
            for waiter in waiters:
                waiter.cancel()

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener)

    # -- agents -------------------------------------------------------------------------------

    async def submit(
        self,
        params: SubmitParams,
        *,
        verified: bool = False,
        submitter: Submitter | None = None,
    ) -> SpendRequest:
        """Take a request in for `params.agent`, whose name the caller has `verified` (or not),
        submitted by the process `submitter`."""
        if params.agent is None:
            raise errors.InvalidParams("a request needs its agent")
        if params.idempotency_key:
            existing = self.ledger.find_by_idempotency(params.agent, params.idempotency_key)
            if existing is not None:
                if existing.agent_verified != verified:
                    # The same name, once unverified and now registered (or the reverse): the
                    # other one's request is not this caller's to see.
                    raise errors.InvalidParams(
                        "this idempotency key was used by another agent of that name"
                    )
                _same_request(existing, params)
                return existing
        now = self.clock()
        request = SpendRequest(
            id=self._new_id(),
            state=State.received,
            created_at=now,
            updated_at=now,
            agent_verified=verified,
            submitter=submitter,
            **params.model_dump(),
        )
        # Inserted with the other submissions of this turn, in one transaction; the agent is
        # answered once it is committed.
        with group_commit.joined():
            self.ledger.insert_request(request)
        await self.ledger.committed()
        self._changed(request.id, request)  # as written: no need to read it back
        self._spawn(self._take_in(request), f"intake-{request.id}")
        return request

    async def wait(
        self,
        request_id: str,
        timeout_s: float,
        *,
        any_change: bool = False,
        seen: State | None = None,
    ) -> SpendRequest:
        """Until the request is final, or changes at all with `any_change` (or the timeout
        passes): its state then. With `any_change`, a request no longer in the `seen` state has
        already changed: it is answered at once."""
        request = self.get(request_id)
        if request.state in FINAL or timeout_s <= 0:
            return request
        if any_change and seen is not None and request.state != seen:
            return request
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        (self._watchers if any_change else self._waiters).setdefault(request_id, set()).add(waiter)
        try:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(timeout_s):  # not wait_for: see usage_follow.py
                    await waiter
        finally:
            for table in (self._waiters, self._watchers):
                waiters = table.get(request_id)
                if waiters is not None:
                    waiters.discard(waiter)
                    if not waiters:
                        del table[request_id]
        return self.get(request_id)

    def get(self, request_id: str) -> SpendRequest:
        request = self.ledger.get(request_id)
        if request is None:
            raise errors.UnknownRequest(f"no request {request_id}")
        return request

    async def cancel(self, request_id: str, reason: str = "cancelled by the agent") -> SpendRequest:
        request = self.get(request_id)
        if request.state not in CANCELLABLE:
            raise errors.WrongState(
                f"request {request_id} is {request.state} and can no longer be cancelled"
            )
        self.ledger.transition(request_id, State.cancelled, at=self.clock(), reason=reason)
        self._changed(request_id)
        return self.get(request_id)

    async def cancel_agents(self, names: Iterable[str]) -> int:
        """Cancel what the registered agents `names` (revoked) left undecided; how many."""
        cancelled = 0
        for name in names:
            for request_id in self.ledger.cancellable_of(name, CANCELLABLE):
                with contextlib.suppress(errors.WrongState, IllegalTransition):
                    await self.cancel(request_id, f"agent {name} was revoked")
                    cancelled += 1
        return cancelled

    # -- operators ----------------------------------------------------------------------------

    def pending(self, limit: int = 500) -> list[SpendRequest]:
        return self.ledger.in_states(states.LIVE_FOR_OPERATOR, limit=limit)

    def history(self, limit: int = 200) -> list[SpendRequest]:
        return self.ledger.in_states(states.HISTORY, limit=limit, newest_first=True)

    def budgets_for(self, request: SpendRequest) -> list[Any]:
        """The budgets a request draws on, now and after approving it (policy/budget_view.py);
        none without a live policy."""
        lines = getattr(self.policy, "budget_lines", None)
        if lines is None:
            return []
        return lines(request, open_reserved(self.ledger.db), self.clock())

    def confirmation_needed(self, request: SpendRequest) -> Decimal | None:
        """The amount the operator must type to approve, or None when a keypress is enough."""
        return self.decisions.confirmation_needed(request)

    async def approve(self, params: ApproveParams, decider: Decider | None = None) -> SpendRequest:
        """The operator's approval; `decider` is who gives it (default: this process, the TUI)."""
        request = self._pending(params.request_id)
        refuse_if_changed(request, params.seen)
        decider = decider or Decider.this_process(self.decisions.console_operator)
        lasting = _lasting(params.grant_for)
        if lasting is not None:
            assert request.estimate is not None
            check_total(params.grant_total, approval_ceiling(request, request.estimate))
        decision = self.decisions.approve(request, params, decider)
        if decision is None:  # a first approval under the two-person rule: still pending
            self._changed(request.id)
            return self.get(request.id)
        if lasting is not None:
            self.grants.make(
                request, decision, lasting=lasting, total=params.grant_total, decider=decider
            )
        self._changed(request.id)
        self._spawn(self._execute(request.id), f"execute-{request.id}")
        return self.get(request.id)

    async def deny(self, params: DenyParams, decider: Decider | None = None) -> SpendRequest:
        request = self._pending(params.request_id)
        refuse_if_changed(request, params.seen)
        decider = decider or Decider.this_process(self.decisions.console_operator)
        lasting = _lasting(params.grant_for)
        decision = self.decisions.deny(request, params, decider)
        if lasting is not None:
            self.grants.make(request, decision, lasting=lasting, total=None, decider=decider)
        self._changed(request.id)
        return self.get(request.id)

    def pending_total(self, request_ids: Iterable[str]) -> tuple[list[SpendRequest], Decimal]:
        """The pending requests named (each once) and the most approving all would let the
        console pay; raises if one is not pending."""
        requests = [self._pending(request_id) for request_id in dict.fromkeys(request_ids)]
        return requests, _most(requests)

    def _asked_total(self, request_ids: Iterable[str]) -> tuple[list[SpendRequest], Decimal]:
        """The requests named (each once), whatever their state now, and the most approving
        them all would have let the console pay; raises for an unknown id."""
        requests = [self.get(request_id) for request_id in dict.fromkeys(request_ids)]
        return requests, _most(requests)

    async def approve_many(
        self,
        request_ids: Iterable[str],
        *,
        confirm_total: Decimal | None = None,
        note: str | None = None,
        decider: Decider | None = None,
        seen: Mapping[str, str] | None = None,
    ) -> dict[str, str]:
        """Approve several pending requests, each with its own decision and audit event, after
        one confirmation of their total (when it passes the threshold). Returns, by request, its
        state after, or why it was not approved (it expired or was cancelled meanwhile, a budget
        was spent). The total confirmed is that of every request asked for, as the operator saw
        them: one that left the queue since is left out, never the reason to approve none.
        `seen`: the digest of the facts each was shown with; one changed refuses them all."""
        requests, total = self._asked_total(request_ids)
        refuse_if_any_changed(requests, seen)
        if self.decisions.total_confirmation_needed(total) and confirm_total != total:
            said = (
                "type the total"
                if confirm_total is None
                else (f"{format_usdc(confirm_total)} USDC is not the total; type it")
            )
            raise errors.ConfirmationRequired(
                f"{said}: {format_usdc(total)} USDC for {len(requests)} requests",
                amount=format_usdc(total),
            )
        outcome: dict[str, str] = {}
        for request in requests:
            params = ApproveParams(
                request_id=request.id,
                confirm_amount=self.decisions.confirmation_needed(request),
                note=note,
                seen=(seen or {}).get(request.id),
            )
            try:
                outcome[request.id] = str((await self.approve(params, decider)).state)
            except errors.BrokerError as exc:
                outcome[request.id] = f"not approved: {exc}"
        return outcome

    async def deny_many(
        self,
        request_ids: Iterable[str],
        reason: str,
        decider: Decider | None = None,
        seen: Mapping[str, str] | None = None,
    ) -> dict[str, str]:
        """Deny several pending requests, each with its own decision; one that left the queue
        meanwhile is said, and the others are denied; one changed since it was shown (`seen`)
        refuses them all."""
        requests, _total = self._asked_total(request_ids)
        refuse_if_any_changed(requests, seen)
        outcome: dict[str, str] = {}
        for request in requests:
            params = DenyParams(
                request_id=request.id, reason=reason, seen=(seen or {}).get(request.id)
            )
            try:
                denied = await self.deny(params, decider)
                outcome[request.id] = str(denied.state)
            except errors.BrokerError as exc:
                outcome[request.id] = f"not denied: {exc}"
        return outcome

    async def retry_funded(self, request_id: str) -> SpendRequest:
        """The single retry after the wallet was funded, within the same approval."""
        request = self.get(request_id)
        if request.state != State.awaiting_funds:
            raise errors.WrongState(f"request {request_id} is {request.state}, not awaiting funds")
        latest = self.ledger.latest_decision(request_id)
        if latest is None or self.ledger.attempts(request_id, latest[0]) >= MAX_ATTEMPTS:
            raise errors.WrongState(f"request {request_id} has had its one retry")
        if request_id in self._retries:  # asked twice (the TUI and the CLI) before it started
            raise errors.WrongState(f"request {request_id} is being retried")
        task = self._spawn(self._execute(request_id), f"retry-{request_id}")
        self._retries[request_id] = task
        task.add_done_callback(lambda _: self._retries.pop(request_id, None))
        return request

    async def retried(self, request_id: str, timeout_s: float) -> SpendRequest:
        """The request once its funding retry has ended (or at the timeout): its state then.
        Waiting here never stops the retry."""
        task = self._retries.get(request_id)
        if task is not None:
            await asyncio.wait({task}, timeout=timeout_s)
        return self.get(request_id)

    def refuse(self, request_id: str | None, reason: str, decider: Decider) -> None:
        """Record a decision refused before it reached the request (a wrong passphrase); with
        no request, a decision about an agent (a resume)."""
        if request_id is None or self.ledger.get(request_id) is not None:
            self.decisions.refuse(request_id, reason, decider)

    def _pending(self, request_id: str) -> SpendRequest:
        request = self.get(request_id)
        if request.state != State.pending:
            raise errors.WrongState(f"request {request_id} is {request.state}, not pending")
        return request

    # -- internals ----------------------------------------------------------------------------

    def _spawn(self, coroutine: Coroutine[Any, Any, Any], name: str) -> asyncio.Task[Any]:
        task = asyncio.create_task(coroutine, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def _take_in(self, request: SpendRequest) -> None:
        # Intake's writes (inspecting, then the decision) share transactions with those of the
        # other requests decided in the same turn of the loop (ledger/group_commit.py).
        state = None
        with group_commit.joined():
            try:
                state = await self._intake.run(request, self.clock())
            except Exception as exc:  # a request intake could not finish must not hang
                # Losing a race to the agent's cancel is expected: the request has moved on.
                if not isinstance(exc, IllegalTransition):
                    log.exception("intake of %s failed", request.id)
                    self._fail_intake(request.id, exc)
        try:
            # Listeners see it, and an approval is executed, only once its decision is committed.
            await self.ledger.committed()
        except Exception:
            log.exception("intake of %s was not committed; recovery takes it again", request.id)
            return
        self._changed(request.id)
        if state == State.auto_approved:
            await self._execute(request.id)

    def _fail_intake(self, request_id: str, exc: Exception) -> None:
        try:
            self.ledger.transition(
                request_id,
                State.rejected,
                at=self.clock(),
                reason=f"internal error while inspecting ({type(exc).__name__}); see the log",
            )
        except Exception:  # the ledger failing too: said, and recovery inspects it again
            log.exception("the failed intake of %s could not be recorded as rejected", request_id)

    async def _execute(self, request_id: str) -> None:
        try:
            # Executions of one turn share transactions too; the executor pays only once its
            # own is committed (ledger/group_commit.py).
            with group_commit.joined():
                executed = await self._executor.run(request_id)
                if executed.repriced is not None:  # nothing was paid: the operator decides again
                    self.decisions.queue(request_id, self.clock(), **executed.asked())
            await self.ledger.committed()
        except Exception:
            log.exception("execution of %s failed", request_id)
        self._changed(request_id)

    def _changed_elsewhere(self, request_id: str) -> None:
        """Another broker sharing the ledger changed a request: read and told here only where
        someone listens, or waits for that one."""
        if self._listeners or request_id in self._waiters or request_id in self._watchers:
            self._changed(request_id)

    def _changed(self, request_id: str, known: SpendRequest | None = None) -> None:
        request = known or self.ledger.get(request_id)
        if request is None:
            return
        woken = [*self._watchers.get(request_id, ())]
        if request.state in FINAL:
            woken += self._waiters.get(request_id, ())
        for waiter in woken:
            if not waiter.done():
                waiter.set_result(None)
        for listener in list(self._listeners):
            try:
                listener(request)
            except Exception:
                log.exception("a listener failed")


def _most(requests: Iterable[SpendRequest]) -> Decimal:
    """The most approving every one of `requests` would let the console pay."""
    return sum(
        (approval_ceiling(r, r.estimate) for r in requests if r.estimate is not None), Decimal(0)
    )
