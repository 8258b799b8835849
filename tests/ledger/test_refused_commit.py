"""A transaction whose commit the database refuses (here its chain's events, written last as
the transaction seals, refused by a trigger as a full disk or a broken constraint would refuse
them): the commit fails, nothing of the transaction is kept, the chain stays as it was and the
connection goes on, on a transaction of its own and on a group commit alike, on each engine."""

from __future__ import annotations

import asyncio
import sqlite3

import pytest
from helpers import committed_rows, plain_request

from svc_console.ledger import Ledger, audit, group_commit

REFUSE_EVENTS_OF_REQ_BAD = {
    "sqlite": """
        CREATE TRIGGER refuse_req_bad BEFORE INSERT ON events WHEN NEW.request_id = 'req_bad'
        BEGIN SELECT RAISE(ABORT, 'events of req_bad refused'); END;
    """,
    "postgresql": """
        CREATE FUNCTION refuse_req_bad() RETURNS trigger AS $$
        BEGIN
            IF NEW.request_id = 'req_bad' THEN RAISE EXCEPTION 'events of req_bad refused'; END IF;
            RETURN NEW;
        END $$ LANGUAGE plpgsql;
        CREATE TRIGGER refuse_req_bad BEFORE INSERT ON events
            FOR EACH ROW EXECUTE FUNCTION refuse_req_bad();
    """,
}


@pytest.fixture
def refusing(ledger: Ledger) -> Ledger:
    conn = ledger.db.conn
    if ledger.db.dialect == "sqlite":
        conn.executescript(REFUSE_EVENTS_OF_REQ_BAD["sqlite"])
    else:
        conn.raw.execute(REFUSE_EVENTS_OF_REQ_BAD["postgresql"])
    return ledger


def test_a_refused_commit_leaves_nothing_and_the_next_transaction_commits(refusing):
    ledger = refusing
    ledger.insert_request(plain_request("req_1"))
    head = committed_rows(ledger, "SELECT max(seq) FROM events")
    with pytest.raises(sqlite3.DatabaseError, match="events of req_bad refused"):
        ledger.insert_request(plain_request("req_bad"))
    assert not ledger.db.conn.in_transaction
    assert committed_rows(ledger, "SELECT id FROM requests") == [("req_1",)]
    assert committed_rows(ledger, "SELECT max(seq) FROM events") == head
    ledger.insert_request(plain_request("req_2"))
    assert committed_rows(ledger, "SELECT id FROM requests ORDER BY id") == [
        ("req_1",),
        ("req_2",),
    ]
    assert audit.verify(ledger.path, url=ledger.url).intact


async def test_a_refused_group_commit_fails_each_of_its_writers_and_keeps_nothing(refusing):
    ledger = refusing

    async def submit(request_id: str) -> None:
        with group_commit.joined():
            ledger.insert_request(plain_request(request_id))
        await ledger.committed()

    outcomes = await asyncio.gather(
        *(submit(name) for name in ("req_a", "req_bad", "req_c")), return_exceptions=True
    )
    # The events are written as the group commits: refused, nothing of the group is kept, and
    # every writer hears it (none goes on as if its row were).
    assert all(isinstance(outcome, sqlite3.DatabaseError) for outcome in outcomes), outcomes
    assert committed_rows(ledger, "SELECT count(*) FROM requests") == [(0,)]
    assert committed_rows(ledger, "SELECT count(*) FROM events") == [(0,)]
    await submit("req_d")
    assert committed_rows(ledger, "SELECT id FROM requests") == [("req_d",)]
    assert audit.verify(ledger.path, url=ledger.url).intact


def test_a_cursor_describes_its_columns_as_sqlite3s(ledger):
    # The ledger reads the columns' names from it; on PostgreSQL too, in sqlite3's shape.
    conn = ledger.db.conn
    found = conn.execute("SELECT id, agent AS who FROM requests WHERE id = ?", ["none"])
    assert found.description == (("id",) + (None,) * 6, ("who",) + (None,) * 6)
    assert found.fetchall() == []
    written = conn.execute("UPDATE requests SET agent = ? WHERE id = ?", ["a", "none"])
    assert written.description is None
