"""A spend request as an MCP client hears of it: the words of its progress while it waits, and
the tool result it ends as.

Only the console's own facts are put in words here; what the provider or the operator wrote is
quoted as data (the provider's answer is the content, as it came; a denial's reason is quoted).
"""

from __future__ import annotations

import json
from typing import Any

import mcp_types as types

MOST_QUOTED = 500  # characters of an operator's or a service's words in an error


def progress_words(request: dict[str, Any]) -> str:
    state = request.get("state")
    if state in ("received", "inspecting"):
        return "checking the request (dry run, price, policy)"
    if state == "pending":
        return f"waiting for the operator: {_price(request)} to {_payee(request)}"
    if state in ("approved", "auto_approved"):
        return "approved: about to pay"
    if state == "executing":
        return "executing: paying and calling"
    if state == "awaiting_funds":
        return "waiting for the operator to fund the wallet"
    return str(state)


def result_of(request: dict[str, Any]) -> types.CallToolResult:
    """The tool result of a request that stopped waiting (final, or awaiting funds)."""
    state = request.get("state")
    if state == "succeeded" and isinstance(request.get("outcome"), dict):
        return _success(request, request["outcome"])
    reason = _quoted(request.get("reason"))
    messages = {
        "denied": f"denied by the operator: {reason}",
        "expired": "the operator did not decide in time; ask again if it is still worth it",
        "rejected": f"refused before reaching the operator: {reason}",
        "failed": f"the call failed and nothing was charged: {reason}",
        "cancelled": f"cancelled: {reason}",
        "unknown": "the call's outcome is unknown (the console stopped mid-call); it may have"
        " been charged: do not retry before the operator has reconciled it",
        "awaiting_funds": "the operator's wallet has too little USDC; the request waits for the"
        " operator to fund it, then runs once (follow it by its request id)",
    }
    message = messages.get(str(state), f"ended {state}: {reason}")
    structured = {
        "request_id": request.get("id"),
        "state": state,
        "reason": request.get("reason"),
    }
    return types.CallToolResult(
        content=[types.TextContent(text=message)], structured_content=structured, is_error=True
    )


def _success(request: dict[str, Any], outcome: dict[str, Any]) -> types.CallToolResult:
    body = outcome.get("body", "")
    if outcome.get("body_encoding") == "base64":
        text = f"(binary answer, {outcome.get('content_type')}, base64) {body}"
    else:
        text = str(body)
    structured = {
        "request_id": request.get("id"),
        "state": "succeeded",
        "charged_usdc": outcome.get("charged_usdc"),
        "chain": outcome.get("chain"),
        "receipt": outcome.get("receipt"),
        "content_type": outcome.get("content_type"),
    }
    return types.CallToolResult(
        content=[types.TextContent(text=text)], structured_content=structured
    )


def _price(request: dict[str, Any]) -> str:
    estimate = request.get("estimate")
    if isinstance(estimate, dict) and estimate.get("amount_usdc") is not None:
        return f"{estimate['amount_usdc']} USDC"
    return "a price still being checked"


def _payee(request: dict[str, Any]) -> str:
    endpoint = request.get("endpoint")
    if isinstance(endpoint, dict):
        return str(endpoint.get("provider_name") or endpoint.get("provider") or "the provider")
    if request.get("dataset_id"):
        return f"the publisher of {request['dataset_id']}"
    return "the marketplace"


def _quoted(text: Any) -> str:
    if text is None:
        return "no reason given"
    flat = " ".join(str(text).split())[:MOST_QUOTED]
    return json.dumps(flat, ensure_ascii=False)
