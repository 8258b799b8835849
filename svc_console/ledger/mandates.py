"""The mandates kept with the decisions (core/mandate.py): read back for the executor and the
command line, and a copy checked against the audit chain.

A mandate is stored as its canonical JSON in the decision's row (sealed with it) and its digest
in the decision's event, so `check` trusts neither the copy nor the row: it verifies the chain
(`audit.verify`), then looks for the copy's digest in the request's decision events.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from svc_console.core.mandate import Mandate
from svc_console.ledger import audit, engine


def of_decision(db: Any, decision_id: int) -> Mandate | None:
    """The mandate an approval produced; None for a denial, or a decision made before
    mandates were."""
    row = db.execute("SELECT mandate FROM decisions WHERE id = ?", [decision_id]).fetchone()
    return Mandate.parse(row[0]) if row is not None and row[0] else None


def latest(db: Any, request_id: str) -> Mandate | None:
    """The mandate of the request's latest approval that made one (a request re-priced since
    keeps it until approved again)."""
    row = db.execute(
        "SELECT mandate FROM decisions WHERE request_id = ? AND mandate IS NOT NULL"
        " ORDER BY id DESC LIMIT 1",
        [request_id],
    ).fetchone()
    return Mandate.parse(row[0]) if row is not None else None


def sealed(db: Any, request_id: str) -> list[tuple[int, str]]:
    """(event seq, mandate digest) of each approval of the request the audit chain holds."""
    found = []
    for seq, data in db.execute(
        "SELECT seq, data FROM events WHERE request_id = ? AND type = 'decision' ORDER BY seq",
        [request_id],
    ).fetchall():
        digest = json.loads(data).get("mandate_sha256")
        if isinstance(digest, str):
            found.append((seq, digest))
    return found


@dataclass(frozen=True)
class Checked:
    """How a copy of a mandate stands against the ledger: `seq`, the decision event that holds
    its digest (None: none does); `problem`, why it does not hold, in one line."""

    digest: str
    events: int  # the events the chain verified
    seq: int | None = None
    problem: str | None = None


def check(mandate: Mandate, path: Path, url: str | None = None) -> Checked:
    """Check `mandate` against the ledger at `path` (or `url`): its chain first, then the
    request's approvals. Raises `audit.AuditError` when there is no ledger to check against."""
    digest = mandate.digest
    report = audit.verify(path, url=url)
    if report.broken is not None or report.problems:
        first = report.broken or report.problems[0]
        at = f"event {first.seq}: " if first.seq else ""
        return Checked(
            digest,
            report.verified,
            problem=f"the ledger's audit chain does not verify ({at}{first.why}): no mandate can"
            " be checked against it",
        )
    conn = audit.open_read_only(path, url)
    try:
        approvals = sealed(conn, mandate.request_id)
    except engine.errors() as exc:
        raise audit.AuditError(f"cannot read the ledger: {exc}") from None
    finally:
        conn.close()
    for seq, sealed_digest in approvals:
        if sealed_digest == digest:
            return Checked(digest, report.verified, seq=seq)
    if not approvals:
        problem = f"no approval of {mandate.request_id} with a mandate is in the audit chain"
    else:
        seq, sealed_digest = approvals[-1]
        problem = (
            f"this is not the mandate approved for {mandate.request_id}: its sha256 is"
            f" {digest[:16]}…, the approval's (event {seq}) is {sealed_digest[:16]}…; the copy"
            " was edited"
        )
    return Checked(digest, report.verified, problem=problem)
