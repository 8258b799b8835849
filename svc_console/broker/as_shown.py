"""A decision is made on what its operator was shown: one that carries the digest of the facts it
showed (`core/shown_facts.py`) is refused once the request's facts give another digest, before
anything is decided or recorded. Every operator decision passes here, from the TUI in process,
the operator socket (the CLI, an attached or web console) and several at once alike."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from svc_console.broker import errors
from svc_console.core.models import SpendRequest
from svc_console.core.shown_facts import changed_since_shown, facts_digest
from svc_console.core.states import State


def refuse_if_changed(request: SpendRequest, seen: str | None) -> None:
    """Refuse a decision on `request` made on facts whose digest was `seen` (None: decided by
    id alone) once they changed."""
    if seen is not None and seen != facts_digest(request):
        raise errors.FactsChanged(changed_since_shown(request), request_ids=[request.id])


def refuse_if_any_changed(requests: Iterable[SpendRequest], seen: Mapping[str, str] | None) -> None:
    """Several decided together: one changed since it was shown and none is decided, since the
    operator confirmed them (and their total) as they were. One no longer pending is left to
    the decision itself, which leaves it out and says so."""
    if not seen:
        return
    changed = [
        request
        for request in requests
        if request.state == State.pending
        and request.id in seen
        and seen[request.id] != facts_digest(request)
    ]
    if len(changed) == 1:
        raise errors.FactsChanged(changed_since_shown(changed[0]), request_ids=[changed[0].id])
    if changed:
        ids = [request.id for request in changed]
        raise errors.FactsChanged(
            f"{len(ids)} requests changed since they were shown ({', '.join(ids[:5])}"
            f"{', …' if len(ids) > 5 else ''}); nothing was decided",
            request_ids=ids,
        )
