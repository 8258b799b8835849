"""The sandbox and the console speak one policy vocabulary: the sandbox's default SKILLS.md, as
`GET /api/agent/policies` reports it, is read by the console's own rules without an error, and a
console whose SKILLS.md holds those rules (its template, or the sandbox's text) sees no drift.

The sandbox may not import `svc_console.policy` (an import-linter contract); this test may, and
is what keeps the two in step."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import pytest

from svc_console.policy.drafts import TEMPLATE
from svc_console.policy.drift import compare
from svc_console.policy.loader import load_text
from svc_console.policy.rules import Rules
from svc_console.sandbox import skills


def test_the_default_policy_loads_under_the_consoles_rules():
    answer = skills.active_policy(skills.DEFAULT_SKILLS_MD)
    assert answer["valid"] is True and answer["errors"] == []
    # Over the wire, as the console reads it: an unquoted amount is the decimal it spells.
    wire = json.loads(json.dumps(answer), parse_float=Decimal)
    rules = Rules.model_validate(wire["policy"])
    assert rules.per_call_max_usdc == Decimal("0.25") and rules.budgets[0].per == "agent"
    for block in wire["blocks"]:
        Rules.model_validate(block["rules"])
    # And as a local file: the console's loader accepts the very same text.
    load_text(skills.DEFAULT_SKILLS_MD)


@pytest.mark.parametrize(
    ("local", "same_text"),
    [(skills.DEFAULT_SKILLS_MD, True), (TEMPLATE, False)],
    ids=["the sandbox text", "the template"],
)
def test_a_console_with_the_sandbox_rules_sees_no_drift(local: str, same_text: bool):
    """The sandbox's own text, and the template a fresh console saves first: in sync."""
    drift = compare(load_text(local), skills.active_policy(skills.DEFAULT_SKILLS_MD))
    assert drift.in_sync, drift.summary()
    assert drift.same_text is same_text
    assert not drift.differences and not drift.service_problems


def test_a_policy_in_the_old_words_would_be_drift():
    """What the sandbox used to say (`scope`, a compute_tools mapping): the console refuses it,
    so a default in those words could never be in sync."""
    old: dict[str, Any] = {
        "budgets": [{"scope": "overall", "period": "day", "limit_usdc": "25.00"}],
        "compute_tools": {"merge_models": "ask"},
    }
    answer = {"sha256": "0" * 64, "valid": True, "policy": old}
    drift = compare(load_text(TEMPLATE), answer)
    assert not drift.in_sync
    assert any("budgets[0].scope" in problem for problem in drift.service_problems)
