"""What the policies screen's status lines say, worked out from the drafts, the live policy, the
ledger's saved versions and the service's answer (plain data for the widgets in `status.py` and
`drift.py`)."""

from __future__ import annotations

from typing import Any

from svc_console.core.sanitize import inert_line
from svc_console.ledger import policy_versions
from svc_console.market.errors import MarketError
from svc_console.policy.drafts import DraftCheck
from svc_console.policy.drift import compare
from svc_console.policy.live import LivePolicy
from svc_console.tui.policies.drafts import Drafts
from svc_console.tui.policies.drift import DriftShown
from svc_console.tui.policies.messages import ServiceRead
from svc_console.tui.policies.status import DraftState, FileRow, PolicyState


def in_force(live: LivePolicy | None) -> dict[str, str]:
    """The SHA-256 of each file's version in force, by path."""
    compiled = live.compiled if live is not None else None
    if compiled is None:
        return {}
    return {str(f.path or f.name): f.sha256 for f in compiled.loaded.files}


def policy_state(live: LivePolicy | None, service_flag: tuple[str, bool] | None) -> PolicyState:
    summary, in_sync = service_flag or (None, None)
    if live is None:
        return PolicyState("fixed", None)
    status = live.status
    return PolicyState(status.state, status.sha256, summary, in_sync)


def file_rows(work: Drafts, forced: dict[str, str], ledger: Any) -> list[FileRow]:
    """One status row per file: as saved, its errors, whether it is in force, who saved it."""
    rows = []
    for index, saved in enumerate(work.saved):
        version = policy_versions.latest(ledger, str(saved.path))
        errors = work.saved_check.errors_in(saved.name) if work.saved_check else []
        rows.append(
            FileRow(
                name=saved.name,
                exists=saved.text is not None,
                sha256=saved.sha256,
                errors=tuple(errors),
                in_force=bool(saved.sha256) and forced.get(str(saved.path)) == saved.sha256,
                saved_at=version.at if version else None,
                saved_by=version.saved_by if version else None,
                current=index == work.current and len(work.saved) > 1,
                problem=saved.problem,
            )
        )
    return rows


def draft_state(
    work: Drafts,
    result: DraftCheck | None,
    changes: tuple[int, int],
    saved_here: str | None,
    forced: dict[str, str],
) -> DraftState:
    """The draft in the editor: changed lines, its last check, the version saved from here."""
    saved = work.file
    saved_in_force = saved_here is not None and forced.get(str(saved.path)) == saved_here
    added, removed = changes
    return DraftState(
        name=saved.name,
        new_file=saved.text is None,
        modified=work.modified(work.current),
        added=added,
        removed=removed,
        checked=result is not None,
        errors=result.errors if result else (),
        saved=saved_here,
        saved_in_force=saved_in_force,
        tests=result.tests if result else 0,
        failing=len(result.failing) if result else 0,
    )


async def ask_service(account: Any) -> ServiceRead:
    """The service's active policy, or why it could not be read (its words made inert)."""
    try:
        answer = await account.policies()
    except MarketError as exc:
        return ServiceRead(problem=inert_line(exc.message, 200))
    return ServiceRead(answer)


def service_shown(
    answer: Any, problem: str | None, compiled: Any
) -> tuple[tuple[str, bool] | None, DriftShown]:
    """The service's answer (None: `problem` says why it could not be read) against the local
    policy in force (`compiled`, None when there is none): the status line's flag and the drift
    view."""
    if answer is None:
        return ("cannot be read (c shows why)", False), DriftShown(
            note=f"The service's active policy could not be read: {problem}",
            tone="high",
        )
    drift = compare(compiled.loaded, answer) if compiled is not None else None
    flag: tuple[str, bool] | None
    if drift is None:
        flag = None
    elif drift.in_sync:
        flag = ("in sync", True)
    else:
        flag = ("DRIFT (c shows it)", False)
    return flag, DriftShown(
        drift=drift,
        local=compiled.loaded.rules_json() if compiled is not None else None,
        service=answer.policy if answer.valid else None,
        service_source=answer.source,
    )
