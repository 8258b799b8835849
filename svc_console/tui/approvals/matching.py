"""After a grant (`A`, `D`) or a rule (`w`): the requests already waiting that it would have
decided had they come after it. A grant or a rule decides only what arrives next, so without a
word these stay pending; the screen offers to decide them too, each through the same dialog and
decision as marked requests (its own decision, bound to the facts the dialog showed).
"""

from __future__ import annotations

from svc_console.broker import Broker
from svc_console.core.models import SpendRequest
from svc_console.core.states import State
from svc_console.core.wording import plural
from svc_console.tui.approvals.bulk import MOST, ceiling
from svc_console.tui.request_lists import PENDING, Filter, ListState


def waiting_like(
    broker: Broker, pending: ListState, decided: SpendRequest, *, approve: bool
) -> list[SpendRequest]:
    """The other waiting requests of the same agent to the same endpoint; for an approval,
    only those that ask no more than the one decided (the grant's per-call bound)."""
    assert pending.kind is PENDING
    window = broker.ledger.window(pending.query(Filter()), offset=0, limit=MOST)
    bound = ceiling(decided) if decided.estimate is not None else None
    return [
        request
        for request in window
        if request.id != decided.id
        and request.state == State.pending
        and request.agent == decided.agent
        and (request.endpoint_id, request.dataset_id) == (decided.endpoint_id, decided.dataset_id)
        and (
            not approve
            or (bound is not None and request.estimate is not None and ceiling(request) <= bound)
        )
    ]


def question(count: int, *, approve: bool) -> str:
    """ "3 more waiting requests match: approve them too?" """
    verb = "approve" if approve else "deny"
    match = "matches" if count == 1 else "match"
    them = "it" if count == 1 else "them"
    return f"{plural(count, 'more waiting request')} {match}: {verb} {them} too?"
