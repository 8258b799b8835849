"""The console's facts of a request as the operator is shown them, and their digest: what binds a
decision to what was seen.

A dialog, a key press or a script that decides carries the digest of the facts it showed; the
broker refuses the decision once the request's facts no longer give that digest (repriced,
re-quoted, its verdict or state changed, or another request altogether). Only the console's own
facts count, never the clock: ages and time left change every second and say nothing new about
what approving lets be paid.
"""

from __future__ import annotations

import hashlib
import re
from decimal import Decimal
from typing import Any

from svc_console.core.canonical_json import canonical_json
from svc_console.core.models import Estimate, SpendRequest
from svc_console.core.money import format_usdc
from svc_console.core.sanitize import inert_line

# What a digest looks like: a sha256, hex.
DIGEST = re.compile(r"^[0-9a-f]{64}$")


def shown_facts(request: SpendRequest) -> dict[str, Any]:
    """The facts the detail, the dialogs and `approvals list` show of a request. The estimate is
    taken whole, so a fact added to it (the quoted recipient, asset, network) is bound too."""
    endpoint, estimate, verdict = request.endpoint, request.estimate, request.verdict
    most = ceiling(request)
    return {
        "request": request.id,
        "agent": request.agent,
        "agent_verified": request.agent_verified,
        "kind": str(request.kind),
        "endpoint_id": request.endpoint_id,
        "dataset_id": request.dataset_id,
        "endpoint": None if endpoint is None else endpoint.model_dump(mode="json"),
        "estimate": None if estimate is None else estimate.model_dump(mode="json"),
        "ceiling_usdc": None if most is None else format_usdc(most),
        "verdict": verdict and {"outcome": verdict.outcome, "summary": verdict.summary},
        "risk": [flag.model_dump(mode="json") for flag in request.risk],
        "state": str(request.state),
        "note": request.reason,
    }


def approval_ceiling(request: SpendRequest, estimate: Estimate) -> Decimal:
    """The most approving `request` at `estimate` lets the console pay: the estimate's upper
    bound, never above the agent's own max_usdc. The one figure the broker approves, the
    dialogs show and the screens total."""
    if request.max_usdc is None:
        return estimate.ceiling
    return min(estimate.ceiling, request.max_usdc)


def ceiling(request: SpendRequest) -> Decimal | None:
    """`approval_ceiling` at the request's own estimate (None before the dry run)."""
    estimate = request.estimate
    return None if estimate is None else approval_ceiling(request, estimate)


def facts_digest(request: SpendRequest) -> str:
    """The sha256 of the shown facts in one canonical JSON form."""
    return hashlib.sha256(canonical_json(shown_facts(request)).encode()).hexdigest()


def changed_since_shown(request: SpendRequest) -> str:
    """The refusal of a decision bound to other facts: the request as it stands now."""
    return f"{request.id} changed since it was shown: {facts_now(request)}; nothing was decided"


def facts_now(request: SpendRequest) -> str:
    """A request's deciding facts in a few words: its state, what approving lets be paid, on
    which chain, the verdict and how many risk flags."""
    words = [f"it is now {request.state}"]
    estimate, most = request.estimate, ceiling(request)
    if estimate is not None and most is not None:
        chain = inert_line(estimate.chain, 20)
        words.append(f"up to {format_usdc(most)} USDC on {chain} ({estimate.protocol})")
    if request.verdict is not None:
        words.append(f"verdict {request.verdict.outcome}")
    flags = len(request.risk)
    words.append(f"{flags} risk flag{'' if flags == 1 else 's'}")
    return ", ".join(words)
