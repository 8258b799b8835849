"""Endpoint records kept once written or read: the column holds the same canonical text as a
record dumped afresh, a record read back equals the one written, and a record that changed in
anything is written and read as itself, never as a record kept before."""

from __future__ import annotations

import json
from typing import Any

import pytest
from helpers import plain_request

from svc_console.core.canonical_json import canonical_json
from svc_console.core.models import EndpointRecord
from svc_console.core.states import State
from svc_console.ledger import Ledger, endpoint_records


def record(**changed: Any) -> EndpointRecord:
    fields = {
        "id": "ep_x", "name": "X", "provider": "prov_search", "providerName": "Prov",
        "origin": "publisher", "domain_type": "A7", "product_class": "B1", "chains": ["base"],
        "protocols": ["x402"], "pricing": {"model": "fixed", "amountUsdc": "0.01"},
        "verified": True, "qualityScore": 0.95, "reliability": 0.99,
        "description": "ünïcode \u2028 \"quoted\"",
    }  # fmt: skip
    return EndpointRecord.model_validate({**fields, **changed})


def inspected(ledger: Ledger, request_id: str, endpoint: EndpointRecord) -> None:
    ledger.insert_request(plain_request(request_id))
    ledger.transition(request_id, State.inspecting, at=2.0, endpoint=endpoint)


def column(ledger: Ledger, request_id: str) -> str:
    row = ledger.db.execute("SELECT endpoint FROM requests WHERE id = ?", [request_id]).fetchone()
    return row[0]


def test_the_column_holds_the_records_canonical_json_and_reads_back_equal(ledger: Ledger):
    first = record()
    inspected(ledger, "req_1", first)
    inspected(ledger, "req_2", first)  # the same object again: its kept text
    expected = canonical_json(first.model_dump(mode="json"))
    assert column(ledger, "req_1") == column(ledger, "req_2") == expected
    one, two = ledger.get("req_1"), ledger.get("req_2")
    assert one is not None and two is not None
    assert one.endpoint == first and two.endpoint == first
    # Read once, shared: records are frozen.
    assert one.endpoint is two.endpoint
    with pytest.raises(ValueError):
        one.endpoint.name = "changed"  # type: ignore[misc]


def test_a_record_that_changed_is_written_and_read_as_itself(ledger: Ledger):
    inspected(ledger, "req_1", record())
    inspected(ledger, "req_2", record(verified=False, qualityScore=0.1))
    assert json.loads(column(ledger, "req_2"))["verified"] is False
    first, second = ledger.get("req_1"), ledger.get("req_2")
    assert first is not None and second is not None
    assert first.endpoint.verified is True and second.endpoint.verified is False
    assert second.endpoint.quality_score == 0.1

    # A column rewritten behind the ledger's back is read as it now is.
    text = json.dumps({**json.loads(column(ledger, "req_1")), "name": "Renamed"})
    ledger.db.execute("UPDATE requests SET endpoint = ? WHERE id = ?", [text, "req_1"])
    assert ledger.get("req_1").endpoint.name == "Renamed"


def test_what_is_kept_is_bounded(ledger: Ledger, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(endpoint_records, "KEPT_MAX", 3)
    for n in range(8):
        inspected(ledger, f"req_{n}", record(id=f"ep_{n}"))
        assert ledger.get(f"req_{n}").endpoint.id == f"ep_{n}"
        assert len(endpoint_records._texts) <= 3 and len(endpoint_records._records) <= 3
    assert [ledger.get(f"req_{n}").endpoint.id for n in range(8)] == [f"ep_{n}" for n in range(8)]
