"""What keeps requests moving with nobody asking: the recovery of what a stopped broker left
mid-way, the expiry of requests nobody decided in time, and, on a ledger several brokers share
(`ledger.shared`), the other brokers' work: their changes told to this broker's listeners (so
its consoles and waiting agents see them), their budget changes applied to its totals, and the
requests of a broker that died adopted and recovered here.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Coroutine
from typing import Any, Protocol

from svc_console.broker.config import BrokerConfig
from svc_console.broker.decisions import Decisions
from svc_console.broker.grants import OperatorGrants
from svc_console.broker.pauses import AgentPauses
from svc_console.core.models import SpendRequest
from svc_console.core.states import IllegalTransition, State
from svc_console.ledger import Ledger, shared


class Broker(Protocol):
    """What of `service.Broker` its upkeep uses."""

    ledger: Ledger
    config: BrokerConfig
    decisions: Decisions
    grants: OperatorGrants
    pauses: AgentPauses
    clock: Callable[[], float]

    def get(self, request_id: str) -> SpendRequest: ...

    def _spawn(self, coroutine: Coroutine[Any, Any, Any], name: str) -> Any: ...

    async def _take_in(self, request: SpendRequest) -> None: ...

    async def _execute(self, request_id: str) -> None: ...

    def _changed(self, request_id: str, known: SpendRequest | None = None) -> None: ...

    def _changed_elsewhere(self, request_id: str) -> None: ...


log = logging.getLogger(__name__)

IN_FLIGHT_LOST = (
    "the broker stopped while this call was in flight; it may have been charged: reconcile with"
    " the usage history, never retry blindly"
)


def recover(broker: Broker) -> list[SpendRequest]:
    """Take up the requests no running broker answers for (`Ledger.orphans`): intake again,
    an approval executed, a re-priced request queued again, and a call that was in flight
    left `unknown`, never sent again. Returns those left unknown, for the operator."""
    unsettled = []
    for request in broker.ledger.orphans():
        now = broker.clock()
        if request.state in (State.received, State.inspecting):
            broker._spawn(broker._take_in(request), f"intake-{request.id}")
        elif request.state in (State.approved, State.auto_approved):
            broker._spawn(broker._execute(request.id), f"execute-{request.id}")
        elif request.state == State.executing:
            execution = broker.ledger.in_flight_execution(request.id)
            if execution is not None:
                broker.ledger.finish_execution(
                    execution, State.unknown, at=now, error=IN_FLIGHT_LOST
                )
            else:
                broker.ledger.transition(request.id, State.unknown, at=now, reason=IN_FLIGHT_LOST)
            unsettled.append(broker.get(request.id))
            broker._changed(request.id)
        elif request.state == State.repriced:
            broker.decisions.queue(request.id, now)
            broker._changed(request.id)
    return unsettled


async def tick_forever(broker: Broker) -> None:
    """Each tick: expire what ran out of time; on a shared ledger, catch up with the other
    brokers and recover the requests of any that died."""
    while True:
        try:
            expire_due(broker)
            if broker.ledger.member is not None:
                broker.ledger.follow_others(broker.clock())
                broker.grants.follow()
                broker.pauses.follow()
                for request in recover(broker):
                    log.warning("request %s was left unknown by a broker that stopped", request.id)
        except Exception:
            log.exception("the broker's upkeep failed")
        await asyncio.sleep(broker.config.expiry_tick_s)


def expire_due(broker: Broker) -> None:
    now = broker.clock()
    for request_id in broker.ledger.expired_ids(now):
        # Another broker sharing the ledger may have expired (or decided) it first.
        with contextlib.suppress(IllegalTransition):
            broker.ledger.transition(
                request_id,
                State.expired,
                at=now,
                reason="no decision before the request's lifetime ran out",
            )
        broker._changed(request_id)


async def hear_others(broker: Broker) -> None:
    """Tell this broker's listeners of every change another broker commits (until cancelled)."""
    member, url = broker.ledger.member, broker.ledger.url
    assert member is not None and url is not None

    def heard(request_ids: list[str]) -> None:
        for request_id in request_ids:
            broker._changed_elsewhere(request_id)

    await shared.listen(url, member.key, heard)
