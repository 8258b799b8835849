"""Group commit (ledger/group_commit.py): the writes of concurrent requests made in one turn of the
event loop share one transaction; a write that fails is taken back alone; an execution's start
commits every decision before it; a process killed before the group commits leaves none of it.
Real SQLite files, a second connection to see what is committed, a real killed process."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap
from decimal import Decimal

import pytest
from helpers import committed_rows, plain_request

from svc_console.core.models import Decision
from svc_console.core.states import IllegalTransition, State
from svc_console.ledger import Ledger, audit, group_commit


def _verify(ledger: Ledger) -> audit.AuditReport:
    return audit.verify(ledger.path, url=ledger.url)


def _sealing_events(ledger: Ledger) -> list[dict]:
    """The events that carry a transaction's seals: one per committed transaction."""
    rows = committed_rows(ledger, "SELECT data FROM events ORDER BY seq")
    return [data for (text,) in rows if "rows" in (data := json.loads(text))]


async def test_writes_of_one_turn_share_one_transaction(ledger):
    async def submit(n: int) -> None:
        with group_commit.joined():
            ledger.insert_request(plain_request(f"req_{n}"))
        await ledger.committed()

    tasks = [asyncio.create_task(submit(n)) for n in range(20)]
    await asyncio.sleep(0)  # one turn: every task has written, none is committed yet
    assert ledger.db.execute("SELECT count(*) FROM requests").fetchone()[0] == 20
    assert committed_rows(ledger, "SELECT count(*) FROM requests") == [(0,)]
    await asyncio.gather(*tasks)
    assert committed_rows(ledger, "SELECT count(*) FROM requests") == [(20,)]
    # One transaction: its last event seals the twenty rows, the events stay one per write.
    (seals,) = _sealing_events(ledger)
    assert {key for key in seals["rows"]} == {f"requests:req_{n}" for n in range(20)}
    assert committed_rows(ledger, "SELECT count(*) FROM events") == [(20,)]
    assert _verify(ledger).intact


async def test_a_failed_write_is_taken_back_alone(ledger):
    ledger.insert_request(plain_request("req_1"))
    ledger.insert_request(plain_request("req_2"))
    with group_commit.joined():
        ledger.transition("req_1", State.inspecting, at=2.0)
        with pytest.raises(IllegalTransition):  # received cannot be approved
            ledger.decide("req_2", Decision(approved=True, by="x", at=2.0), State.approved)
        ledger.transition("req_2", State.inspecting, at=2.0)
    await ledger.committed()
    states = dict(committed_rows(ledger, "SELECT id, state FROM requests"))
    assert states == {"req_1": "inspecting", "req_2": "inspecting"}
    assert committed_rows(ledger, "SELECT count(*) FROM decisions") == [(0,)]
    assert _verify(ledger).intact


async def test_a_failed_first_write_takes_back_its_transaction_and_the_next_write_opens_one(
    ledger,
):
    ledger.insert_request(plain_request("req_1"))
    with group_commit.joined():
        # The write that opens the group fails: it has no savepoint, the group holds nothing else.
        with pytest.raises(IllegalTransition):
            ledger.decide("req_1", Decision(approved=True, by="x", at=2.0), State.approved)
        assert not ledger.db.conn.in_transaction
        ledger.transition("req_1", State.inspecting, at=2.0)
    await ledger.committed()
    assert dict(committed_rows(ledger, "SELECT id, state FROM requests")) == {"req_1": "inspecting"}
    assert committed_rows(ledger, "SELECT count(*) FROM decisions") == [(0,)]
    assert _verify(ledger).intact


async def test_an_execution_starts_only_after_its_decision_is_committed(ledger):
    ledger.insert_request(plain_request("req_1"))
    ledger.transition("req_1", State.inspecting, at=2.0)
    decision = Decision(approved=True, by="policy: r", at=3.0, ceiling_usdc=Decimal("0.1"))
    with group_commit.joined():
        decision_id = ledger.decide("req_1", decision, State.auto_approved)
        assert committed_rows(ledger, "SELECT count(*) FROM decisions") == [(0,)]
        # The group holding the request's decision is committed before its execution row is
        # written, in a group of its own, committed by the end of the turn.
        ledger.start_execution("req_1", decision_id, 1, "req_1-1", at=4.0)
    assert committed_rows(ledger, "SELECT count(*) FROM decisions") == [(1,)]
    assert committed_rows(ledger, "SELECT state FROM requests") == [("auto_approved",)]
    await ledger.committed()
    assert committed_rows(ledger, "SELECT state FROM requests") == [("executing",)]
    decided, started = (
        committed_rows(ledger, f"SELECT max(seq) FROM events WHERE type = '{kind}'")[0][0]
        for kind in ("decision", "executing")
    )
    assert decided < started
    # Two transactions, sealed apart: the decision's, then the execution's.
    assert len(_sealing_events(ledger)) == 4  # insert, inspecting, decision, execution
    assert _verify(ledger).intact


async def test_budget_changes_of_a_group_reach_the_totals_as_each_write_ends(ledger):
    told: list[list] = []
    ledger.budget_listeners.append(told.append)
    for n in (1, 2):
        ledger.insert_request(plain_request(f"req_{n}"))
        ledger.transition(f"req_{n}", State.inspecting, at=2.0)
    decision = Decision(approved=True, by="policy: r", at=3.0, ceiling_usdc=Decimal("0.1"))
    with group_commit.joined():
        ledger.decide("req_1", decision, State.auto_approved)
        # The next request's verdict, in the same turn, reads totals that hold the first's
        # reservation: two requests cannot pass a cap together.
        assert len(told) == 1
        ledger.decide("req_2", decision, State.auto_approved)
        assert len(told) == 2
    await ledger.committed()
    assert committed_rows(ledger, "SELECT count(*) FROM budget_reservations") == [(2,)]


KILLED_MID_GROUP = """
import asyncio, os, sys
from decimal import Decimal
from pathlib import Path
from svc_console.core.models import Decision
from svc_console.core.states import State
from svc_console.ledger import Ledger, group_commit

async def main():
    ledger = Ledger(Path(sys.argv[1]), url=sys.argv[2] or None)
    decision = Decision(approved=True, by="policy: r", at=3.0, ceiling_usdc=Decimal("0.1"))
    with group_commit.joined():
        ledger.decide("req_1", decision, State.auto_approved)
    os._exit(9)  # killed before the end of the turn, when the group would have committed

asyncio.run(main())
"""


def test_a_process_killed_before_the_group_commits_leaves_none_of_it(tmp_path, ledger_url):
    path = tmp_path / "ledger.db"
    first = Ledger(path, url=ledger_url)
    first.insert_request(plain_request("req_1"))
    first.transition("req_1", State.inspecting, at=2.0)
    first.close()
    killed = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(KILLED_MID_GROUP), str(path), ledger_url or ""],
        timeout=60,
    )
    assert killed.returncode == 9
    reopened = Ledger(path, url=ledger_url)
    try:
        # As before the decision: recovery inspects it again; nothing can have been paid.
        assert reopened.get("req_1").state == State.inspecting
        assert reopened.db.execute("SELECT count(*) FROM decisions").fetchone()[0] == 0
        assert reopened.db.execute("SELECT count(*) FROM executions").fetchone()[0] == 0
    finally:
        reopened.close()
    assert audit.verify(path, url=ledger_url).intact
