"""`policy-test` blocks: example requests a SKILLS.md file holds, each with the verdict it must
get and, optionally, the rule that must decide it, so a change that widens or narrows what a
policy decides fails by name (as `opa test` does for Rego).

A block is a YAML list at the top level of the file, fenced and tagged `policy-test`; each item
names the request by its facts (no catalogue is read: a test means the same on every machine).
Budgets start empty and brakes are not counted: a test pins what the rules decide, not the day.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Literal

from markdown_it import MarkdownIt
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from svc_console.core.money import to_atomic
from svc_console.policy.document import Block
from svc_console.policy.engine import CompiledPolicy
from svc_console.policy.errors import PolicyError, PolicyInvalid, Where
from svc_console.policy.facts import COMPUTE_PRICES, Facts
from svc_console.policy.source import compose

TAG = "policy-test"
# A test with no `at` is judged on Monday 5 January 2026 at noon UTC: a fixed moment, so that a
# time window never makes a test pass in the morning and fail at night.
DEFAULT_AT = dt.datetime(2026, 1, 5, 12, 0, tzinfo=dt.UTC)
Expect = Literal["deny", "auto_approve", "ask"]
_MARKDOWN = MarkdownIt("commonmark")


class Example(BaseModel):
    """One example request and what the policy must decide on it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1)
    agent: str = Field(min_length=1)
    agent_verified: bool = True  # the agent proved its name (a token, or its registered uid)
    kind: Literal["market_call", "dataset", "breed_agent", "merge_models"] | None = None
    endpoint: str | None = None
    dataset: str | None = None
    provider: str | None = None
    provider_name: str | None = None
    domain_type: str | None = None
    product_class: str | None = None
    verified: bool | None = None
    quality: float | None = None
    reliability: float | None = None
    dynamic: bool = False
    chain: str | None = None
    protocol: str | None = None
    tier: str | None = None
    category: str | None = None
    format: str | None = None
    inputs: Any = Field(default_factory=dict)
    amount_usdc: Decimal | None = Field(default=None, ge=0)
    at: dt.datetime | None = None
    expect: Expect
    rule: str | None = None

    @model_validator(mode="after")
    def _priced(self) -> Example:
        if self.amount_usdc is None and self.kind_of not in COMPUTE_PRICES:
            raise ValueError("amount_usdc is needed (only the compute tools have a price)")
        return self

    @property
    def kind_of(self) -> str:
        return self.kind or ("dataset" if self.dataset else "market_call")

    def facts(self) -> Facts:
        kind = self.kind_of
        amount = self.amount_usdc if self.amount_usdc is not None else COMPUTE_PRICES[kind]
        upper = (lambda value: value.upper() if value else None) if kind == "market_call" else None
        return Facts(
            agent=self.agent,
            kind=kind,
            amount=to_atomic(amount),
            endpoint=self.endpoint or self.dataset,
            provider=self.provider,
            provider_name=self.provider_name,
            domain_type=upper(self.domain_type) if upper else None,
            product_class=upper(self.product_class) if upper else None,
            chain=self.chain.lower() if self.chain else None,
            protocol=self.protocol.lower() if self.protocol else None,
            tier=self.tier,
            category=self.category,
            format=self.format,
            verified=self.verified,
            quality=self.quality,
            reliability=self.reliability,
            dynamic=self.dynamic,
            inputs=self.inputs,
            agent_verified=self.agent_verified,
        )

    def moment(self) -> float:
        at = self.at or DEFAULT_AT
        return (at if at.tzinfo else at.replace(tzinfo=dt.UTC)).timestamp()


@dataclass(frozen=True)
class PolicyTest:
    where: Where
    example: Example


@dataclass(frozen=True)
class Outcome:
    """A test run: what was expected, what the policy decided and by which rule."""

    test: PolicyTest
    got: str
    decided_by: str | None  # the rule that decided, in a verdict's words; None: no rule did
    rule_name: str | None  # the same rule's bare name, compared with the test's `rule`

    @property
    def passed(self) -> bool:
        wanted = self.test.example
        return self.got == wanted.expect and (wanted.rule is None or wanted.rule == self.rule_name)

    def why(self) -> str:
        """The test, what it expected, and the rule that decided instead."""
        wanted = self.test.example
        expected = wanted.expect + (f" by {wanted.rule!r}" if wanted.rule else "")
        by = f" by {self.decided_by}" if self.decided_by else " (no rule decides it)"
        return f"{wanted.name!r}: expected {expected}, got {self.got}{by}"

    def mismatch(self) -> str:
        """One line, at the test's place in its file."""
        return f"{self.test.where}: {self.why()}"


def test_blocks(text: str, file: str) -> list[Block]:
    """The `policy-test` blocks at the top level of a Markdown document."""
    lines = text.splitlines()
    blocks = []
    for token in _MARKDOWN.parse(text):
        if token.type == "fence" and token.level == 0 and token.info.split() == [TAG]:
            start, end = token.map or (0, 0)
            body = "\n".join(lines[start + 1 : end - 1])
            blocks.append(Block(file, start + 1, start + 2, body))
    return blocks


def read_tests(text: str, file: str) -> list[PolicyTest]:
    """Every test of a SKILLS.md text, in order; PolicyInvalid names each malformed one."""
    tests, problems = [], []
    for block in test_blocks(text, file):
        data, source = compose(block)
        if not isinstance(data, list):
            problems.append(PolicyError(source.value(()), "a policy-test block is a YAML list"))
            continue
        for index, item in enumerate(data):
            try:
                tests.append(PolicyTest(source.value((index,)), Example.model_validate(item)))
            except ValidationError as exc:
                problems += [_problem(error, index, source) for error in exc.errors()]
    if problems:
        raise PolicyInvalid(problems)
    return tests


def _problem(error: Any, index: int, source: Any) -> PolicyError:
    """A test's error at the key it is about (or at the test, for one about the whole)."""
    loc = [part for part in error["loc"] if isinstance(part, str)]
    where = source.key((index, loc[0])) if loc else source.value((index,))
    field = ".".join(loc) or "test"
    return PolicyError(where, f"policy-test {field}: {error['msg']}")


def run(policy: CompiledPolicy, tests: list[PolicyTest]) -> list[Outcome]:
    """Each test judged by `policy`, as the broker judges a new request with empty budgets."""
    from svc_console.policy.budgets import RollingTotals
    from svc_console.policy.verdicts import to_verdict

    outcomes = []
    for test in tests:
        evaluation = policy.evaluate(test.example.facts(), RollingTotals(), test.example.moment())
        verdict = to_verdict(evaluation)
        deciding = _deciding_rule(evaluation)
        outcomes.append(
            Outcome(test, evaluation.outcome, verdict.rules[0] if verdict.rules else None, deciding)
        )
    return outcomes


def _deciding_rule(evaluation: Any) -> str | None:
    if evaluation.outcome == "auto_approve":
        return evaluation.rule
    effect = "deny" if evaluation.outcome == "deny" else "ask"
    return next((c.rule for c in evaluation.citations if c.effect == effect), None)


def failures(policy: CompiledPolicy, files: Sequence[Any]) -> tuple[int, list[PolicyError]]:
    """How many tests the policy files (`loader.PolicyFile`s) hold, and each that fails or is
    malformed, at its place: what the policies screen lists as the author types."""
    count, failing = 0, []
    for file in files:
        try:
            tests = read_tests(file.text, file.name)
        except PolicyInvalid as exc:
            count, failing = count + len(exc.errors), failing + exc.errors
            continue
        count += len(tests)
        failing += [
            PolicyError(o.test.where, f"policy test {o.why()}")
            for o in run(policy, tests)
            if not o.passed
        ]
    return count, failing


def run_text(text: str, name: str, others: Sequence[Any] = ()) -> list[Outcome]:
    """The tests of a SKILLS.md text (a file, or a draft being typed), judged by its policy and
    the `others` files in force (`loader.PolicyFile`s); PolicyInvalid when either does not load."""
    from svc_console.policy.loader import PolicyFile, load

    tests = read_tests(text, name)
    policy = CompiledPolicy(load([PolicyFile(None, name, text), *others]))
    return run(policy, tests)


def run_file(path: Any, others: list[Any]) -> list[Outcome]:
    """`run_text` of the file at `path`, with the files at `others` in force beside it."""
    from svc_console.policy.loader import read

    shown = str(path)
    return run_text(read(path, shown).text, shown, [read(other, str(other)) for other in others])
