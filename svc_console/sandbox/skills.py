"""The agent's SKILLS.md as the sandbox holds it, and the active policy read from it for
`GET /api/agent/policies`.

A SKILLS.md is Markdown: prose for people, and rules in fenced code blocks tagged `policy` (YAML
inside). The sandbox only extracts and merges those blocks; it does not judge requests by them (the
console's `svc_console.policy` does that, and the sandbox must not import it).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import re
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import yaml

MAX_SKILLS_BYTES = 256 * 1024

# The sandbox's account starts with the rules a fresh console offers to save (the policies
# screen's template), written in the console's vocabulary (policies/README.md): a console that
# saves them sees its policy in sync with the service's, not drift. tests/sandbox checks both
# with the console's own rules, which this module must not import.
DEFAULT_SKILLS_MD = """\
# SKILLS.md (sandbox default)

The spending rules this sandbox account runs with. Prose is for people; the rules are the fenced
`policy` blocks below. Nothing is approved automatically unless a rule here says so: compute jobs,
which start GPU work and charge at once, wait for the operator like every other request.

```policy
per_call_max_usdc: 0.25
budgets:
  - name: daily allowance
    per: agent
    window: day
    warn_usdc: 4
    max_usdc: 5
```
"""

# An opening fence: three or more backticks or tildes, then the info string `policy`.
_FENCE_OPEN = re.compile(r"^ {0,3}(?P<fence>`{3,}|~{3,})\s*policy\s*$")


class SkillsError(ValueError):
    """A policy block is not a YAML mapping; `line` is the line of its opening fence."""

    def __init__(self, line: int, message: str):
        super().__init__(f"line {line}: {message}")
        self.line, self.message = line, message


@dataclass(frozen=True)
class PolicyBlock:
    line: int  # 1-based line of the opening fence in SKILLS.md
    rules: dict[str, Any]


def _blocks(text: str) -> list[tuple[int, str]]:
    found: list[tuple[int, str]] = []
    lines = text.splitlines()
    index = 0
    while index < len(lines):
        opening = _FENCE_OPEN.match(lines[index])
        if opening is None:
            index += 1
            continue
        fence = opening.group("fence")
        closing = re.compile(rf"^ {{0,3}}{re.escape(fence[0])}{{{len(fence)},}}\s*$")
        body: list[str] = []
        start = index + 1
        index += 1
        while index < len(lines) and not closing.match(lines[index]):
            body.append(lines[index])
            index += 1
        if index >= len(lines):
            raise SkillsError(start, "the policy block is never closed")
        found.append((start, "\n".join(body)))
        index += 1
    return found


def _plain(value: Any) -> Any:
    """YAML's dates and the like, as JSON can carry them."""
    if isinstance(value, dict):
        return {str(key): _plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_plain(item) for item in value]
    if isinstance(value, dt.date | dt.datetime | Decimal):
        return str(value)
    if isinstance(value, float) and value != value:  # NaN has no JSON spelling
        return None
    return value


def _merge(into: dict[str, Any], rules: dict[str, Any]) -> None:
    """Later blocks refine earlier ones: mappings merge key by key, lists add up, the rest is
    replaced."""
    for key, value in rules.items():
        current = into.get(key)
        if isinstance(current, dict) and isinstance(value, dict):
            _merge(current, value)
        elif isinstance(current, list) and isinstance(value, list):
            into[key] = current + value
        else:
            into[key] = value


def parse_blocks(text: str) -> list[PolicyBlock]:
    """Every fenced `policy` block, in order; raises SkillsError naming the line of a bad one."""
    if len(text.encode("utf-8")) > MAX_SKILLS_BYTES:
        raise SkillsError(1, f"SKILLS.md is larger than {MAX_SKILLS_BYTES} bytes")
    blocks = []
    for line, source in _blocks(text):
        try:
            rules = yaml.safe_load(source) if source.strip() else {}
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = line + 1 + mark.line if mark is not None else line
            problem = getattr(exc, "problem", None) or "not valid YAML"
            raise SkillsError(where, str(problem)) from None
        if rules is None:
            rules = {}
        if not isinstance(rules, dict):
            raise SkillsError(line, "a policy block must hold a YAML mapping of rules")
        blocks.append(PolicyBlock(line=line, rules=_plain(rules)))
    return blocks


def active_policy(text: str) -> dict[str, Any]:
    """The answer of `GET /api/agent/policies` for this SKILLS.md text."""
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    answer: dict[str, Any] = {"source": "SKILLS.md", "sha256": digest}
    try:
        blocks = parse_blocks(text)
    except SkillsError as exc:
        # An unreadable policy is reported, never half-applied.
        return {
            **answer,
            "valid": False,
            "policy": None,
            "blocks": [],
            "errors": [{"line": exc.line, "message": exc.message}],
            "sandbox": True,
        }
    merged: dict[str, Any] = {}
    for block in blocks:
        _merge(merged, _plain(block.rules))
    return {
        **answer,
        "valid": True,
        "policy": merged,
        "blocks": [{"line": block.line, "rules": block.rules} for block in blocks],
        "errors": [],
        "sandbox": True,
    }
