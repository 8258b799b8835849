"""Group commit: the ledger writes of concurrent requests share one transaction.

A commit costs more than the writes of one request's step (the chain's seal of the rows written,
the head file, SQLite's own commit). When many agents submit at once, many requests reach the same
step in one turn of the event loop: their writes are made one after another, each in a savepoint
of one open transaction, and that transaction is committed once, at the end of the turn.

Only code that asks for it joins (`joined()`, a context variable: per task, so a task that did not
ask is never made to wait or share). A write that joins is visible at once on the ledger's own
connection, and the caller learns when it is durable by awaiting `Ledger.committed()`; one that
fails is rolled back to its savepoint alone. A transaction of its own (any write that did not
join) commits the open group first. Executions join too, but an execution's start commits first
the group that holds its own request's last writes (its decision), so the decision is committed
before the execution row exists, and the executor awaits the commit of that row before it calls
the payer: nothing is paid on a decision or an execution that is not committed.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field

_joining: ContextVar[bool] = ContextVar("ledger_group_commit", default=False)


@contextlib.contextmanager
def joined() -> Iterator[None]:
    """The ledger writes of this task, until the block ends, join the group transaction."""
    token = _joining.set(True)
    try:
        yield
    finally:
        _joining.reset(token)


def joining() -> bool:
    return _joining.get()


@dataclass
class Group:
    """One shared transaction while it is open: how many writes it holds, and the future its
    writers await, set once it is committed (or failed)."""

    done: asyncio.Future[None]
    writes: int = 0
    requests: set[str] = field(default_factory=set)  # whose rows it wrote
    # Budget changes already told to the listeners: given back if the group fails to commit.
    changes: list = field(default_factory=list)

    def committed(self) -> None:
        if not self.done.done():
            self.done.set_result(None)

    def failed(self, exc: BaseException) -> None:
        if not self.done.done():
            self.done.set_exception(exc)
            # A group whose writers stopped waiting must not warn that nobody read its failure.
            self.done.exception()
