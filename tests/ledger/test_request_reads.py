"""Requests read back: a row read again gives the model already made of it, and a change to any
value the row is read from (the request's columns, its latest decision, its last outcome) gives
a new one."""

from __future__ import annotations

import pytest
from helpers import plain_request

from svc_console.core.models import Decision
from svc_console.core.states import State
from svc_console.ledger import Ledger, request_reads
from svc_console.ledger.request_windows import RequestQuery


def test_a_row_read_again_is_the_same_model_and_a_changed_row_a_new_one(ledger: Ledger):
    ledger.insert_request(plain_request("req_1"))
    received = ledger.get("req_1")
    assert received is not None
    assert ledger.get("req_1") is received
    assert ledger.window(RequestQuery(states=(State.received,))) == [received]
    assert ledger.window(RequestQuery(states=(State.received,)))[0] is received

    ledger.transition("req_1", State.inspecting, at=2.0)
    inspecting = ledger.get("req_1")
    assert inspecting is not None and inspecting is not received
    assert inspecting.state == State.inspecting and received.state == State.received

    # A column no transition touches, changed behind the ledger's back, is seen all the same.
    ledger.db.execute("UPDATE requests SET purpose = ? WHERE id = ?", ["other", "req_1"])
    assert ledger.get("req_1").purpose == "other"

    ledger.transition("req_1", State.pending, at=3.0)
    ledger.decide("req_1", Decision(approved=False, by="op", at=4.0, note="no"), State.denied)
    denied = ledger.get("req_1")
    assert denied is not None and denied.state == State.denied
    assert denied.decision is not None and denied.decision.note == "no"
    # The decision is its own table's row: a note changed there alone makes a new model too.
    ledger.db.execute("UPDATE decisions SET note = ? WHERE request_id = ?", ["changed", "req_1"])
    assert ledger.get("req_1").decision.note == "changed"


def test_the_models_kept_are_bounded(ledger: Ledger, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(request_reads, "HYDRATED_MAX", 4)
    for n in range(10):
        ledger.insert_request(plain_request(f"req_{n}"))
        assert ledger.get(f"req_{n}") is not None
        assert len(ledger.__dict__["_hydrated"]) <= 4
    page = ledger.window(RequestQuery(states=(State.received,)), limit=10)
    assert [r.id for r in page] == [f"req_{n}" for n in range(10)]


def test_a_requests_place_in_a_query_is_read_on_each_engine(ledger: Ledger):
    # Ranked in a subquery: PostgreSQL refuses one without a name, which SQLite allows.
    for n in range(3):
        ledger.insert_request(plain_request(f"req_{n}").model_copy(update={"created_at": n}))
    newest_first = RequestQuery(states=(State.received,), descending=True)
    assert [ledger.position(newest_first, f"req_{n}") for n in range(3)] == [2, 1, 0]
    assert ledger.position(RequestQuery(states=(State.received,)), "req_2") == 2
    assert ledger.position(RequestQuery(states=(State.pending,)), "req_2") is None
    assert ledger.position(newest_first, "req_none") is None
