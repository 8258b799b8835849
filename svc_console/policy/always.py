"""Decide "always": the operator's decision on one request written into a SKILLS.md file as a
rule, narrowed to that agent, that endpoint (or dataset, or tool), at most that amount a call and
a daily budget of its own, for the operator to read as a diff and save as the editor saves; the
watcher then puts it in force like any edit.

Names are written as exact names, never globs: a `*`, `?` or `[` in an agent's name is escaped,
so the rule cannot approve more agents than the one the operator looked at.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from decimal import Decimal

from svc_console.core.money import format_usdc

_GLOB = "*?["
NEW_FILE = "# SKILLS.md\n\nWhat our agents may spend, and why.\n"


@dataclass(frozen=True)
class Always:
    """What the rule says: who, what, how much."""

    agent: str
    kind: str
    target: str  # endpoint id, dataset id or tool
    per_call_max: Decimal
    daily: Decimal
    request_id: str
    at: float

    @property
    def name(self) -> str:
        return f"always {self.agent} {self.target}"[:80]


def exact(name: str) -> str:
    """A name as a list entry that matches it alone (glob characters bracketed)."""
    return "".join(f"[{c}]" if c in _GLOB else c for c in name)


def block(rule: Always) -> str:
    """The rule as a section of its own: a heading, a line of prose saying where it came from,
    and the policy block."""
    day = dt.datetime.fromtimestamp(rule.at, dt.UTC).strftime("%Y-%m-%d")
    quoted = json.dumps  # YAML reads a JSON string as the same string
    return (
        f"\n## Always: {rule.agent} → {rule.target}\n\n"
        f"Approved for good by the operator on {day}, from request {rule.request_id}: up to"
        f" {format_usdc(rule.per_call_max)} USDC a call and {format_usdc(rule.daily)} USDC a"
        " day.\n\n"
        "```policy\n"
        "auto_approve:\n"
        f"  - name: {quoted(rule.name)}\n"
        "    when:\n"
        f"      agents: [{quoted(exact(rule.agent))}]\n"
        f"      kinds: [{rule.kind}]\n"
        f"      endpoints: [{quoted(exact(rule.target))}]\n"
        f"      max_usdc: {format_usdc(rule.per_call_max)}\n"
        "    budgets:\n"
        "      - window: day\n"
        f"        max_usdc: {format_usdc(rule.daily)}\n"
        "```\n"
    )


def with_rule(saved: str | None, rule: Always) -> str:
    """The file's text with the rule added at its end (a new file when there is none)."""
    text = NEW_FILE if saved is None else saved
    if not text.endswith("\n"):
        text += "\n"
    return text + block(rule)
