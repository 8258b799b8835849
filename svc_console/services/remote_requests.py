"""The reads the approvals screen makes of the ledger, asked of the broker over its operator socket
(`approvals.read`) by a console that cannot open the ledger: the broker running as a user of its
own, whose ledger only that user reads.

The screen reads as it draws, synchronously, so these calls are too: one blocking connection of
their own, a round trip each (the broker answers from an index, as the ledger would here). The
console's loop waits for it; the broker runs in another process, never on that loop.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from svc_console.agent import Agent, AgentError
from svc_console.core.models import SpendRequest
from svc_console.core.states import State
from svc_console.ledger.pauses import Pause
from svc_console.ledger.request_windows import RequestQuery, states
from svc_console.services.broker_probe import CLIENT

log = logging.getLogger(__name__)


def _query(query: RequestQuery) -> dict[str, Any]:
    return {
        "states": [str(state) for state in query.states],
        "order": query.order,
        "descending": query.descending,
        "text": query.text,
        "verdict": query.verdict,
        "risk": query.risk,
    }


def _request(listed: dict[str, Any]) -> SpendRequest:
    return SpendRequest.model_validate(listed)  # its digest, an extra field, is left out


class RemoteRequests:
    """`RequestView`'s reads of the queue (and the paused agents), over the operator socket."""

    def __init__(self, operator_socket: Path):
        self.path = operator_socket
        self._agent: Agent | None = None

    def _ask(self, method: str, params: dict[str, Any], unanswered: Any) -> Any:
        """The broker's answer, or `unanswered` when it gave none: the broker is gone (the
        console is told so by its follower, and ends) or refused the read (logged)."""
        try:
            if self._agent is None:
                agent = Agent(None, self.path, token="", client=CLIENT)
                agent.connect()
                self._agent = agent
            return self._agent.call(method, params)
        except (AgentError, OSError) as exc:
            log.warning("the broker did not answer %s: %s", method, exc)
            self.close()
            return unanswered

    def _read(self, read: str, unanswered: Any, **params: Any) -> Any:
        return self._ask("approvals.read", {"read": read, **params}, unanswered)

    def get(self, request_id: str) -> SpendRequest | None:
        listed = self._read("get", None, request_id=request_id)
        return None if listed is None else _request(listed)

    def window(
        self, query: RequestQuery, *, offset: int = 0, limit: int = 50
    ) -> list[SpendRequest]:
        page = self._read("window", [], query=_query(query), offset=offset, limit=limit)
        return [_request(listed) for listed in page]

    def count(self, query: RequestQuery) -> int:
        return int(self._read("count", 0, query=_query(query)))

    def count_in_states(self, in_states: Iterable[State]) -> int:
        return self.count(RequestQuery(states=states(in_states)))

    def position(self, query: RequestQuery, request_id: str) -> int | None:
        at = self._read("position", None, query=_query(query), request_id=request_id)
        return None if at is None else int(at)

    def paused(self) -> list[Pause]:
        return [Pause(**said) for said in self._ask("agents.paused", {}, [])]

    def close(self) -> None:
        if self._agent is not None:
            self._agent.close()
            self._agent = None
