"""Which policy the socket benchmarks run the broker with.

The benchmarks want a policy that decides most requests itself (auto-approves small verified
calls, denies others), written as a SKILLS.md file. Until svc_console.policy can load one, the
broker's default applies (ManualReview: every request is committed as pending for the operator)
and the results say so.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

POLICY = Path(__file__).with_name("bench-policy.md")


def policy_file() -> Path | None:
    """The SKILLS.md policy to run with, or None while no loader exists."""
    return None


def load(path: Path) -> tuple[Any, str]:
    """The broker's policy engine for `path`, and one line naming it for the results."""
    raise NotImplementedError("SKILLS.md policies cannot be loaded yet")
