"""The ledger's transactions: each write's own, or one shared by the writes of a turn of the
event loop (`group_commit`), and on a ledger several brokers share, serialized among them
(`shared`).

A transaction links its events into the chain and seals the rows it wrote just before it
commits, anchors the chain's head after, and then tells the listeners of the budget totals'
changes and of the requests that reached a final state.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Iterator
from typing import Any

from svc_console.core.buckets import Change
from svc_console.core.states import State
from svc_console.ledger import audit_chain, engine, group_commit, shared


class Transactions:
    """The transaction half of `store.Ledger` (which sets these attributes up)."""

    db: engine.Database
    member: shared.Member | None
    budget_listeners: list[Callable[[list[Change]], None]]
    final_listeners: list[Callable[[list[tuple[str, State, float]]], None]]
    commit_listeners: list[Callable[[float], None]]
    _budget_changes: list[Change]
    _finals: list[tuple[str, State, float]]
    _group: group_commit.Group | None
    _notify: set[str]
    _chain: audit_chain.Chain
    _head: audit_chain.HeadFile | None

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """One transaction: its events are linked and its rows sealed just before it commits,
        the head is anchored after, and the budget changes it made reach the listeners then.
        In a task that joined the group commit (`group_commit.joined`), a write of the shared
        transaction instead, durable once `committed()` returns."""
        if group_commit.joining():
            with self._group_write():
                yield
            return
        with self._own_transaction():
            yield

    @contextlib.contextmanager
    def _own_transaction(self) -> Iterator[None]:
        self.commit_group()  # what was written before this is committed before it
        self._budget_changes, self._finals = [], []
        self._chain.begin()
        with self.db.atomic():
            self._begun()
            yield
            sealing = time.perf_counter()
            head = self._seal()
        self._committed_in(sealing)
        if head is not None:
            self._chain.took(head)
            self._anchor()
        self._tell_listeners()

    def _tell_listeners(self) -> list[Change]:
        changes, self._budget_changes = self._budget_changes, []
        finals, self._finals = self._finals, []
        for listener in self.budget_listeners if changes else ():
            listener(changes)
        for listener in self.final_listeners if finals else ():
            listener(finals)
        return changes

    # -- group commit (group_commit.py) -------------------------------------------------------

    @contextlib.contextmanager
    def _group_write(self) -> Iterator[None]:
        """One write of the group transaction, opened if none is: in a savepoint of its own,
        so a write that fails is taken back alone (the write that opens the transaction needs
        none: failing, it takes back the transaction, which holds nothing else). Its budget
        changes reach the listeners as the write ends, as a transaction's would: the totals the
        policy reads next include them, so requests judged in one turn cannot pass a cap
        together."""
        group = self._group
        opens = group is None
        if group is None:
            loop = asyncio.get_running_loop()
            self._budget_changes, self._finals = [], []
            self._chain.begin()
            self.db.conn.execute("BEGIN")
            self._begun()
            group = self._group = group_commit.Group(loop.create_future())
            loop.call_soon(self.commit_group)  # at the end of this turn of the loop
        mark = self._chain.mark()
        if not opens:
            self.db.conn.execute("SAVEPOINT group_write")
        try:
            yield
        except BaseException as exc:
            self._budget_changes, self._finals = [], []
            if opens:
                self._group = None
                self._abandon(group, exc)
            else:
                if self.db.conn.in_transaction:
                    self.db.conn.execute("ROLLBACK TO group_write")
                    self.db.conn.execute("RELEASE group_write")
                self._chain.rewind(mark)
            raise
        if not opens:
            self.db.conn.execute("RELEASE group_write")
        group.writes += 1
        group.changes += self._tell_listeners()

    def commit_group(self) -> None:
        """Commit the group transaction, if one is open, and wake its writers. If it cannot
        be committed, nothing of it is (`_abandon`)."""
        group, self._group = self._group, None
        if group is None:
            return
        try:
            sealing = time.perf_counter()
            head = self._seal()
            self.db.conn.execute("COMMIT")
        except BaseException as exc:
            self._abandon(group, exc)
            return
        self._committed_in(sealing)
        if head is not None:
            self._chain.took(head)
            self._anchor()
        group.committed()

    def _committed_in(self, sealing: float) -> None:
        """Tell the commit listeners (`/metrics`) how long a commit took, from the seal of its
        events to the database's answer."""
        if self.commit_listeners:
            took = time.perf_counter() - sealing
            for listener in self.commit_listeners:
                listener(took)

    def _abandon(self, group: group_commit.Group, exc: BaseException) -> None:
        """Roll the group transaction back: the budget changes its writes told the listeners
        are given back, and its writers' `committed()` raises."""
        self.db.rollback()
        self._chain.begin()
        given_back = [(buckets, slot, -delta) for buckets, slot, delta in group.changes]
        for listener in self.budget_listeners if given_back else ():
            listener(given_back)
        group.failed(exc)

    def _begun(self) -> None:
        """Just after BEGIN. On a shared ledger: the writers' lock, the chain's head as the
        other brokers left it, and their budget changes told to the listeners (`shared`)."""
        self._notify = set()
        if self.member is None:
            return
        head, changes = self.member.begin(self.db.conn)
        if head is not None:
            self._chain.took(head)
        for listener in self.budget_listeners if changes else ():
            listener(changes)

    def _seal(self) -> tuple[int, str] | None:
        """Just before COMMIT: the chain's links, and the other brokers told what changed."""
        if self.member is not None and self._notify:
            self.member.notify(self.db.conn, sorted(self._notify))
        return self._chain.seal(self.db.conn)

    def follow_others(self, now: float) -> None:
        """On a shared ledger, between transactions: apply the budget changes the other
        brokers committed since the last, and forget the changes every broker has had."""
        if self.member is None or self._group is not None:
            return  # an open transaction caught up when it began, and holds the lock
        changes = self.member.others_changes(self.db.conn)
        for listener in self.budget_listeners if changes else ():
            listener(changes)
        self.member.forget_changes(self.db.conn, now - shared.CHANGES_KEPT_S)

    def totals_read(self, read: Callable[[Any], Any]) -> Any:
        """`read(db)` of the budget totals in one snapshot; on a shared ledger, the changes it
        holds are the last the other brokers' are applied after."""
        if self.member is None:
            return read(self.db)
        engine.begin_snapshot(self.db.conn)
        try:
            self.member.totals_watermark(self.db.conn)
            return read(self.db)
        finally:
            self.db.conn.commit()

    async def committed(self) -> None:
        """Once every write made so far is committed (at once when none is waiting). Awaited
        right after the writes, with no await between, so the group awaited is the one holding
        them: a group that failed raises here, to its own writers."""
        if self._group is not None:
            await asyncio.shield(self._group.done)

    # -- events -------------------------------------------------------------------------------

    def event(self, request_id: str | None, kind: str, data: dict[str, Any], at: float) -> None:
        """Add one event to the chain; callers hold the transaction."""
        self._chain.event(request_id, kind, data, at)

    def seal(self, table: str, key: Any) -> None:
        """Seal this row (of `audit_chain.SEALED`) as it stands when the transaction commits."""
        self._chain.touch(table, key)

    def _anchor(self) -> None:
        if self._head is not None:  # the writer's: a reader never moves the head
            self._head.write(self._chain.seq, self._chain.hash)
