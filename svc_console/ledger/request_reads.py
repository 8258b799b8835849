"""Reading the ledger's requests, decisions and executions back: one request as a model, the pages
and counts the screens show, and what recovery and expiry look for. `Ledger` (store.py) writes;
these are its reads, kept apart so each file holds one idea.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from svc_console.core.models import Decision, SpendRequest
from svc_console.core.money import from_atomic
from svc_console.core.states import FINAL, State
from svc_console.ledger import endpoint_records
from svc_console.ledger.request_windows import RequestQuery

if TYPE_CHECKING:
    import sqlite3

    from svc_console.ledger.engine import Database

JSON_COLUMNS = ("inputs", "endpoint", "estimate", "risk", "verdict", "submitter")
# Decoded here; the endpoint column is read through endpoint_records, which keeps its records.
_DECODED = tuple(column for column in JSON_COLUMNS if column != "endpoint")
HYDRATED_MAX = 256  # models kept by the rows they were read from: a few pages of a screen
# A request with its latest decision and its last outcome, in one statement (on both engines):
# `get` runs several times on every request's path.
_DECISION = ("id", "approved", "by", "at", "ceiling_usdc", "note", "evidence")
_WHOLE = (
    "SELECT r.*, " + ", ".join(f"d.{column}" for column in _DECISION) + ","
    " (SELECT e.outcome FROM executions e WHERE e.request_id = r.id AND e.outcome IS NOT NULL"
    " ORDER BY e.id DESC LIMIT 1)"
    " FROM requests r LEFT JOIN decisions d"
    " ON d.id = (SELECT max(id) FROM decisions WHERE request_id = r.id)"
)


class RequestReads:
    """The reads of `Ledger`, over its connection (sqlite-utils' or a plain read-only one)."""

    db: Database | sqlite3.Connection

    def get(self, request_id: str) -> SpendRequest | None:
        row = self.db.execute(f"{_WHOLE} WHERE r.id = ?", [request_id]).fetchone()
        return None if row is None else self._hydrate(row)

    def cancellable_of(self, agent: str, states: Iterable[State]) -> list[str]:
        """The ids of a registered agent's requests in `states` (what its revocation cancels)."""
        names = [str(s) for s in states]
        marks = ",".join("?" * len(names))
        rows = self.db.execute(
            "SELECT id FROM requests WHERE agent = ? AND agent_verified = 1"
            f" AND state IN ({marks})",
            [agent, *names],
        ).fetchall()
        return [row[0] for row in rows]

    def latest_of(self, agent: str) -> SpendRequest | None:
        """The agent's most recent request."""
        row = self.db.execute(
            "SELECT id FROM requests WHERE agent = ? ORDER BY created_at DESC LIMIT 1", [agent]
        ).fetchone()
        return self.get(row[0]) if row else None

    def find_by_idempotency(self, agent: str, key: str) -> SpendRequest | None:
        row = self.db.execute(
            "SELECT id FROM requests WHERE agent = ? AND idempotency_key = ?", [agent, key]
        ).fetchone()
        return self.get(row[0]) if row else None

    def latest_decision(self, request_id: str) -> tuple[int, Decision] | None:
        row = self.db.execute(
            f"SELECT {', '.join(_DECISION)} FROM decisions"
            " WHERE request_id = ? ORDER BY id DESC LIMIT 1",
            [request_id],
        ).fetchone()
        return None if row is None else (row[0], _decision(row))

    def attempts(self, request_id: str, decision_id: int | None = None) -> int:
        """Execution attempts of a request, or of one of its approvals."""
        if decision_id is None:
            sql, args = "SELECT count(*) FROM executions WHERE request_id = ?", [request_id]
        else:
            sql = "SELECT count(*) FROM executions WHERE request_id = ? AND decision_id = ?"
            args = [request_id, decision_id]
        return self.db.execute(sql, args).fetchone()[0]

    # -- queries ------------------------------------------------------------------------------

    def in_states(
        self, states: Iterable[State], *, limit: int = 500, newest_first: bool = False
    ) -> list[SpendRequest]:
        names = [str(s) for s in states]
        marks = ",".join("?" * len(names))
        order = "DESC" if newest_first else "ASC"
        rows = self.db.execute(
            f"{_WHOLE} WHERE r.state IN ({marks}) ORDER BY r.created_at {order} LIMIT ?",
            [*names, limit],
        ).fetchall()
        return [self._hydrate(row) for row in rows]

    def count_in_states(self, states: Iterable[State]) -> int:
        names = [str(s) for s in states]
        marks = ",".join("?" * len(names))
        sql = f"SELECT count(*) FROM requests WHERE state IN ({marks})"
        return self.db.execute(sql, names).fetchone()[0]

    def window(
        self, query: RequestQuery, *, offset: int = 0, limit: int = 50
    ) -> list[SpendRequest]:
        """One page of the requests a query selects, in its order: what a screen shows.

        The ids are sorted first and the page's rows read after: sorting whole rows (inputs,
        endpoint records, skill.md) would copy every row of the queue into SQLite's sorter."""
        where, args = query.where()
        sql = f"SELECT id FROM requests WHERE {where} ORDER BY {query.order_by()} LIMIT ? OFFSET ?"
        ids = [row[0] for row in self.db.execute(sql, [*args, limit, max(0, offset)])]
        if not ids:
            return []
        marks = ",".join("?" * len(ids))
        rows = self.db.execute(f"{_WHOLE} WHERE r.id IN ({marks})", ids).fetchall()
        by_id = {row[0]: row for row in rows}
        return [self._hydrate(by_id[i]) for i in ids]

    def count(self, query: RequestQuery) -> int:
        """How many requests a query selects (the length of all its pages)."""
        where, args = query.where()
        return self.db.execute(f"SELECT count(*) FROM requests WHERE {where}", args).fetchone()[0]

    def position(self, query: RequestQuery, request_id: str) -> int | None:
        """Where a request stands in a query's order (0 first), or None when it selects it not.
        A scan of what the query selects: asked for one request now and then (the selection
        that moved off its page), never for a page; and not at all for a request no longer in
        the query's states (the usual case: decided, expired), which one indexed read tells."""
        state = self.db.execute("SELECT state FROM requests WHERE id = ?", [request_id]).fetchone()
        if state is None or state[0] not in {str(s) for s in query.states}:
            return None
        where, args = query.where()
        ranked = (
            f"SELECT id, row_number() OVER (ORDER BY {query.order_by()}) - 1 AS at"
            f" FROM requests WHERE {where}"
        )
        at = self.db.execute(
            f"SELECT at FROM ({ranked}) AS ranked WHERE id = ?", [*args, request_id]
        )
        found = at.fetchone()
        return None if found is None else found[0]

    def expired_ids(self, now: float) -> list[str]:
        rows = self.db.execute(
            "SELECT id FROM requests WHERE state = 'pending' AND expires_at <= ?", [now]
        ).fetchall()
        return [row[0] for row in rows]

    def next_expiry(self) -> float | None:
        row = self.db.execute(
            "SELECT min(expires_at) FROM requests WHERE state = 'pending'"
        ).fetchone()
        return row[0]

    def provider_used_before(self, provider: str, request_id: str) -> bool:
        row = self.db.execute(
            "SELECT 1 FROM requests WHERE provider = ? AND id != ? LIMIT 1", [provider, request_id]
        ).fetchone()
        return row is not None

    def unfinished(self) -> list[SpendRequest]:
        """Requests a previous process left mid-way (for recovery at start-up)."""
        live = set(State) - FINAL - {State.pending}
        return self.in_states(live, limit=1_000_000)

    def in_flight_execution(self, request_id: str) -> int | None:
        row = self.db.execute(
            "SELECT id FROM executions WHERE request_id = ? AND status = 'in_flight'",
            [request_id],
        ).fetchone()
        return row[0] if row else None

    # -- rows to models -----------------------------------------------------------------------

    def _columns(self, table: str) -> list[str]:
        cache = self.__dict__.setdefault("_column_cache", {})
        if table not in cache:
            # The names as a query returns them: one question for every connection this reads
            # through (the ledger's on either engine, or a plain read-only one).
            cursor = self.db.execute(f'SELECT * FROM "{table}" LIMIT 0')
            cache[table] = [column[0] for column in cursor.description]
        return cache[table]

    def _hydrate(self, values: Any) -> SpendRequest:
        """A row of `_WHOLE` as the model: the request's columns, its latest decision's, then
        its last outcome.

        A screen reads its page again after every decision and every burst of arrivals, and
        most rows come back as they were; decoding their JSON and validating them again was most
        of a page's read. The model of a row read before is kept, by the row's every value:
        a row that changed in any column is another key, so nothing can be served stale. Models
        are frozen, so callers can share one."""
        kept: dict[tuple, SpendRequest] = self.__dict__.setdefault("_hydrated", {})
        key = tuple(values)
        try:
            found = kept.get(key)
        except TypeError:  # a value that cannot be a key (none of the two engines gives one)
            return self._model(values)
        if found is None:
            if len(kept) >= HYDRATED_MAX:
                kept.clear()
            found = kept[key] = self._model(values)
        return found

    def _model(self, values: Any) -> SpendRequest:
        columns = self._columns("requests")
        count = len(columns)
        row = dict(zip(columns, values[:count], strict=True))
        for column in _DECODED:
            if row.get(column) is not None:
                row[column] = json.loads(row[column])
        if row["endpoint"] is not None:
            row["endpoint"] = endpoint_records.record_of(row["endpoint"])
        row.pop("provider", None)
        row.pop("estimate_usdc", None)  # the estimate's own copy, for sorting
        row.pop("broker", None)  # which broker answers for it (ledger/shared.py)
        if row["max_usdc"] is not None:
            row["max_usdc"] = from_atomic(row["max_usdc"])
        decided = values[count : count + len(_DECISION)]
        row["decision"] = _decision(decided) if decided[0] is not None else None
        outcome = values[-1]
        row["outcome"] = json.loads(outcome) if outcome is not None else None
        return SpendRequest.model_validate(row)


def _decision(row: Any) -> Decision:
    """A decision from its columns (`_DECISION`)."""
    _id, approved, by, at, ceiling, note, evidence = row
    return Decision(
        approved=bool(approved),
        by=by,
        at=at,
        ceiling_usdc=from_atomic(ceiling) if ceiling is not None else None,
        note=note,
        evidence=json.loads(evidence) if evidence is not None else None,
    )


class RequestView(RequestReads):
    """The same reads through a read-only connection of the caller's (`readers.open_reader`):
    what the console shows from the ledger before its broker has opened it for writing."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.db = conn
