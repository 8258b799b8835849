"""What the audit chain's events say of a request's money, beside the rows sealed with them: the
request as submitted and each decision with its ceiling and decider (`store.Ledger` writes them).
"""

from __future__ import annotations

from typing import Any

from svc_console.core.models import Decision, SpendRequest
from svc_console.ledger import audit_chain


def received(request: SpendRequest, row: dict[str, Any]) -> dict[str, Any]:
    """What the audit chain keeps of a request as submitted (the row itself is sealed too)."""
    received: dict[str, Any] = {
        "agent": request.agent,
        "agent_verified": request.agent_verified,
        "kind": str(request.kind),
        "endpoint_id": request.endpoint_id,
        "dataset_id": request.dataset_id,
        "max_usdc": str(request.max_usdc) if request.max_usdc is not None else None,
        "inputs_sha256": audit_chain.sha256_text(row.get("inputs") or "null"),
    }
    if request.submitter is not None:
        received["submitter"] = request.submitter.model_dump(mode="json")
    return received


def decision(decision: Decision) -> dict[str, Any]:
    """What the audit chain keeps of a decision: who made it, as observed, and up to what."""
    return {
        "approved": decision.approved,
        "by": decision.by,
        "ceiling_usdc": str(decision.ceiling_usdc) if decision.ceiling_usdc is not None else None,
        "evidence": decision.evidence.model_dump(mode="json") if decision.evidence else None,
    }
