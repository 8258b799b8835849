"""Past requests as a policy simulation replays them: oldest first, streamed from a cursor (never
the whole table in memory), as plain records rather than models, so a month of a large ledger
replays in seconds.

Only requests that reached policy are returned: they have an endpoint record and an estimate.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import sqlite_utils

from svc_console.ledger.readers import open_query_only, open_reader


@dataclass(frozen=True, slots=True)
class PastRequest:
    id: str
    agent: str
    agent_verified: bool
    kind: str
    endpoint_id: str | None
    dataset_id: str | None
    inputs: Any
    max_usdc: int | None  # atomic USDC
    state: str
    created_at: float
    endpoint: dict[str, Any]  # the endpoint record as stored (the marketplace's camelCase)
    estimate: dict[str, Any]
    verdict: dict[str, Any] | None
    approved: bool | None  # the latest decision, None when there is none
    decided_by: str | None
    ceiling: int | None  # atomic USDC approved
    # Atomic USDC actually charged: its usage rows' sum, as the usage screen counts it (a repeated
    # charge kept beside the first included); the execution's own figure until they are synced.
    charged: int | None


_QUERY = """
SELECT r.id, r.agent, r.agent_verified, r.kind, r.endpoint_id, r.dataset_id, r.inputs,
       r.max_usdc, r.state, r.created_at, r.endpoint, r.estimate, r.verdict, d.approved, d.by,
       d.ceiling_usdc,
       coalesce(
         (SELECT sum(u.amount) FROM usage u WHERE u.request_id = r.id),
         (SELECT e.charged_usdc FROM executions e
           WHERE e.request_id = r.id AND e.charged_usdc IS NOT NULL ORDER BY e.id DESC LIMIT 1))
FROM requests r
LEFT JOIN decisions d ON d.id = (SELECT max(id) FROM decisions WHERE request_id = r.id)
WHERE r.created_at >= ? AND r.created_at < ?
  AND r.endpoint IS NOT NULL AND r.estimate IS NOT NULL
ORDER BY r.created_at, r.id
"""


def past_requests(db: sqlite_utils.Database, since: float, until: float) -> Iterator[PastRequest]:
    for row in db.execute(_QUERY, [since, until]):
        (id_, agent, verified, kind, endpoint_id, dataset_id, inputs, max_usdc, state) = row[:9]
        created_at, endpoint, estimate, verdict, approved, by, ceiling, charged = row[9:]
        yield PastRequest(
            id=id_,
            agent=agent,
            agent_verified=bool(verified),
            kind=kind,
            endpoint_id=endpoint_id,
            dataset_id=dataset_id,
            inputs=json.loads(inputs),
            max_usdc=max_usdc,
            state=state,
            created_at=created_at,
            endpoint=json.loads(endpoint),
            estimate=json.loads(estimate),
            verdict=json.loads(verdict) if verdict else None,
            approved=None if approved is None else bool(approved),
            decided_by=by,
            ceiling=ceiling,
            charged=charged,
        )


@contextmanager
def replaying(
    path: Path, since: float, until: float, url: str | None = None
) -> Iterator[Iterator[PastRequest]]:
    """`past_requests` of the ledger file at `path` (with `url`, of that PostgreSQL ledger),
    streamed through a query-only connection of the calling thread's own (the broker keeps
    writing through its own); closed on leaving."""
    connection: Any = open_reader(path, url) if url else open_query_only(path)
    try:
        yield past_requests(connection if url else sqlite_utils.Database(connection), since, until)
    finally:
        connection.close()
