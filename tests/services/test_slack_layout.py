"""The Slack message of a request: the console's facts first and in a fixed order, the agent's
words after and labelled, and nothing that anyone but the console wrote able to act in Slack (no
mrkdwn, mention, link, control sequence or secret), whatever the agent or the provider sent."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import pytest

from svc_console.core.models import (
    Decision,
    EndpointRecord,
    Estimate,
    Evidence,
    Outcome,
    Pricing,
    Receipt,
    RiskFlag,
    SpendRequest,
    Verdict,
)
from svc_console.core.shown_facts import facts_digest
from svc_console.core.states import State
from svc_console.services import slack_layout
from svc_console.services.notify_messages import fragment

HOSTILE = (
    "<!channel> <@U0BOSS|boss> <https://evil.example/approve|click> @here *bold* _it_ ~s~"
    " `code` > quote :rotating_light: \x1b]8;;https://evil.example\x07link\x1b]8;;\x07"
    " sk_live_abcdefgh12345678 me@example.com &amp; www.evil.example"
)


def request(state: State = State.pending, **fields: Any) -> SpendRequest:
    endpoint = EndpointRecord(
        id="ep_hostile", name=f"Search {HOSTILE}", provider="prov_hostile",
        providerName=f"Hostile {HOSTILE}", origin="registry", domain_type="A7",
        product_class="B1", chains=["base"], protocols=["x402"],
        pricing=Pricing(model="fixed", amountUsdc="0.01"), verified=False, qualityScore=0.4,
        reliability=0.9,
    )  # fmt: skip
    given = dict(
        id="req_0001", agent="research-bot", kind="market_call", endpoint_id="ep_hostile",
        inputs={"query": "INPUT-MARKER"}, purpose=f"buy it {HOSTILE}", state=state,
        created_at=1.0, updated_at=1.0, endpoint=endpoint,
        estimate=Estimate(amount_usdc=Decimal("0.01"), chain="base", protocol="x402"),
        risk=[RiskFlag(code="first_use", severity="info", reason=HOSTILE),
              RiskFlag(code="unverified", severity="warn", reason="not verified")],
        verdict=Verdict(outcome="ask", summary=f"no rule decides {HOSTILE}"),
    )  # fmt: skip
    return SpendRequest(**{**given, **fields})


def texts(value: Any) -> list[dict[str, Any]]:
    """Every text object in a message or modal."""
    if isinstance(value, dict):
        found = [value] if value.get("type") in ("plain_text", "mrkdwn") else []
        return found + [t for item in value.values() for t in texts(item)]
    if isinstance(value, list):
        return [t for item in value for t in texts(item)]
    return []


@pytest.mark.parametrize("state", [State.pending, State.denied, State.succeeded])
def test_nothing_anyone_else_wrote_can_act_in_slack(state):
    decided = Decision(
        approved=state != State.denied, by="alice", at=2.0, ceiling_usdc=Decimal("0.01"),
        note=HOSTILE, evidence=Evidence(channel="slack", operator="alice", slack_user="U0ALICE"),
    )  # fmt: skip
    paid = Outcome(
        status=200, content_type="text/plain", body=HOSTILE, charged_usdc=Decimal("0.01"),
        chain="base", receipt=Receipt(protocol="x402", network="base", transaction="0x1",
                                      idempotency_key="k"),
    )  # fmt: skip
    extra = {} if state == State.pending else {"decision": decided}
    if state == State.succeeded:
        extra["outcome"] = paid
    body = slack_layout.message(request(state, **extra), status="two <!here> people")
    shown = texts(body["blocks"])
    assert shown and all(t["type"] == "plain_text" and t["emoji"] is False for t in shown)
    everything = "\n".join([body["text"], *(t["text"] for t in shown)])
    for active in ("<!", "<@", "<https", "@here", "https://", "\x1b", "\x07", "sk_live_"):
        assert active not in everything
    assert "me@example.com" not in everything and "INPUT-MARKER" not in everything
    assert "&lt;!channel&gt;" in everything and "\uff20here" in everything  # a full-width @
    assert "https[:]//evil" in everything
    assert "&amp;amp;" in everything  # the agent's own entity shown as typed, not decoded


def test_a_bare_domain_the_agent_wrote_is_no_link():
    if fragment("see www.evil.example") == "see www.evil.example":
        pytest.skip("bare domains are defanged by notify_messages.fragment, not in this tree yet")
    everything = json.dumps(slack_layout.message(request()))
    assert "www.evil.example" not in everything and "evil.example/" not in everything


def test_the_facts_come_first_the_agent_words_after_then_the_buttons():
    body = slack_layout.message(request(), confirm=Decimal("0.01"))
    kinds = [block["type"] for block in body["blocks"]]
    assert kinds == ["header", "section", "divider", "context", "section", "actions"]
    facts = body["blocks"][1]["text"]["text"].split("\n")
    assert [line.split(":")[0] for line in facts] == [
        "cost", "recipient", "provider", "pays on", "verdict", "risks", "agent", "buying",
    ]  # fmt: skip
    assert facts[0] == ("cost: 0.01 USDC · approving allows up to 0.01 USDC · type 0.01 to confirm")
    assert facts[2].endswith("· NOT verified")
    assert facts[5] == "risks: WARN unverified, INFO first_use"
    assert body["blocks"][3]["elements"][0]["text"] == (
        "What the agent wrote (its words, not the console's):"
    )
    assert body["blocks"][4]["text"]["text"].startswith('purpose: "buy it ')
    approve, deny = body["blocks"][5]["elements"]
    assert approve["text"]["text"] == "Approve…" and deny["text"]["text"] == "Deny…"
    assert json.loads(approve["value"]) == {"request": "req_0001", "seen": facts_digest(request())}


def test_the_quoted_recipient_is_shown_when_the_quote_pins_one():
    plain = slack_layout.facts(request())
    assert plain[1].startswith("recipient: the wallet proxy pays Hostile")
    dataset = request(kind="dataset", endpoint_id=None, dataset_id="ds_1")
    assert slack_layout.facts(dataset)[1] == "recipient: not quoted yet"


def test_a_long_purpose_is_cut_with_a_marker():
    body = slack_layout.message(request(purpose="x" * 5000))
    words = body["blocks"][4]["text"]["text"]
    assert len(words) < 400 and words.endswith('…"')


def test_what_became_of_a_request_in_one_line():
    expired = request(State.expired)
    assert slack_layout.outcome(expired) == "expired: no operator decided in time; nothing was paid"
    assert slack_layout.message(expired)["text"] == "Expired: req_0001"
    by_rule = request(State.denied, reason="hours: outside the allowed hours")
    assert slack_layout.outcome(by_rule) == "denied: hours: outside the allowed hours"
