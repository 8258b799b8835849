"""The engine's index of auto-approve rules (by domain type, agent, provider and endpoint) and
its lazily written verdicts change no decision and no word: the indexed evaluation agrees with
the plain one over random rules and requests, and a verdict read late says what one written at
once says."""

from __future__ import annotations

import json
from decimal import Decimal

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from svc_console.core.models import Verdict
from svc_console.policy.budgets import RollingTotals
from svc_console.policy.engine import CompiledPolicy
from svc_console.policy.loader import load_text
from svc_console.policy.verdicts import _words, to_verdict
from tests.policy.test_policy_engine import NOW, facts, spend

AGENTS = ["research-bot", "Research-Bot", "intern-1", "ops-7", "x"]
PROVIDERS = ["prov_searchly", "Searchly", "prov_exa", "prov_blocked", None]
ENDPOINTS = ["ep_websearch_basic", "ep_news", "EP_NEWS", "ep_x", None]
DOMAINS = ["A7", "A8", "A11", None]
GLOBS = ["research-*", "RESEARCH-BOT", "intern-?", "prov_*", "*ly", "ep_news", "ep_web*", "x"]


@st.composite
def auto_rules(draw) -> str:
    """A policy of auto-approve rules limited by names (globs and exact, any case), domain
    types and amounts, some with budgets of their own, with a deny list now and then."""
    text = "auto_approve:\n"
    for n in range(draw(st.integers(1, 8))):
        when = {}
        for key, pool in (
            ("agents", GLOBS),
            ("providers", GLOBS),
            ("endpoints", GLOBS),
            ("domain_types", ["A7", "A8", "A11"]),
        ):
            if draw(st.booleans()):
                when[key] = draw(st.lists(st.sampled_from(pool), min_size=1, max_size=3))
        if draw(st.booleans()) or not when:
            when["max_usdc"] = draw(st.integers(1, 40)) / 100
        text += f"  - name: rule {n}\n    when:\n"
        text += "".join(f"      {key}: {json.dumps(value)}\n" for key, value in when.items())
        if draw(st.booleans()):
            most = draw(st.integers(1, 60)) / 100
            text += f"    budgets:\n      - {{per: agent, window: day, max_usdc: {most}}}\n"
    if draw(st.booleans()):
        text += f"deny:\n  agents: {json.dumps([draw(st.sampled_from(GLOBS))])}\n"
    return text


REQUESTS = st.lists(
    st.tuples(
        st.sampled_from(AGENTS),
        st.sampled_from(PROVIDERS),
        st.sampled_from(ENDPOINTS),
        st.sampled_from(DOMAINS),
        st.integers(1, 30),
        st.integers(0, 40_000),
    ),
    min_size=1,
    max_size=15,
)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(auto_rules(), REQUESTS)
def test_the_indexed_evaluation_decides_and_cites_as_the_plain_one(yaml, stream):
    loaded = load_text(f"```policy\n{yaml}```\n")
    indexed, plain = CompiledPolicy(loaded), CompiledPolicy(loaded, generated=False)
    totals = RollingTotals()
    now = NOW
    for agent, provider, endpoint, domain, cents, gap in stream:
        now += gap
        request = facts(
            agent=agent,
            provider=provider,
            provider_name=provider,
            endpoint=endpoint,
            domain_type=domain,
            usdc=cents / 100,
        )
        one = indexed.evaluate(request, totals, now)
        other = plain.evaluate(request, totals, now)
        assert (one.outcome, one.rule) == (other.outcome, other.rule)
        assert to_verdict(one).model_dump() == to_verdict(other).model_dump()
        if one.outcome == "auto_approve":  # what the ledger reserves for the rule's budgets
            spend(totals, request, str(Decimal(cents) / 100), now, one.rule)


def test_an_approval_found_through_the_index_names_its_rule():
    policy = CompiledPolicy(
        load_text(
            "```policy\nauto_approve:\n"
            "  - {name: other team, when: {agents: [intern-?], max_usdc: 1}}\n"
            "  - {name: research, when: {agents: [RESEARCH-*], domain_types: [A7]}}\n```\n"
        )
    )
    approved = policy.evaluate(facts(agent="research-bot"), RollingTotals(), NOW)
    assert (approved.outcome, approved.rule) == ("auto_approve", "research")
    elsewhere = policy.evaluate(facts(agent="research-bot", domain_type="A8"), RollingTotals(), NOW)
    assert elsewhere.outcome == "ask"
    # The same names seen again are answered from the index, with the same result.
    again = policy.evaluate(facts(agent="research-bot"), RollingTotals(), NOW)
    assert (again.outcome, again.rule) == ("auto_approve", "research")


def test_a_verdict_read_late_says_what_one_written_at_once_says():
    policy = CompiledPolicy(
        load_text(
            "```policy\nper_call_max_usdc: 0.05\n"
            "budgets:\n  - {per: agent, window: day, warn_usdc: 0.01, max_usdc: 1}\n```\n"
        )
    )
    evaluation = policy.evaluate(facts(usdc="0.06"), RollingTotals(), NOW)
    late = to_verdict(evaluation, policy.sha256)
    at_once = Verdict(outcome="deny", policy_sha256=policy.sha256, **_words(evaluation, None))
    assert late.outcome == "deny"
    assert late.model_dump(mode="json") == at_once.model_dump(mode="json")
    assert late.summary.startswith("denied by per_call_max_usdc (")
    assert [c.rule for c in late.citations] == ["per_call_max_usdc", "budgets[0]"]
    assert late.budgets[0].after_usdc == Decimal("0.06")
    assert late == at_once and repr(late) == repr(at_once)


def test_a_late_verdict_is_whole_when_serialised_inside_its_request():
    evaluation = CompiledPolicy(load_text("```policy\nper_call_max_usdc: 0.05\n```\n")).evaluate(
        facts(usdc="0.06"), RollingTotals(), NOW
    )
    verdict = to_verdict(evaluation, "sha")
    dumped = verdict.model_dump_json()
    assert '"summary":"denied by per_call_max_usdc' in dumped
    assert Verdict.model_validate_json(dumped) == verdict
    # A copy with a new summary keeps it: the words never overwrite what was set.
    copy = to_verdict(evaluation, "sha").model_copy(update={"summary": "changed"})
    assert copy.summary == "changed" and copy.rules == ["per_call_max_usdc (SKILLS.md:2)"]
