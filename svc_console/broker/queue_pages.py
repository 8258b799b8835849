"""`approvals.read`: the approval queue's pages, counts and positions over the operator socket, for
a console that cannot open the ledger itself. Run as a user of its own (`service install`), the
broker keeps its ledger where only that user reads; the operator's attached console then asks here
the same windows the approvals screen reads from the ledger where it can, answered by the same
SQL. Requests are given as `approvals.list` gives them (without skill.md or the submitter's
evidence), so what the operator socket lets be read is unchanged.
"""

from __future__ import annotations

from typing import Any

from pydantic import TypeAdapter

from svc_console.broker.params import CountRead, GetRead, PositionRead, QueryParams, QueueRead
from svc_console.broker.service import Broker
from svc_console.broker.shown_requests import listed
from svc_console.ledger.request_windows import RequestQuery, states

_READ: TypeAdapter[Any] = TypeAdapter(QueueRead)


def query_of(params: QueryParams) -> RequestQuery:
    return RequestQuery(
        states=states(params.states),
        order=params.order,
        descending=params.descending,
        text=params.text,
        verdict=params.verdict,
        risk=params.risk,
    )


def read(broker: Broker, params: dict[str, Any]) -> Any:
    """One read, validated (an unknown read, order or state is refused as invalid params)."""
    asked = _READ.validate_python(params)
    ledger = broker.ledger
    if isinstance(asked, GetRead):
        request = ledger.get(asked.request_id)
        return None if request is None else listed(request)
    query = query_of(asked.query)
    if isinstance(asked, CountRead):
        return ledger.count(query)
    if isinstance(asked, PositionRead):
        return ledger.position(query, asked.request_id)
    page = ledger.window(query, offset=asked.offset, limit=asked.limit)
    return [listed(request) for request in page]
