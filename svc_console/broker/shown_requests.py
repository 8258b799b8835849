"""What the sockets show of a request: to agents (`public`), and in the operator's lists with the
digest a decision binds to (`listed`)."""

from __future__ import annotations

from typing import Any

from svc_console.core.models import SpendRequest
from svc_console.core.shown_facts import facts_digest


def public(request: SpendRequest) -> dict[str, Any]:
    # skill.md is for the operator's screen; agents fetch it themselves if they want it. Which
    # process submitted is the console's evidence, not the agent's business.
    return request.model_dump(mode="json", exclude={"skill", "submitter"})


def listed(request: SpendRequest) -> dict[str, Any]:
    """A request as `approvals.list` and `approvals.read` give it: with the digest of its facts,
    for a decision bound to them (`seen`)."""
    return {**public(request), "digest": facts_digest(request)}
