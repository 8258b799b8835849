"""Drift: the service's active policy (`GET /api/agent/policies`, read from the agent's SKILLS.md
on the service) compared with the local one in force.

The same text (same SHA-256) is in sync. Otherwise both sides are read through this console's
vocabulary and compared rule by rule, so `0.5` and `"0.50"` or two spellings of one time window
are not drift, while a cap that differs is. The service's JSON carries an unquoted YAML amount
(`0.5`) as a float, which the vocabulary refuses for USDC: it is read as the decimal it spells, as
the local YAML reader does. A service policy this console cannot read (invalid on the service, or
in words it does not know) is drift too, with the reasons.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from pydantic import ValidationError

from svc_console.policy.errors import dotted
from svc_console.policy.loader import LoadedPolicy
from svc_console.policy.rules import Rules


@dataclass(frozen=True)
class Difference:
    path: str  # `budgets[1].max_usdc`
    local: Any  # None: absent locally
    service: Any  # None: absent on the service


@dataclass(frozen=True)
class Drift:
    local_sha256: str
    service_sha256: str | None
    same_text: bool
    differences: tuple[Difference, ...] = ()
    service_problems: tuple[str, ...] = ()  # why the service's policy could not be compared

    @property
    def in_sync(self) -> bool:
        return self.same_text or (not self.differences and not self.service_problems)

    def summary(self) -> str:
        if self.same_text:
            return "in sync: the service runs the same SKILLS.md"
        if self.in_sync:
            return "in sync: the same rules, written differently"
        if self.service_problems:
            return f"drift: {self.service_problems[0]}"
        count = len(self.differences)
        first = self.differences[0].path
        return f"drift: {count} rule{'s' if count > 1 else ''} differ, first {first}"


def compare(local: LoadedPolicy, answer: Any) -> Drift:
    """`answer`: the route's JSON (`{"source", "sha256", "policy", "blocks", ...}`) or a model
    of it (`core.account.ActivePolicy`)."""
    data = answer.model_dump(mode="json") if hasattr(answer, "model_dump") else dict(answer)
    service_sha = data.get("sha256")
    if service_sha == local.sha256:
        return Drift(local.sha256, service_sha, True)
    if data.get("valid") is False or data.get("policy") is None:
        problems = [
            f"line {e.get('line')}: {e.get('message')}"
            for e in data.get("errors") or []
            if isinstance(e, Mapping)
        ]
        reason = "the service's SKILLS.md has errors" + (f" ({problems[0]})" if problems else "")
        return Drift(local.sha256, service_sha, False, service_problems=(reason, *problems[1:]))
    try:
        service = Rules.model_validate(_decimals(data["policy"])).model_dump(
            mode="json", by_alias=True, exclude_none=True
        )
    except ValidationError as exc:
        problems = tuple(
            f"the service's policy says {dotted(e['loc'])}: {e['msg']}"
            for e in exc.errors(include_url=False)[:10]
        )
        return Drift(local.sha256, service_sha, False, service_problems=problems)
    differences: list[Difference] = []
    _diff(local.rules_json(), service, (), differences)
    return Drift(local.sha256, service_sha, False, tuple(differences))


def _decimals(value: Any) -> Any:
    """JSON numbers with a fraction as the decimals they spell (`0.5` → `Decimal("0.5")`)."""
    if isinstance(value, float):
        return Decimal(str(value))
    if isinstance(value, Mapping):
        return {key: _decimals(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_decimals(item) for item in value]
    return value


def _diff(local: Any, service: Any, path: tuple, out: list[Difference]) -> None:
    if isinstance(local, dict) and isinstance(service, dict):
        for key in sorted(set(local) | set(service)):
            _diff(local.get(key), service.get(key), (*path, key), out)
    elif isinstance(local, list) and isinstance(service, list) and len(local) == len(service):
        for index, (mine, theirs) in enumerate(zip(local, service, strict=True)):
            _diff(mine, theirs, (*path, index), out)
    elif local != service and not (_empty(local) and _empty(service)):
        out.append(Difference(dotted(path), local, service))


def _empty(value: Any) -> bool:
    return value is None or value == [] or value == {}
