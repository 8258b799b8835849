"""What `svc-console doctor` reports: findings, each with how serious it is and its fix."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal

Level = Literal["ok", "note", "warning", "serious"]


@dataclass(frozen=True)
class Finding:
    check: str  # a short stable word, for scripts: "home", "same-user", "policy", ...
    level: Level
    said: str  # what was found, one line
    fix: str | None = None  # what to do; None when nothing needs doing

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def ok(check: str, said: str) -> Finding:
    return Finding(check, "ok", said)


def note(check: str, said: str) -> Finding:
    return Finding(check, "note", said)


def warning(check: str, said: str, fix: str) -> Finding:
    return Finding(check, "warning", said, fix)


def serious(check: str, said: str, fix: str) -> Finding:
    return Finding(check, "serious", said, fix)
