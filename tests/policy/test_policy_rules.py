"""SKILLS.md policies as files: the Markdown blocks, the vocabulary, every error at its line and
column, how blocks combine, the worked examples in policies/, the JSON Schema, drift."""

from __future__ import annotations

import json
import re
from decimal import Decimal
from pathlib import Path

import jsonschema
import pytest

from svc_console.policy.drift import compare
from svc_console.policy.errors import PolicyInvalid
from svc_console.policy.loader import load_paths, load_text
from svc_console.policy.rules import Rules
from svc_console.policy.schema import policy_schema

EXAMPLES = Path(__file__).resolve().parents[2] / "policies"
FENCE = "```"


def block(yaml: str, prose: str = "# Policy\n\nSome prose.\n\n") -> str:
    return f"{prose}{FENCE}policy\n{yaml}{FENCE}\n"


def errors_of(text: str, name: str = "SKILLS.md") -> list[str]:
    with pytest.raises(PolicyInvalid) as caught:
        load_text(text, name)
    return [str(error) for error in caught.value.errors]


def line_of(text: str, marker: str = "# here") -> int:
    return next(n for n, line in enumerate(text.splitlines(), 1) if marker in line)


# Each case marks the line the error must name with `# here`; the column is where the
# offending token starts on that line.
MARKED = [
    ("per_call_max_usdc: two  # here\n", "per_call_max_usdc must be a number of USDC", '"two"'),
    ("per_call_max_usdc: -1  # here\n", "must be a finite, non-negative number of USDC", "-1"),
    ("per_call_max_usdc: 0.0000001  # here\n", "has more than 6 decimals", None),
    ("per_call_max: 2  # here\n", 'unknown key "per_call_max"', 'did you mean "per_call_max_usdc"'),
    (
        "budgets:\n  - per: agent\n    window: daily  # here\n    max_usdc: 5\n",
        "budgets[0].window must be one of hour, day, week or month",
        '"daily"',
    ),
    (
        "budgets:\n  - per: agnet  # here\n    window: day\n    max_usdc: 5\n",
        "budgets[0].per must be one of",
        '"agnet"',
    ),
    (
        "budgets:\n  - window: day\n    maxusdc: 5  # here\n",
        'unknown key "maxusdc"',
        'did you mean "max_usdc"',
    ),
    (
        "budgets:\n  - per: agent  # here\n    window: day\n    warn_usdc: 6\n    max_usdc: 5\n",
        "budgets[0] has warn_usdc above max_usdc",
        None,
    ),
    (
        "budgets:\n  - per: agent  # here\n    window: day\n",
        "budgets[0] needs max_usdc (a hard stop), warn_usdc, or both",
        None,
    ),
    (
        "allow:\n  domain_types:\n    - A7\n    - A23  # here\n",
        "allow.domain_types[1] must be a domain type (A1 to A22)",
        '"A23"',
    ),
    ("deny:\n  chains: [bsae]  # here\n", "deny.chains[0] must be a chain", '"bsae"'),
    ("deny:\n  provider: [x]  # here\n", 'unknown key "provider"', 'did you mean "providers"'),
    (
        "deny:\n  product_classes: [B9]  # here\n",
        "must be a product class (B1, B2, B3, B4, B5, B6)",
        None,
    ),
    ("allow:\n  tiers: [gold]  # here\n", "allow.tiers[0] must be a dataset tier", None),
    ("allow:\n  formats: [xlsx]  # here\n", "allow.formats[0] must be a dataset format", None),
    ("allow:\n  protocols: [siwx]  # here\n", "allow.protocols[0] must be a protocol", None),
    ("require:\n  min_quality: 1.5  # here\n", "must be a number from 0 to 1", "1.5"),
    ("require:\n  verified: perhaps  # here\n", "require.verified must be true or false", None),
    ("never_send: [emails, passwords]  # here\n", "never_send[1] must be a kind of secret", None),
    (
        "never_send_patterns:\n  bad: '(unclosed'  # here\n",
        "is not a valid regular expression",
        None,
    ),
    # Patterns run on RE2 (linear time): what it cannot run is refused at load, not run slowly.
    (
        "never_send_patterns:\n  ok: 'x'\n  ahead: 'secret(?=!)'  # here\n",
        "never_send_patterns.ahead is not a valid regular expression (invalid perl operator",
        None,
    ),
    (
        "never_send_patterns:\n  twice: '(ab)\\1'  # here\n",
        "no backreferences or lookaround",
        None,
    ),
    ('hours: ["mon-fri 8-18"]  # here\n', "hours[0] must be a time window", '"mon-fri 8-18"'),
    ('hours: ["mon-fry 08:00-18:00"]  # here\n', "must name days as mon..sun", None),
    ('hours: ["daily 25:00-26:00"]  # here\n', "impossible time", None),
    ("timezone: Mars/Olympus  # here\n", "timezone must be a time zone", None),
    ("compute_tools: maybe  # here\n", "compute_tools must be true, false or a list", None),
    ("compute_tools: [gpu]  # here\n", "compute_tools must be true, false or a list", None),
    ("dynamic_pricing: sometimes  # here\n", "dynamic_pricing must be true or false", None),
    # Rules are budgeted and cited by name: two of one name would share a budget.
    (
        "auto_approve:  # here\n  - {name: a, when: {agents: [x]}}\n"
        "  - {name: a, when: {agents: [y]}}\n",
        "auto_approve has two rules named 'a': rules are cited and budgeted by name",
        None,
    ),
    ("pending_lifetime: 2 weeks  # here\n", "pending_lifetime must be a duration", None),
    ("pending_lifetime: 3s  # here\n", "pending_lifetime must be between 10s and 7d", None),
    ("confirm_above_usdc: lots  # here\n", "confirm_above_usdc must be a number of USDC", None),
    (
        "auto_approve:\n  - name: everything  # here\n    when: {}\n",
        "auto_approve[0] needs at least one condition under when",
        None,
    ),
    (
        "auto_approve:\n  - when:  # here\n      max_usdc: 0.1\n",
        'auto_approve[0] needs "name"',
        None,
    ),
    (
        "auto_approve:\n  - name: x\n    when:\n      max_usd: 0.1  # here\n",
        'unknown key "max_usd"',
        'did you mean "max_usdc"',
    ),
    (
        "auto_approve:\n  - name: x\n    when: {max_usdc: 1}\n    budgets:\n"
        "      - window: fortnight  # here\n        max_usdc: 1\n",
        "auto_approve[0].budgets[0].window must be one of",
        None,
    ),
    (
        "budgets:\n  - per: overall  # here\n    for: [x]\n    window: day\n    max_usdc: 1\n",
        'budgets[0] has "for"',
        None,
    ),
    (
        "per_call_max_usdc: 1\nper_call_max_usdc: 2  # here\n",
        '"per_call_max_usdc" is given twice',
        "first at line",
    ),
    ("deny: [a, b]  # here\n", "deny must be a mapping of keys to values", None),
    ("budgets: {per: agent}  # here\n", "budgets must be a list", None),
    ("per_call_max_usdc: !!binary aGVsbG8=  # here\n", "unsupported YAML tag", None),
    ("deny:\n  providers: [a, b  # here\n", "YAML:", None),
]


@pytest.mark.parametrize(("yaml", "message", "found"), MARKED)
def test_every_error_names_its_file_line_and_what_was_expected(yaml, message, found):
    text = block(yaml)
    errors = errors_of(text)
    matching = [e for e in errors if message in e]
    assert matching, errors
    where, _, said = matching[0].partition(": ")
    name, line, column = where.split(":")
    assert name == "SKILLS.md"
    expected_line = line_of(text)
    if "YAML:" not in message:  # a YAML syntax error is found where the parser gives up
        assert int(line) == expected_line, (matching[0], expected_line)
    else:
        assert expected_line <= int(line) <= expected_line + 1
    assert int(column) >= 1
    if found is not None:
        assert found in said


def test_the_column_points_at_the_rule_or_the_list_entry():
    text = block("budgets:\n  - per: agent\n    window: daily\n    max_usdc: 5\n")
    (error,) = errors_of(text)
    line, column = (int(part) for part in error.split(":")[1:3])
    assert text.splitlines()[line - 1][column - 1 :].startswith("window: daily")
    text = block("allow:\n  domain_types: [A7, A23]\n")
    (error,) = errors_of(text)
    line, column = (int(part) for part in error.split(":")[1:3])
    assert text.splitlines()[line - 1][column - 1 :].startswith("A23")


def test_the_issue_example_reads_as_written():
    text = "\n" * 21 + f"{FENCE}policy\n    per_call_max_usdc: two\n{FENCE}\n"
    assert errors_of(text) == [
        'SKILLS.md:23:5: per_call_max_usdc must be a number of USDC, got "two"'
    ]


def test_all_errors_of_all_blocks_are_reported_in_file_order():
    text = (
        block("per_call_max_usdc: two\n")
        + "\nmore prose\n\n"
        + block("deny:\n  chains: [bsae]\nbudgets: 3\n", prose="")
    )
    errors = errors_of(text)
    assert len(errors) == 3
    lines = [int(error.split(":")[1]) for error in errors]
    assert lines == sorted(lines)


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        ("# Title\n\nNo rules here.\n", 1, "no policy block found"),
        ("", 1, "no policy block found"),
        (f"intro\n\n{FENCE}policy\nper_call_max_usdc: 1\n", 3, "never closed"),
        (f"intro\n{FENCE}polcy\nper_call_max_usdc: 1\n{FENCE}\n", 2, 'tagged "polcy"'),
        (f"intro\n{FENCE}Policy\nper_call_max_usdc: 1\n{FENCE}\n", 2, 'tagged "Policy"'),
        (f"a\nb\n{FENCE}policy\n{FENCE}\n", 3, "holds no rules"),
        (f"a\n{FENCE}policy\n- a\n- list\n{FENCE}\n", 3, "must hold a mapping"),
        # Read as CommonMark, as the file is rendered: what is not a top-level policy block but
        # looks like one is an error at its line, never rules silently gone or silently enforced.
        (
            f"intro\n\n> {FENCE}policy\n> per_call_max_usdc: 1\n> {FENCE}\n",
            3,
            "inside a blockquote, where it is not read as rules",
        ),
        (
            f"intro\n\n- item\n\n  {FENCE}policy\n  per_call_max_usdc: 1\n  {FENCE}\n",
            5,
            "inside a list item, where it is not read as rules",
        ),
        (
            f"intro\n\n{FENCE}yaml policy\nper_call_max_usdc: 1\n{FENCE}\n",
            3,
            'a code block tagged "yaml policy" is not read as rules',
        ),
        (
            f"intro\n\n<!--\n{FENCE}policy\nauto_approve:\n  - name: all\n"
            f"    when: {{max_usdc: 100}}\n{FENCE}\n-->\n",
            4,
            "inside HTML (a comment or a tag), hidden when the file is rendered",
        ),
    ],
)
def test_document_errors_name_their_line(text, line, message):
    errors = errors_of(text)
    assert any(message in e and e.startswith(f"SKILLS.md:{line}:") for e in errors), errors


def test_a_hidden_block_is_an_error_even_beside_a_valid_one_and_the_valid_one_is_not_enough():
    visible = block("per_call_max_usdc: 1\n")
    hidden = (
        f"\n<!-- {FENCE}policy\nauto_approve:\n  - {{name: x, when: {{max_usdc: 9}}}}\n"
        f"{FENCE} -->\n"
    )
    errors = errors_of(visible + hidden)
    assert len(errors) == 1 and "inside HTML" in errors[0], errors


def test_code_blocks_of_other_languages_and_tildes_are_prose():
    text = block("per_call_max_usdc: 1\n") + "\n~~~python\nprint(1)\n~~~\n\n    ```yaml\n"
    assert load_text(text, "SKILLS.md").rules.per_call_max_usdc == Decimal(1)


def test_an_indented_policy_block_is_an_error_at_its_line_not_a_sample():
    """Four spaces make a fenced block an indented code block: shown, never read. Beside a
    valid block it would have silently dropped out; it is an error at its fence."""
    indented = "\nA cap:\n\n    ```policy\n    per_call_max_usdc: 0.01\n    ```\n"
    text = block("per_call_max_usdc: 1\n") + indented
    line = text.splitlines().index("    ```policy") + 1
    assert errors_of(text) == [
        f"SKILLS.md:{line}:5: this policy block is indented by 4 spaces or more, which makes it"
        " a code sample, not rules: start its fence at the beginning of the line"
    ]


def test_a_file_that_is_not_utf8_is_an_error_at_line_one(tmp_path):
    path = tmp_path / "SKILLS.md"
    path.write_bytes(b"\xff\xfe policy")
    with pytest.raises(PolicyInvalid) as caught:
        load_paths([path])
    assert str(caught.value).startswith(f"{path}:1:1: is not UTF-8 text")


def test_blocks_combine_lists_add_up_and_a_single_value_twice_is_an_error():
    text = block("deny:\n  providers: [a]\nbudgets:\n  - {window: day, max_usdc: 1}\n") + block(
        "deny:\n  providers: [b]\n  chains: [solana]\nbudgets:\n  - {window: week, max_usdc: 5}\n",
        prose="\n",
    )
    policy = load_text(text)
    assert policy.rules.deny.providers == ["a", "b"]
    assert policy.rules.deny.chains == ["solana"]
    assert [b.window for b in policy.rules.budgets] == ["day", "week"]
    # The second budget's position is still known after the lists were joined.
    assert policy.source.value(("budgets", 1)).line == line_of(text, "window: week")

    twice = block("per_call_max_usdc: 1\n") + block("per_call_max_usdc: 2\n", prose="\n")
    (error,) = errors_of(twice)
    assert error.startswith(f"SKILLS.md:{line_of(twice, 'max_usdc: 2')}:1:")
    assert f"is already set at SKILLS.md:{line_of(twice, 'max_usdc: 1')}:1" in error


def test_every_rule_of_the_vocabulary_loads():
    text = block(
        """per_call_max_usdc: 2
confirm_above_usdc: 0.5
pending_lifetime: 20m
timezone: Europe/Paris
hours: ["mon-fri 08:00-19:00", "sat 10:00-12:00"]
compute_tools: [merge_models]
dynamic_pricing: false
require: {verified: true, min_quality: 0.8, min_reliability: 0.95}
never_send: [evm_private_keys, solana_private_keys, sk_live_keys, bearer_tokens, emails]
never_send_patterns: {project: 'PRJ-\\d+'}
allow:
  agents: [research-*]
  providers: [prov_*]
  endpoints: [ep_*]
  kinds: [market_call, dataset]
  domain_types: [a7, A8]
  product_classes: [B1]
  chains: [Base]
  protocols: [x402, MPP]
  tiers: [free]
  categories: [finance]
  formats: [csv]
deny:
  providers: ["*casino*"]
budgets:
  - {name: daily, per: agent, for: [research-*], window: day, warn_usdc: 4, max_usdc: 5}
  - {per: provider, window: week, max_usdc: 20}
  - {per: domain_type, for: [A8], window: hour, warn_usdc: 1}
  - {window: month, max_usdc: 300}
auto_approve:
  - name: small searches
    when:
      agents: [research-*]
      providers: [prov_searchly]
      endpoints: [ep_websearch_*]
      kinds: [market_call]
      domain_types: [A7]
      product_classes: [B1]
      chains: [base]
      protocols: [x402]
      tiers: [free]
      categories: [search]
      formats: [json]
      verified: true
      min_quality: 0.9
      min_reliability: 0.99
      max_usdc: 0.05
      fixed_price: true
      hours: ["daily 00:00-24:00"]
    budgets:
      - {per: agent, window: day, max_usdc: 1}
"""
    )
    rules = load_text(text).rules
    assert rules.per_call_max_usdc == Decimal("2")
    assert rules.pending_lifetime == 1200
    assert rules.hours == ["mon-fri 08:00-19:00", "sat 10:00-12:00"]
    assert rules.compute_tools == ["merge_models"]
    assert rules.allow.domain_types == ["A7", "A8"]  # codes normalised
    assert rules.allow.chains == ["base"] and rules.allow.protocols == ["x402", "mpp"]
    assert rules.budgets[0].for_ == ["research-*"]
    assert rules.auto_approve[0].when.fixed_price is True


@pytest.mark.parametrize("name", ["strict-default.md", "research-team.md", "finance-locked.md"])
def test_the_worked_examples_load_cleanly(name):
    policy = load_paths([EXAMPLES / name])
    assert policy.blocks and policy.sha256


def test_the_examples_say_what_the_issue_asks_of_them():
    strict = load_paths([EXAMPLES / "strict-default.md"]).rules
    assert strict.auto_approve == [] and strict.per_call_max_usdc <= Decimal("1")
    research = load_paths([EXAMPLES / "research-team.md"]).rules
    assert set(research.allow.domain_types) == {"A7", "A8"}
    assert any(b.per == "agent" and b.window == "day" for b in research.budgets)
    assert research.auto_approve and research.auto_approve[0].when.verified is True
    finance = load_paths([EXAMPLES / "finance-locked.md"]).rules
    assert finance.compute_tools == [] and finance.dynamic_pricing is False
    assert finance.confirm_above_usdc is not None


def test_the_readme_documents_every_rule_with_an_example_that_loads():
    readme = (EXAMPLES / "README.md").read_text()
    examples = re.findall(r"^```yaml\n(.*?)^```$", readme, flags=re.S | re.M)
    assert len(examples) >= 11
    keys: set[str] = set()
    for example in examples:
        keys |= set(load_text(block(example), "README.md").rules.model_fields_set)
    assert keys == set(Rules.model_fields), set(Rules.model_fields) - keys
    for key in policy_schema()["properties"]:
        assert f"`{key}`" in readme, f"{key} is not documented in policies/README.md"


def test_the_json_schema_accepts_the_examples_and_refuses_unknown_keys():
    schema = policy_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    for block_rules in load_paths([EXAMPLES / "research-team.md"]).blocks:
        assert not list(
            validator.iter_errors(json.loads(json.dumps(block_rules.rules, default=str)))
        )
    assert list(validator.iter_errors({"per_call_max": 2}))


def test_drift_same_text_same_rules_and_a_difference():
    text = block("per_call_max_usdc: 2\ndeny:\n  chains: [solana]\n")
    local = load_text(text)
    same = compare(local, {"source": "SKILLS.md", "sha256": local.sha256, "policy": {}})
    assert same.in_sync and same.same_text
    respelled = {
        "sha256": "0" * 64,
        "policy": {"per_call_max_usdc": "2.00", "deny": {"chains": ["Solana"]}},
    }
    assert compare(local, respelled).in_sync
    changed = {
        "sha256": "0" * 64,
        "policy": {"per_call_max_usdc": 5, "deny": {"chains": ["solana"]}},
    }
    drift = compare(local, changed)
    assert not drift.in_sync
    assert [(d.path, d.local, d.service) for d in drift.differences] == [
        ("per_call_max_usdc", "2.00", "5.00")
    ]
    foreign = {"sha256": "1" * 64, "policy": {"caps": {"per_call_usdc": "2.00"}}}
    assert not compare(local, foreign).in_sync and compare(local, foreign).service_problems
    broken = {
        "sha256": "2" * 64,
        "valid": False,
        "policy": None,
        "errors": [{"line": 3, "message": "x"}],
    }
    assert "errors" in compare(local, broken).summary()
