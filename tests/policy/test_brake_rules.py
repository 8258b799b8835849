"""The brakes' vocabulary and counts, without a broker: what an author gets wrong is an error at
its line; the same inputs in another key order or spacing are the same call; a count leaves its
window late, never early; velocity asks only above the usual, and only once there is one."""

from __future__ import annotations

import json

import pytest

from svc_console.core.buckets import buckets_for, slot_of
from svc_console.policy.brakes import SlidingCount, canonical_digest, ordinal, span
from svc_console.policy.budgets import RollingTotals
from svc_console.policy.engine import CompiledPolicy
from svc_console.policy.errors import PolicyInvalid
from svc_console.policy.facts import Facts
from svc_console.policy.loader import load_text
from svc_console.policy.verdicts import to_verdict

HOUR = 3600
NOW = 1_795_000_000.0


def block(text: str) -> str:
    return f"# SKILLS.md\n\n```policy\n{text}```\n"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "rate_limits:\n  - window: 10m\n    max_requests: 100\n    then: maybe\n",
            'SKILLS.md:7:5: rate_limits[0].then must be what happens then (deny, ask), got "maybe"',
        ),
        (
            "rate_limits:\n  - window: 10m\n    max_requests: 0\n",
            "SKILLS.md:6:5: rate_limits[0].max_requests must be a whole number from 1 to"
            " 1,000,000, got 0",
        ),
        (
            "rate_limits:\n  - per: tool\n    window: 10m\n    max_requests: 5\n",
            "SKILLS.md:5:5: rate_limits[0].per must be one of agent, provider, endpoint or overall,"
            ' got "tool"',
        ),
        (
            "repeats:\n  max_same: 3\n  window: 5s\n",
            'SKILLS.md:6:3: repeats.window must be between 10s and 7d, got "5s"',
        ),
        ("repeats:\n  window: 10m\n", 'SKILLS.md:5:3: repeats needs "max_same"'),
        (
            "circuit_breaker:\n  failures: 5\n  window: 15m\n  then: deny\n",
            'SKILLS.md:7:3: circuit_breaker.then must be one of pause_agent, got "deny"',
        ),
        (
            "velocity:\n  factor: 1\n",
            "SKILLS.md:5:3: velocity.factor must be a number above 1 and at most 1000, got 1",
        ),
        ("velocity:\n  factor: 5\n  window: 2d\n", "velocity has a window above 1d"),
        (
            "repeats:\n  max_same: 3\n  window: 10m\n  then: ask\n  per: agent\n",
            'unknown key "per"',
        ),
    ],
)
def test_a_wrong_brake_is_an_error_at_its_line_and_nothing_loads(text, message):
    with pytest.raises(PolicyInvalid) as raised:
        load_text(block(text), "SKILLS.md")
    assert message in str(raised.value), str(raised.value)


def test_the_same_inputs_are_the_same_call_whatever_the_key_order_or_spacing():
    one = json.loads('{"query": "solar", "filters": {"lang": "en", "max": 5}}')
    other = json.loads('{ "filters" : {"max":5,"lang":"en"},\n "query":"solar" }')
    assert canonical_digest(one) == canonical_digest(other)
    assert canonical_digest(one) != canonical_digest({**one, "query": "Solar"})
    assert canonical_digest({"n": 1}) != canonical_digest({"n": "1"})


def test_inputs_past_what_orjson_writes_are_keyed_by_json_and_stay_apart():
    """An integer past 64 bits is written by the json fallback: the same value is the same
    call in any key order, and a neighbouring value, or the same digits as text, is another."""
    huge = 2**70
    one = json.loads(f'{{"n": {huge}, "query": "solar"}}')
    other = json.loads(f'{{"query": "solar", "n": {huge}}}')
    assert canonical_digest(one) == canonical_digest(other)
    assert canonical_digest(one) != canonical_digest({**one, "n": huge + 1})
    assert canonical_digest({"n": huge}) != canonical_digest({"n": str(huge)})
    assert canonical_digest({"n": huge}) != canonical_digest({"n": float(huge)})


def test_a_count_leaves_its_window_late_never_early():
    counts = SlidingCount(600)  # cells of 10 s
    counts.add("a", NOW + 3)
    counts.add("a", NOW + 9)
    counts.add("b", NOW + 9)
    assert counts.total("a", NOW + 600) == 2  # 597 s after the first: inside
    assert counts.total("a", NOW + 609) == 2  # past the window by a few seconds: still counted
    assert counts.total("a", NOW + 610.5) == 0  # within one cell of the window: gone
    assert counts.total("b", NOW + 610.5) == 0 and counts.counts == {}
    counts.add("a", NOW + 700)
    counts.add("a", NOW + 650)  # the clock stepped back: counted with the newest cell
    assert counts.total("a", NOW + 700) == 2 and counts.total("a", NOW + 1305) == 0


def test_a_count_remembers_only_its_last_requests_and_forgets_them_with_the_key():
    counts = SlidingCount(60, remember=3)
    for n in range(5):
        counts.add("k", NOW + n, f"req_{n}")
    assert [r for _at, r in counts.recent["k"]] == ["req_2", "req_3", "req_4"]
    assert counts.total("k", NOW + 200) == 0 and "k" not in counts.recent


def test_words_for_counts_and_spans():
    assert [ordinal(n) for n in (1, 2, 3, 4, 11, 12, 13, 21, 101, 112)] == [
        "1st", "2nd", "3rd", "4th", "11th", "12th", "13th", "21st", "101st", "112th"
    ]  # fmt: skip
    assert [span(s) for s in (1, 45, 60, 360, 3600, 7200, 86_400)] == [
        "1 second", "45 seconds", "1 minute", "6 minutes", "1 hour", "2 hours", "1 day"
    ]  # fmt: skip


def velocity_policy(extra: str = "") -> CompiledPolicy:
    text = (
        "velocity:\n  per: agent\n  factor: 5\n  window: 1h\n"
        "auto_approve:\n  - name: all\n    when:\n      max_usdc: 100\n" + extra
    )
    return CompiledPolicy(load_text(block(text), "SKILLS.md"))


def spent(totals: RollingTotals, agent: str, at: float, usdc: float) -> None:
    totals.apply([(buckets_for(agent, "prov_x", "A7"), slot_of(at), int(usdc * 1e6))], at)


def test_velocity_asks_above_five_times_the_usual_hour_and_not_below():
    policy = velocity_policy()
    totals = RollingTotals()
    for hours_ago in (30, 20, 10, 5):  # a usual hour: 1 USDC (the median of 1, 1, 1, 3)
        spent(totals, "bot", NOW - hours_ago * HOUR, 3 if hours_ago == 5 else 1)
    spent(totals, "bot", NOW - 600, 4)  # within the last hour
    facts = Facts(agent="bot", kind="market_call", amount=500_000, provider="prov_x")
    calm = policy.evaluate(facts, totals, NOW, brakes=True)
    assert calm.outcome == "auto_approve"  # 4.5 USDC in the hour: not above 5 times 1
    facts.amount = 1_500_000
    fast = policy.evaluate(facts, totals, NOW, brakes=True)
    assert fast.outcome == "ask"
    verdict = to_verdict(fast)
    assert verdict.summary == (
        "the operator decides: velocity (SKILLS.md:4): agent bot would spend 5.50 USDC in"
        " 1 hour, more than 5 times the usual 1.00 USDC"
    )
    # Without the brakes (an operator's approval of a queued request) velocity does not ask.
    assert policy.evaluate(facts, totals, NOW).outcome == "auto_approve"


def test_velocity_has_no_usual_before_three_hours_of_spend():
    policy = velocity_policy()
    totals = RollingTotals()
    spent(totals, "new-bot", NOW - 20 * HOUR, 0.01)
    spent(totals, "new-bot", NOW - 10 * HOUR, 0.01)
    facts = Facts(agent="new-bot", kind="market_call", amount=50_000_000, provider="prov_x")
    assert policy.evaluate(facts, totals, NOW, brakes=True).outcome == "auto_approve"


def test_a_paused_agent_waits_for_the_operator_but_deny_rules_still_deny():
    policy = velocity_policy("deny:\n  agents: [bad-*]\n")
    totals = RollingTotals()
    facts = Facts(agent="bot", kind="market_call", amount=10_000)
    paused = policy.evaluate(facts, totals, NOW, brakes=True, paused="5 failures in a row")
    assert paused.outcome == "ask" and paused.citations[-1].rule == "circuit_breaker"
    facts.agent = "bad-bot"
    assert policy.evaluate(facts, totals, NOW, brakes=True, paused="x").outcome == "deny"
