"""What a Slack message (and its modals) says of a request: the console's facts first, in a fixed
order, then the agent's words quoted, then the buttons (DESIGN.md invariant 9).

Every text object is `plain_text`, so Slack reads no mrkdwn in it; still, whatever did not come
from the console (the agent's words, and what the marketplace says of the provider and the
endpoint) goes through the notices' own cleaning (`notify_messages.fragment`: inert, secrets
hidden, links and bare domains broken), then loses its `@` (no mention) and has Slack's three
control characters escaped (no `<!channel>`, `<@U…>` or `<url|label>`). Inputs never leave the
console: a chat room is no place for what an agent sends a provider.

A waiting request's buttons carry the digest of the facts the message shows
(`core/shown_facts.py`), so a press on a message older than the request's facts is refused.
"""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

from svc_console.core.models import SpendRequest
from svc_console.core.money import format_usdc
from svc_console.core.shown_facts import ceiling, facts_digest
from svc_console.core.states import State
from svc_console.services.notify_messages import _slack_escape, _slack_fragment, fragment

APPROVE = "svc_approve"
DENY = "svc_deny"
AMOUNT_VIEW = "svc_approve_amount"
REASON_VIEW = "svc_deny_reason"
PURPOSE_CHARS = 300
FACT_CHARS = 80

_OUTCOMES = {
    State.approved: "Approved",
    State.auto_approved: "Approved by a policy rule",
    State.executing: "Approved: paying",
    State.awaiting_funds: "Approved: waiting for the wallet to be funded",
    State.succeeded: "Paid",
    State.failed: "Approved, then failed",
    State.unknown: "Approved: outcome unknown",
    State.denied: "Denied",
    State.expired: "Expired",
    State.cancelled: "Cancelled",
    State.rejected: "Rejected",
}


def untrusted(text: object, limit: int = FACT_CHARS) -> str:
    """Text the console did not write, as Slack will show it without acting on any of it."""
    return escaped(_slack_fragment(fragment(str(text), limit=limit)))


def escaped(text: str) -> str:
    """The console's own words, with Slack's control characters escaped all the same."""
    return _slack_escape(text)


def plain(text: str) -> dict[str, Any]:
    return {"type": "plain_text", "text": text, "emoji": False}


def facts(request: SpendRequest, confirm: Decimal | None = None) -> list[str]:
    """The console's facts, one line each, in the order of the console's own detail."""
    endpoint, estimate = request.endpoint, request.estimate
    lines = []
    if estimate is None:
        lines.append("cost: not priced yet")
    else:
        price = format_usdc(estimate.amount_usdc)
        if estimate.dynamic:
            price = f"{format_usdc(estimate.min_usdc)}-{format_usdc(estimate.max_usdc)}"
        most = format_usdc(ceiling(request))
        typed = f" · type {format_usdc(confirm)} to confirm" if confirm is not None else ""
        lines.append(f"cost: {price} USDC · approving allows up to {most} USDC{typed}")
    lines.append(f"recipient: {_recipient(request)}")
    if endpoint is not None:
        verified = "verified" if endpoint.verified else "NOT verified"
        lines.append(f"provider: {untrusted(endpoint.provider_name, 50)} · {verified}")
    if estimate is not None:
        lines.append(f"pays on: {untrusted(estimate.chain, 20)} · {untrusted(estimate.protocol)}")
    verdict = request.verdict
    said = f"{verdict.outcome}: {untrusted(verdict.summary, 160)}" if verdict else "none yet"
    lines.append(f"verdict: {said}")
    lines.append(f"risks: {_risks(request)}")
    who = "verified" if request.agent_verified else "unverified name"
    lines.append(f"agent: {untrusted(request.agent, 64)} ({who})")
    target = request.endpoint_id or request.dataset_id or str(request.kind)
    named = f"{untrusted(endpoint.name, 60)} · " if endpoint is not None else ""
    lines.append(f"buying: {named}{untrusted(target, 60)} · {request.id}")
    return lines


def _recipient(request: SpendRequest) -> str:
    """Where approving sends the money: the quoted recipient when the quote pins one."""
    pay_to = getattr(request.estimate, "pay_to", None)
    if pay_to:
        return untrusted(pay_to, 66)
    if request.kind == "market_call" and request.endpoint is not None:
        return f"the wallet proxy pays {untrusted(request.endpoint.provider_name, 50)} itself"
    return "not quoted yet"


def _risks(request: SpendRequest) -> str:
    if not request.risk:
        return "none found"
    order = {"high": 0, "warn": 1, "info": 2}
    flags = sorted(request.risk, key=lambda flag: order.get(flag.severity, 3))
    return ", ".join(f"{flag.severity.upper()} {untrusted(flag.code, 24)}" for flag in flags)


def message(
    request: SpendRequest, *, confirm: Decimal | None = None, status: str | None = None
) -> dict[str, Any]:
    """The whole message for `request` as it stands: with buttons while it waits for an
    operator; `status` adds a line of the console's (the two-person rule's progress)."""
    waiting = request.state == State.pending
    head = f"Waiting for an operator: {request.id}" if waiting else _outcome_head(request)
    blocks: list[dict[str, Any]] = [
        {"type": "header", "text": plain(escaped(head)[:150])},
        {"type": "section", "block_id": "facts", "text": plain("\n".join(facts(request, confirm)))},
        {"type": "divider"},
        {
            "type": "context",
            "elements": [plain("What the agent wrote (its words, not the console's):")],
        },
        {
            "type": "section",
            "block_id": "agent_words",
            "text": plain(f'purpose: "{untrusted(request.purpose, PURPOSE_CHARS)}"'),
        },
    ]
    lines = [escaped(status)] if status else []
    if not waiting:
        lines.append(outcome(request))
    if lines:
        blocks.append({"type": "context", "elements": [plain("\n".join(lines))]})
    if waiting:
        blocks.append(_buttons(request, confirm))
    return {"text": escaped(head), "blocks": blocks}


def _buttons(request: SpendRequest, confirm: Decimal | None) -> dict[str, Any]:
    value = json.dumps({"request": request.id, "seen": facts_digest(request)})
    approve = "Approve…" if confirm is not None else "Approve"
    return {
        "type": "actions",
        "block_id": "decide",
        "elements": [
            {
                "type": "button",
                "action_id": APPROVE,
                "style": "primary",
                "text": plain(approve),
                "value": value,
            },
            {
                "type": "button",
                "action_id": DENY,
                "style": "danger",
                "text": plain("Deny…"),
                "value": value,
            },
        ],
    }


def _outcome_head(request: SpendRequest) -> str:
    return f"{_OUTCOMES.get(request.state, str(request.state))}: {request.id}"


def outcome(request: SpendRequest) -> str:
    """What became of the request, in one line: who decided, on which channel, and what was
    paid once it was."""
    decision, state = request.decision, request.state
    said = ""
    if decision is not None:
        channel = decision.evidence.channel if decision.evidence else "console"
        verb = "approved" if decision.approved else "denied"
        said = f"{verb} by {untrusted(decision.by, 64)} ({channel})"
        if decision.approved and decision.ceiling_usdc is not None:
            said += f" up to {format_usdc(decision.ceiling_usdc)} USDC"
        if not decision.approved and decision.note:
            said += f': "{untrusted(decision.note, 200)}"'
    if state == State.succeeded and request.outcome is not None:
        paid = request.outcome
        return f"{said}; paid {format_usdc(paid.charged_usdc)} USDC on {untrusted(paid.chain)}"
    if state == State.expired:
        return "expired: no operator decided in time; nothing was paid"
    if state in (State.denied, State.rejected, State.cancelled, State.failed) and not said:
        said = f"{state}: {untrusted(request.reason or 'no reason given', 200)}"
    elif state in (State.failed, State.cancelled) and request.reason:
        said += f"; {state}: {untrusted(request.reason, 200)}"
    if state == State.unknown:
        said += "; the call may have been charged: reconcile it in the console"
    return said or str(state)


def approve_modal(
    request: SpendRequest, amount: Decimal, metadata: dict[str, str]
) -> dict[str, Any]:
    """The modal where the amount is typed, as the console's own confirmation asks."""
    return {
        "type": "modal",
        "callback_id": AMOUNT_VIEW,
        "private_metadata": json.dumps(metadata),
        "title": plain("Approve a request"),
        "submit": plain("Approve"),
        "close": plain("Cancel"),
        "blocks": [
            {"type": "section", "text": plain("\n".join(facts(request, amount)))},
            {
                "type": "input",
                "block_id": "amount",
                "label": plain(f"Type the amount to approve: {format_usdc(amount)} USDC"),
                "element": {"type": "plain_text_input", "action_id": "amount", "max_length": 20},
            },
        ],
    }


def deny_modal(request: SpendRequest, metadata: dict[str, str]) -> dict[str, Any]:
    """The modal that asks why, as every deny does."""
    return {
        "type": "modal",
        "callback_id": REASON_VIEW,
        "private_metadata": json.dumps(metadata),
        "title": plain("Deny a request"),
        "submit": plain("Deny"),
        "close": plain("Cancel"),
        "blocks": [
            {"type": "section", "text": plain("\n".join(facts(request)))},
            {
                "type": "input",
                "block_id": "reason",
                "label": plain("Why (the agent is told)"),
                "element": {
                    "type": "plain_text_input",
                    "action_id": "reason",
                    "multiline": True,
                    "max_length": 500,
                },
            },
        ],
    }
