"""The ledger: one SQLite file (WAL) written by one broker at a time, or a PostgreSQL database
(`engine`) that several brokers may share (`shared`).

Every change of a request's state is in one transaction together with its event, so the event log
and the tables never disagree; the transaction seals the rows it wrote into its last event and
anchors the chain's head outside the ledger (`audit_chain`), so `audit verify` can tell them apart
when someone else edits either. The broker's concurrent requests share transactions
(`group_commit`; `transactions`). A decision is committed before its execution row exists
(DESIGN.md invariant 1); an execution row is committed before the proxy is called, so a crash
mid-call leaves evidence (invariant 3).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from svc_console.config.audit_key import NoAuditKey, audit_key, lost_key
from svc_console.core.buckets import Change
from svc_console.core.mandate import Mandate
from svc_console.core.models import Decision, Evidence, Outcome, SpendRequest
from svc_console.core.money import to_atomic
from svc_console.core.names import counted_as
from svc_console.core.states import FINAL, State, check_transition
from svc_console.ledger import (
    audit_chain,
    budgets,
    endpoint_records,
    engine,
    event_data,
    group_commit,
    rows,
    shared,
)
from svc_console.ledger.audit_chain import GENESIS
from svc_console.ledger.checkpoints import Checkpointer
from svc_console.ledger.request_reads import JSON_COLUMNS, RequestReads
from svc_console.ledger.schema import migrate
from svc_console.ledger.transactions import Transactions

# States in which an approval's budget reservation is given back: nothing was or will be paid on it.
_RELEASES = frozenset({State.failed, State.denied, State.expired, State.cancelled, State.repriced})


# Raised when another broker holds a SQLite ledger (`engine.WriterLock`); importable from here.
LedgerLocked = engine.LedgerLocked
LedgerRefused = engine.LedgerRefused


class PastLifetime(Exception):
    """An operator's decision that came after the request's lifetime ran out."""


class BudgetSpent(Exception):
    """An approval another broker's reservation left no room for (`decide`'s `recheck`)."""


_dumps = audit_chain.dumps


class Ledger(Transactions, RequestReads):
    def __init__(
        self,
        path: Path,
        *,
        exclusive: bool = True,
        key: bytes | None = None,
        url: str | None = None,
    ):
        """Open (creating if needed) the ledger: the SQLite file at `path`, or with `url` the
        PostgreSQL database it names (`engine`; the key and head files stay beside `path`).
        `exclusive` opens it for a broker: the home's lock, so two brokers never interleave
        decisions and executions on one file; on PostgreSQL, also a place among the brokers
        that share the database, one a home (`shared`). `key` is the audit chain's (default:
        the ledger's own, from `config.audit_key`, made the first time)."""
        self.path = path
        self.url = url or None
        self._lock: engine.WriterLock | None = None
        self._catalogue: Any = None  # beside a PostgreSQL ledger: the local cache's reader
        # Told of the budget totals' changes once their transaction commits (policy's totals).
        self.budget_listeners: list[Callable[[list[Change]], None]] = []
        self._budget_changes: list[Change] = []
        # Told of the requests that reached a final state, (agent, state, at), once committed
        # (the circuit breaker follows them).
        self.final_listeners: list[Callable[[list[tuple[str, State, float]]], None]] = []
        self._finals: list[tuple[str, State, float]] = []
        # Told how long each commit took, in seconds (`serve --metrics`).
        self.commit_listeners: list[Callable[[float], None]] = []
        self._group: group_commit.Group | None = None  # the shared transaction, while open
        self._notify: set[str] = set()  # requests the open transaction changed
        # Among the brokers of a shared PostgreSQL ledger (`shared`); None on SQLite, and for
        # a reader.
        self.member: shared.Member | None = None
        if exclusive:  # one broker a console home (on PostgreSQL, a home per broker)
            self._lock = engine.WriterLock(path)
        try:
            self.db = engine.open_database(path, self.url)
            if key is None:  # before any migration: a ledger refused is left as it was found
                key = self._audit_key(exclusive)
            migrate(self.db)
            if exclusive and self.url is not None:
                self.member = shared.Member(self.db.conn)
        except BaseException:
            self.close()
            raise
        for suffix in ("-wal", "-shm") if self.url is None else ():
            sidecar = Path(f"{path}{suffix}")
            if sidecar.exists():
                sidecar.chmod(0o600)
        if exclusive and audit_chain.is_plain(self.db.conn):
            with self.db.atomic():  # a ledger from before the chain was keyed
                audit_chain.rekey(self.db.conn, key)
        last = self.db.execute("SELECT seq, hash FROM events ORDER BY seq DESC LIMIT 1").fetchone()
        self._chain = audit_chain.Chain(key, (last[0], last[1]) if last else (0, GENESIS))
        if self.member is not None and last is not None:
            audit_chain.check_key(self.db.conn, key, engine.url_shown(self.url or ""))
        self._head = audit_chain.HeadFile(path) if exclusive else None
        self._anchor()
        self._checkpoints: Checkpointer | None = None
        if exclusive and self.url is None:  # the writer of a SQLite file (`checkpoints`)
            self._checkpoints = Checkpointer(path, self.db.conn)
            self.commit_listeners.append(self._checkpoints.committed)

    def _audit_key(self, exclusive: bool) -> bytes:
        """The chain's key. Made only for a ledger with no keyed event: one that has events and
        no key is refused (LedgerRefused), never given a new key. A reader links no event: it
        makes no key where none is yet."""
        try:
            return audit_key(self.path, create=False)
        except NoAuditKey:
            if not exclusive:
                return b""
        events = 0
        if self.db.has_table("events"):
            events = self.db.execute("SELECT max(seq) FROM events").fetchone()[0] or 0
        if events and not audit_chain.is_plain(self.db.conn):
            shown = engine.url_shown(self.url) if self.url else str(self.path)
            raise LedgerRefused(lost_key(self.path, events, shown))
        return audit_key(self.path)

    def close(self) -> None:
        if getattr(self, "_group", None) is not None and getattr(self, "db", None) is not None:
            self.commit_group()
        if getattr(self, "_checkpoints", None) is not None:
            self._checkpoints.close()
            self._checkpoints = None
        if getattr(self, "_head", None) is not None:
            self._head.close()
            self._head = None
        if getattr(self, "db", None) is not None:
            self.db.close()
            self.db = None  # type: ignore[assignment]
        if self._lock is not None:
            self._lock.release()
            self._lock = None
        if getattr(self, "_catalogue", None) is not None:
            self._catalogue.close()
            self._catalogue = None

    @property
    def catalogue(self) -> Any:
        """What the catalogue cache is read through: the ledger's own connection on SQLite; beside
        a PostgreSQL ledger, a reader of the local file the cache is kept in (FTS5's trigrams
        are SQLite's; `catalogue_store.open_writer`), None before a first sync made it."""
        if self.url is None:
            return self.db.conn
        if self._catalogue is None and self.path.exists():
            from svc_console.ledger.readers import open_reader

            self._catalogue = open_reader(self.path)
        return self._catalogue

    def record_refusal(
        self, request_id: str | None, reason: str, evidence: Evidence, at: float | None = None
    ) -> None:
        """Keep a refused attempt to decide a request (by the agent itself, or without the
        operator passphrase) in the audit chain, with who tried."""
        data = {"reason": reason, "evidence": evidence.model_dump(mode="json")}
        with self.transaction():
            self.event(request_id, "decision_refused", data, time.time() if at is None else at)

    def events(self, request_id: str) -> list[dict[str, Any]]:
        cursor = self.db.execute(
            "SELECT * FROM events WHERE request_id = ? ORDER BY seq", [request_id]
        )
        return rows.dicts(cursor)

    # -- requests -----------------------------------------------------------------------------

    def insert_request(self, request: SpendRequest) -> None:
        row = request.model_dump(mode="json", exclude={"decision", "outcome", "max_usdc"})
        row["max_usdc"] = to_atomic(request.max_usdc) if request.max_usdc is not None else None
        row["agent_verified"] = int(request.agent_verified)
        row["provider"] = request.endpoint.provider if request.endpoint else None
        row["estimate_usdc"] = rows.estimate_units(request.estimate)
        for column in JSON_COLUMNS:
            if row.get(column) is not None:
                row[column] = _dumps(row[column])
        with self.transaction():
            if self._group is not None:
                self._group.requests.add(request.id)
            if self.member is not None:
                row["broker"] = self.member.key
            rows.insert(self.db, "requests", row)
            self._notify.add(request.id)
            self.seal("requests", request.id)
            self.event(
                request.id, "received", event_data.received(request, row), request.created_at
            )

    def transition(
        self, request_id: str, target: State, *, at: float | None = None, **fields: Any
    ) -> None:
        """Move a request to `target`, checking the state machine, with any fields it learned
        (endpoint, estimate, risk, verdict, reason, expires_at, funding_url) in one transaction."""
        at = time.time() if at is None else at
        with self.transaction():
            current = self._state(request_id)
            check_transition(current, target)
            self._write_state(request_id, target, at, fields)

    def _write_state(
        self,
        request_id: str,
        target: State,
        at: float,
        fields: dict,
        event: dict[str, Any] | None = None,
    ) -> None:
        updates: dict[str, Any] = {"state": str(target), "updated_at": at}
        for key, value in fields.items():
            if key == "endpoint" and value is not None:
                value = endpoint_records.text_of(value)
            elif key in JSON_COLUMNS:
                value = _dumps(rows.jsonable(value)) if value is not None else None
            updates[key] = value
        if fields.get("endpoint") is not None:
            updates["provider"] = fields["endpoint"].provider
        if "estimate" in fields:
            updates["estimate_usdc"] = rows.estimate_units(fields["estimate"])
        rows.update(self.db, "requests", request_id, updates)
        self._notify.add(request_id)
        self.seal("requests", request_id)
        if self._group is not None:
            self._group.requests.add(request_id)
        self.event(request_id, str(target), {"reason": fields.get("reason"), **(event or {})}, at)
        if target in FINAL and self.final_listeners:
            agent, verified = self.db.execute(
                "SELECT agent, agent_verified FROM requests WHERE id = ?", [request_id]
            ).fetchone()
            # As the brakes count it (core/names.py): unverified agents are one.
            self._finals.append((counted_as(agent, bool(verified)), target, at))
        if target in _RELEASES:
            self._counted(budgets.release(self.db, request_id, at))

    def _counted(self, change: Change | None) -> None:
        """A change of the budget totals, for the listeners once committed; the grants it
        counts for are sealed with it."""
        if change is None:
            return
        self._budget_changes.append(change)
        if self.member is not None:
            self.member.record(self.db.conn, change, time.time())
        for grant in budgets.grants_in(change[0]):
            self.seal("grants", grant)

    def _state(self, request_id: str) -> State:
        row = self.db.execute("SELECT state FROM requests WHERE id = ?", [request_id]).fetchone()
        if row is None:
            raise KeyError(request_id)
        return State(row[0])

    def orphans(self) -> list[SpendRequest]:
        """Unfinished requests no running broker answers for, now this one's to finish
        (recovery). With one broker, every unfinished request: a previous process left it. On
        a shared ledger, those whose broker died (or that no broker ever answered for), adopted
        under the writers' lock, so no two brokers adopt one."""
        if self.member is None:
            return self.unfinished()
        unfinished = [str(s) for s in set(State) - FINAL - {State.pending}]
        query = (
            f"SELECT id, broker FROM requests WHERE state IN ({','.join('?' * len(unfinished))})"
        )
        answering = {broker for _, broker in self.db.execute(query, unfinished)}
        if answering <= shared.alive(self.db.conn):
            return []  # the common case, read without the lock
        adopted = []
        with self.transaction():
            alive, now = shared.alive(self.db.conn), time.time()
            for request_id, broker in self.db.execute(query, unfinished).fetchall():
                if broker in alive:
                    continue
                rows.update(self.db, "requests", request_id, {"broker": self.member.key})
                self.seal("requests", request_id)
                self._notify.add(request_id)
                data = {"from_broker": broker, "broker": self.member.key}
                self.event(request_id, "adopted", data, now)
                adopted.append(request_id)
        return [request for request_id in adopted if (request := self.get(request_id))]

    # -- decisions and executions -------------------------------------------------------------

    def decide(
        self,
        request_id: str,
        decision: Decision,
        target: State,
        *,
        budget_rule: str | None = None,
        recheck: Callable[[], str | None] | None = None,
        mandate: Mandate | None = None,
        **fields: Any,
    ) -> int:
        """Commit a decision and the state it leads to; returns the decision's id. Committed
        before this returns, so no execution can start on an unrecorded decision. An approval
        reserves its ceiling in the budget totals in the same transaction (and in the totals of
        `budget_rule`, the auto-approve rule that made it), and keeps its `mandate` with the
        decision, its digest in the decision's event. On a shared ledger, `recheck` says why
        the approval no longer fits, with the other brokers' reservations now counted
        (BudgetSpent; nothing written)."""
        with self.transaction():
            check_transition(self._state(request_id), target)
            if recheck is not None and self.member is not None:
                spent = recheck()
                if spent is not None:
                    raise BudgetSpent(spent)
            if target in (State.approved, State.denied):
                # In the decision's own transaction: the expiry sweep may not have run yet.
                row = self.db.execute(
                    "SELECT expires_at FROM requests WHERE id = ?", [request_id]
                ).fetchone()
                if row[0] is not None and decision.at >= row[0]:
                    raise PastLifetime(request_id)
            decision_id = rows.insert(
                self.db,
                "decisions",
                {
                    "request_id": request_id,
                    "approved": int(decision.approved),
                    "by": decision.by,
                    "at": decision.at,
                    "ceiling_usdc": to_atomic(decision.ceiling_usdc)
                    if decision.ceiling_usdc is not None
                    else None,
                    "note": decision.note,
                    "evidence": _dumps(decision.evidence.model_dump(mode="json"))
                    if decision.evidence is not None
                    else None,
                    "mandate": mandate.canonical() if mandate is not None else None,
                },
            )
            reason = None if decision.approved else decision.note
            self.seal("decisions", decision_id)
            self._write_state(request_id, target, decision.at, {"reason": reason, **fields})
            data = {"decision_id": decision_id, "budget_rule": budget_rule}
            if mandate is not None:
                data["mandate_sha256"] = mandate.digest
            self.event(
                request_id, "decision", {**event_data.decision(decision), **data}, decision.at
            )
            if decision.approved and decision.ceiling_usdc is not None:
                amount = to_atomic(decision.ceiling_usdc)
                self._counted(
                    budgets.reserve(
                        self.db, request_id, int(decision_id), amount, decision.at, budget_rule
                    )
                )
        return int(decision_id)

    def start_execution(
        self, request_id: str, decision_id: int, attempt: int, idempotency_key: str, at: float
    ) -> int:
        """Record an attempt as in flight and move the request to `executing`, in one commit
        (a group's, in a task that joined one: await `committed()` before paying). The group
        holding this request's decision is committed first: never in the same transaction."""
        if self._group is not None and request_id in self._group.requests:
            self.commit_group()
        with self.transaction():
            check_transition(self._state(request_id), State.executing)
            execution_id = rows.insert(
                self.db,
                "executions",
                {
                    "request_id": request_id,
                    "decision_id": decision_id,
                    "attempt": attempt,
                    "idempotency_key": idempotency_key,
                    "started_at": at,
                    "status": "in_flight",
                },
            )
            self.seal("executions", execution_id)
            started = {"execution_id": execution_id, "decision_id": decision_id, "attempt": attempt}
            fields: dict[str, Any] = {"reason": None}
            if self.member is not None:  # this broker answers for the call from now on
                fields["broker"] = self.member.key
            self._write_state(request_id, State.executing, at, fields, started)
        return int(execution_id)

    def finish_execution(
        self,
        execution_id: int,
        target: State,
        *,
        at: float,
        outcome: Outcome | None = None,
        error: str | None = None,
        **fields: Any,
    ) -> None:
        with self.transaction():
            found = self.db.execute(
                "SELECT request_id FROM executions WHERE id = ?", [execution_id]
            ).fetchone()
            if found is None:
                raise KeyError(f"execution {execution_id}")
            request_id = found[0]
            check_transition(self._state(request_id), target)
            rows.update(
                self.db,
                "executions",
                execution_id,
                {
                    "finished_at": at,
                    "status": str(target),
                    "charged_usdc": to_atomic(outcome.charged_usdc) if outcome else None,
                    "chain": outcome.chain if outcome else None,
                    "outcome": outcome.model_dump_json() if outcome else None,
                    "error": error,
                },
            )
            self.seal("executions", execution_id)
            finished = {
                "execution_id": execution_id,
                "charged_usdc": str(outcome.charged_usdc) if outcome else None,
                "chain": outcome.chain if outcome else None,
            }
            self._write_state(request_id, target, at, {"reason": error, **fields}, finished)
            if target == State.succeeded and outcome is not None:
                charged = to_atomic(outcome.charged_usdc)
                self._counted(budgets.settle(self.db, request_id, charged, at))
