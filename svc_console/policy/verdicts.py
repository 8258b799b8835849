"""An evaluation in the words the operator reads: the `Verdict` stored with the request, shown by
the approvals screen and returned by `spend.get`, with each rule cited by file and line."""

from __future__ import annotations

from functools import lru_cache
from pathlib import PurePath

from svc_console.core.models import Verdict
from svc_console.policy.checks import BudgetCheck, Cite
from svc_console.policy.engine import Evaluation
from svc_console.policy.errors import Where
from svc_console.policy.grants import grant_id, grant_name

ASK = "no policy rule decides this: the operator does"


def cited(rule: str, where: Where | None) -> str:
    """`deny.providers (SKILLS.md:14)`: a rule and where it is written."""
    return f"{rule} ({short(where)})" if where is not None else rule


def short(where: Where) -> str:
    return f"{_name(where.file)}:{where.line}"


@lru_cache(maxsize=64)
def _name(file: str) -> str:
    """A policy file as verdicts name it (its base name: SKILLS.md)."""
    return PurePath(file).name


def to_verdict(
    evaluation: Evaluation, sha256: str | None = None, note: str | None = None
) -> Verdict:
    """The verdict of an evaluation, its words written when first read (`Verdict.later`): the
    broker judges every request, and the words cost ten times the judging."""
    return Verdict.later(evaluation.outcome, sha256, lambda: _words(evaluation, note))


def _words(evaluation: Evaluation, note: str | None) -> dict:
    """The summary, the deciding rules, every citation and the budgets' figures."""
    cites = evaluation.citations
    if evaluation.outcome == "deny":
        deciding = [c for c in cites if c.effect == "deny"]
        first = deciding[0]
        summary = f"denied by {cited(first.rule, first.where)}: {first.text()}"
        if len(deciding) > 1:
            summary += f" (and {len(deciding) - 1} more)"
    elif evaluation.outcome == "auto_approve" and grant_id(evaluation.rule) is not None:
        deciding = [c for c in cites if c.effect == "auto_approve"]
        summary = f"approved by {grant_name(evaluation.rule)}: {deciding[0].text()}"
    elif evaluation.outcome == "auto_approve":
        deciding = [c for c in cites if c.effect == "auto_approve"]
        summary = f"approved by auto_approve {cited(repr(evaluation.rule), deciding[0].where)}"
    elif any(c.effect == "ask" for c in cites):  # a brake: the operator decides
        deciding = [c for c in cites if c.effect == "ask"]
        first = deciding[0]
        summary = f"the operator decides: {cited(first.rule, first.where)}: {first.text()}"
        if len(deciding) > 1:
            summary += f" (and {len(deciding) - 1} more)"
    else:
        deciding = []
        summary = note or ASK
    warnings = sum(1 for c in cites if c.effect == "warn")
    if warnings:
        summary += f"; {warnings} budget warning{'s' if warnings > 1 else ''}"
    rules = [
        grant_name(c.rule)
        if grant_id(c.rule) is not None
        else cited(f"auto_approve {c.rule!r}" if c.effect == "auto_approve" else c.rule, c.where)
        for c in deciding
    ]
    # One validation of plain values is faster than constructing each nested model.
    whole = Verdict.model_validate(
        {
            "outcome": evaluation.outcome,
            "summary": summary,
            "rules": rules,
            "citations": [_citation(c) for c in cites],
            "budgets": [_impact(*impact) for impact in evaluation.figures()],
        }
    )
    return {name: getattr(whole, name) for name in ("summary", "rules", "citations", "budgets")}


def _citation(cite: Cite) -> dict:
    where = cite.where
    return {
        "effect": cite.effect,
        "rule": cite.rule,
        "reason": cite.text(),
        "file": _name(where.file) if where else None,
        "line": where.line if where else None,
    }


def _impact(check: BudgetCheck, key: str, before: int, after: int) -> dict:
    return {
        "budget": check.label_for(key),
        "before_usdc": _usdc(before),
        "after_usdc": _usdc(after),
        "warn_usdc": _usdc(check.warn) if check.warn is not None else None,
        "max_usdc": _usdc(check.max) if check.max is not None else None,
        "file": _name(check.where.file),
        "line": check.where.line,
    }


def _usdc(atomic: int) -> str:
    whole, micro = divmod(atomic, 1_000_000)
    return f"{whole}.{micro:06d}"
