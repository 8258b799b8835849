"""`policy-test` blocks and `svc-console policy test`: the example policies' tests pass (this is
how `make test` runs them); a rule widened makes a test fail, named with the rule that decides
now; a wrong expected rule fails; the other files in force count; JUnit XML for CI; a malformed
test is an error at its line."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from svc_console.cli import main
from svc_console.policy.errors import PolicyInvalid
from svc_console.policy.policy_tests import read_tests, run_file

POLICIES = Path(__file__).resolve().parents[2] / "policies"
EXAMPLES = sorted(path for path in POLICIES.glob("*.md") if path.name != "README.md")


@pytest.mark.parametrize("policy", EXAMPLES, ids=lambda path: path.name)
def test_the_example_policies_carry_tests_that_pass(policy: Path):
    outcomes = run_file(policy, [])
    assert len(outcomes) >= 5, "each example policy pins what it decides"
    assert [outcome.mismatch() for outcome in outcomes if not outcome.passed] == []


@pytest.fixture
def research(tmp_path: Path) -> Path:
    copy = tmp_path / "research-team.md"
    copy.write_text((POLICIES / "research-team.md").read_text())
    return copy


def test_a_widened_rule_fails_its_test_naming_the_rule_that_now_decides(
    home: Path, research: Path, capsys: pytest.CaptureFixture[str]
):
    text = research.read_text()
    widened = text.replace("      max_usdc: 0.05\n", "      max_usdc: 0.25\n", 1)
    assert widened != text
    research.write_text(widened)
    rule_line = next(
        n for n, line in enumerate(widened.splitlines(), 1) if "small verified searches" in line
    )
    assert main(["policy", "test", str(research)]) == 1
    out = capsys.readouterr().out
    assert f"{research}: 8 tests, 1 failed" in out
    assert (
        "'a search above five cents waits for the operator': expected ask, got auto_approve"
        f" by auto_approve 'small verified searches' (research-team.md:{rule_line})"
    ) in out
    assert out.rstrip().endswith("1 of 8 tests failed.")


def test_a_test_expecting_another_rule_fails(home: Path, research: Path, capsys):
    research.write_text(
        research.read_text().replace("  rule: deny.providers\n", "  rule: deny.domain_types\n")
    )
    assert main(["policy", "test", str(research)]) == 1
    assert (
        "'a casino provider is denied': expected deny by 'deny.domain_types', got deny by"
        " deny.providers"
    ) in capsys.readouterr().out


def test_the_other_files_in_force_count_unless_alone(
    home: Path, research: Path, monkeypatch: pytest.MonkeyPatch, capsys
):
    stop = home / "stop.md"
    stop.write_text('# SKILLS.md: stop\n\n```policy\ndeny:\n  agents: ["research-*"]\n```\n')
    monkeypatch.setenv("SVC_CONSOLE_POLICY", f"{research}:{stop}")
    assert main(["policy", "test", str(research)]) == 1
    assert "got deny by deny.agents (stop.md:5)" in capsys.readouterr().out
    assert main(["policy", "test", "--alone", str(research)]) == 0


def test_junit_xml_names_each_test_and_each_failure(home: Path, research: Path, tmp_path: Path):
    research.write_text(research.read_text().replace("  expect: deny\n", "  expect: ask\n", 1))
    report = tmp_path / "junit.xml"
    assert main(["policy", "test", str(research), "--junit", str(report)]) == 1
    suite = ET.parse(report).getroot().find("testsuite")
    assert suite is not None and suite.get("tests") == "8" and suite.get("failures") == "1"
    failed = [case for case in suite.iter("testcase") if case.find("failure") is not None]
    assert [case.get("name") for case in failed] == ["a casino provider is denied"]
    assert report.stat().st_mode & 0o777 == 0o600


@pytest.mark.parametrize(
    ("item", "said", "line"),
    [
        ("- name: x\n  agent: a\n  amount_usdc: 1\n", "policy-test expect: Field required", 8),
        ("- name: x\n  agent: a\n  amount_usdc: 1\n  expect: maybe\n", "policy-test expect", 11),
        ("- name: x\n  agnet: a\n  amount_usdc: 1\n  expect: ask\n", "policy-test agnet", 9),
        ("- name: x\n  agent: a\n  expect: ask\n", "amount_usdc is needed", 8),
        ("name: x\n", "a policy-test block is a YAML list", 8),
    ],
    ids=["no expect", "an unknown verdict", "a misspelt key", "no amount", "not a list"],
)
def test_a_malformed_test_is_an_error_at_its_line(
    home: Path, tmp_path: Path, capsys, item: str, said: str, line: int
):
    policy = tmp_path / "SKILLS.md"
    policy.write_text(f"# p\n\n```policy\nper_call_max_usdc: 1\n```\n\n```policy-test\n{item}```\n")
    with pytest.raises(PolicyInvalid) as raised:
        read_tests(policy.read_text(), str(policy))
    assert said in str(raised.value) and f"{policy}:{line}:" in str(raised.value)
    assert main(["policy", "test", str(policy)]) == 1
    out = capsys.readouterr().out
    assert said in out and out.rstrip().endswith("0 tests passed; 1 file did not load.")
