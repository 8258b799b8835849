"""Which policy the socket benchmarks run the broker with.

They want a policy that decides most requests itself, as a busy team's would: `bench-policy.md`
denies every tenth load agent, approves the agents up to `load-189` without asking and leaves the
rest to the operator. It is loaded the way the console loads any SKILLS.md (the runtime's
`policy_files`). A console without SKILLS.md support runs the broker's default (ManualReview:
every request is committed as pending) and the results say so.
"""

from __future__ import annotations

from pathlib import Path

POLICY = Path(__file__).with_name("bench-policy.md")


def policy_file() -> Path | None:
    """The SKILLS.md policy to run with, or None when the console cannot load one."""
    from svc_console.runtime import Runtime

    return POLICY if "policy_files" in Runtime.__dataclass_fields__ else None


def describe(path: Path) -> str:
    return (
        f"SKILLS.md {path.name} (live policy): deny agents load-*0, auto-approve load-000 to"
        " load-189, the operator decides the rest"
    )
