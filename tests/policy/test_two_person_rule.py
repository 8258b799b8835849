"""`two_person` in SKILLS.md: validated at its line like every rule, summarised by `policy check`
and said by `policy explain` for a request above its amount, where it stands in the way of every
auto-approve rule."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest
from test_policy_rules import block, errors_of, line_of

from svc_console.cli import main
from svc_console.policy.loader import load_text


@pytest.mark.parametrize(
    ("yaml", "message"),
    [
        ("two_person:\n  above_usd: 1  # here\n", 'unknown key "above_usd"'),
        ("two_person:\n  above_usdc: 1\n  operators: 3  # here\n", 'unknown key "operators"'),
        ("two_person:\n  above_usdc: lots  # here\n", "must be a number of USDC"),
        ("two_person:\n  above_usdc: -1  # here\n", "non-negative number of USDC"),
        ("two_person: {}  # here\n", 'two_person needs "above_usdc"'),
        ("two_person: 1.00  # here\n", "two_person must be a mapping"),
    ],
)
def test_a_bad_two_person_rule_is_an_error_at_its_line(yaml, message):
    text = block(yaml)
    errors = errors_of(text)
    matching = [error for error in errors if message in error]
    assert matching, errors
    assert int(matching[0].split(":")[1]) == line_of(text)


def test_a_good_one_loads_with_its_amount():
    rules = load_text(block("two_person:\n  above_usdc: 1.00\n"), "SKILLS.md").rules
    assert rules.two_person is not None and rules.two_person.above_usdc == Decimal("1.00")


def test_check_and_explain_say_two_operators_approve(home, capsys):
    policy = home / "SKILLS.md"
    policy.write_text(
        block(
            "two_person:\n  above_usdc: 0.005\nauto_approve:\n  - name: searches\n"
            "    when:\n      endpoints: [ep_websearch_basic]\n"
        )
    )
    assert main(["policy", "check", str(policy)]) == 0
    assert "two operators approve above 0.005 USDC" in capsys.readouterr().out
    request = json.dumps(
        {"agent": "research-bot", "endpoint_id": "ep_websearch_basic", "inputs": {"query": "x"}}
    )
    assert main(["policy", "explain", str(policy), "--request", request, "--no-ledger"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("verdict: ask\n")
    assert "above 0.005 USDC two different operators approve; no rule or grant does" in out
    assert "approving takes two different operators" in out
