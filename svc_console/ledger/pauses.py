"""Agents the circuit breaker paused, and the operators' resumes: decisions in the audit chain.

A pause is a row opened by the policy (`paused_by`: the rule) and closed by an operator's resume
(`resumed_by` and the resume's evidence); the agents paused now are the open rows. Each pause and
each resume is an event that seals its row, so a pause deleted or a resume forged behind the
console's back shows in `audit verify`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from svc_console.core.models import Evidence
from svc_console.core.names import counted_as
from svc_console.ledger import rows
from svc_console.ledger.store import Ledger


@dataclass(frozen=True)
class Pause:
    agent: str
    since: float
    reason: str
    by: str


class NotPaused(Exception):
    pass


def pause(ledger: Ledger, agent: str, reason: str, by: str, at: float) -> bool:
    """Pause `agent`; False when it already is."""
    with ledger.transaction():
        if _open(ledger, agent) is not None:
            return False
        row = {"agent": agent, "paused_at": at, "reason": reason, "paused_by": by}
        pause_id = rows.insert(ledger.db, "agent_pauses", row)
        ledger.seal("agent_pauses", pause_id)
        ledger.event(None, "agent_paused", {"id": pause_id, **row}, at)
    return True


def resume(ledger: Ledger, agent: str, evidence: Evidence, at: float) -> Pause:
    """Close the agent's pause with who resumed it; the pause it closed. Raises NotPaused."""
    with ledger.transaction():
        found = _open(ledger, agent)
        if found is None:
            raise NotPaused(agent)
        pause_id, closed = found
        by = evidence.channel
        facts = {"resumed_at": at, "resumed_by": by}
        shown = evidence.model_dump(mode="json")
        rows.update(ledger.db, "agent_pauses", pause_id, {**facts, "evidence": json.dumps(shown)})
        ledger.seal("agent_pauses", pause_id)
        ledger.event(
            None, "agent_resumed", {"id": pause_id, "agent": agent, **facts, "evidence": shown}, at
        )
    return closed


def paused(ledger: Ledger) -> list[Pause]:
    """The agents paused now, longest paused first."""
    rows = ledger.db.execute(
        "SELECT agent, paused_at, reason, paused_by FROM agent_pauses"
        " WHERE resumed_at IS NULL ORDER BY paused_at, id"
    ).fetchall()
    return [Pause(*row) for row in rows]


def _open(ledger: Ledger, agent: str) -> tuple[int, Pause] | None:
    row = ledger.db.execute(
        "SELECT id, agent, paused_at, reason, paused_by FROM agent_pauses"
        " WHERE agent = ? AND resumed_at IS NULL",
        [agent],
    ).fetchone()
    return (row[0], Pause(*row[1:])) if row else None


# -- what the brakes count, read back after a restart ------------------------------------------

RESUMED = "resumed"  # an outcome row that is an operator's resume


def recent_requests(ledger: Ledger, since: float) -> Iterator[tuple]:
    """(id, created_at, agent, agent_verified, kind, provider, endpoint, inputs, denied, the
    endpoint's input schema) of the requests that reached the policy since `since`, oldest
    first."""
    cursor = ledger.db.execute(
        "SELECT id, created_at, agent, agent_verified, kind, provider,"
        " coalesce(json_extract(endpoint, '$.id'), endpoint_id, dataset_id), inputs,"
        " json_extract(verdict, '$.outcome') = 'deny', json_extract(endpoint, '$.inputs')"
        " FROM requests WHERE created_at > ? AND verdict IS NOT NULL ORDER BY created_at",
        [since],
    )
    for *row, verified, kind, provider, endpoint, inputs, denied, schema in cursor:
        yield (
            *row,
            bool(verified),
            kind,
            provider,
            endpoint,
            json.loads(inputs),
            bool(denied),
            json.loads(schema) if schema else None,
        )


def recent_outcomes(ledger: Ledger, since: float, states: Iterable[str]) -> Iterator[tuple]:
    """(agent, at, state) of the requests that ended in `states` since `since`, with the
    operators' resumes as state `resumed`, oldest first; the agent as the brakes count it (a
    pause is already so)."""
    names = sorted(states)
    marks = ",".join("?" * len(names))
    cursor = ledger.db.execute(
        f"SELECT agent, agent_verified, updated_at, state FROM requests"
        f" WHERE updated_at > ? AND state IN ({marks})"
        f" UNION ALL SELECT agent, 1, resumed_at, '{RESUMED}' FROM agent_pauses"
        " WHERE resumed_at > ? ORDER BY 3",
        [since, *names, since],
    )
    for agent, verified, at, state in cursor:
        yield (counted_as(agent, bool(verified)), at, state)
