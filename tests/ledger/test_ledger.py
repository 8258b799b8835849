"""The ledger file: state machine enforced at the store, a hash-chained event log, migrations."""

from __future__ import annotations

import hashlib
import hmac
import json
from decimal import Decimal

import pytest
from helpers import plain_request

from svc_console.core.models import Decision
from svc_console.core.states import IllegalTransition, State
from svc_console.ledger import Ledger, LedgerLocked
from svc_console.ledger.engine import open_database
from svc_console.ledger.store import GENESIS


def test_an_execution_cannot_start_without_an_approval(ledger):
    ledger.insert_request(plain_request())
    ledger.transition("req_1", State.inspecting)
    ledger.transition("req_1", State.pending)
    with pytest.raises(IllegalTransition):
        ledger.start_execution("req_1", decision_id=1, attempt=1, idempotency_key="k", at=2.0)
    assert ledger.db.execute("SELECT count(*) FROM executions").fetchone()[0] == 0
    decision = Decision(approved=False, by="op", at=2.0, note="no")
    ledger.decide("req_1", decision, State.denied)
    with pytest.raises(IllegalTransition):
        ledger.decide("req_1", decision, State.approved)
    assert ledger.get("req_1").state == State.denied
    assert ledger.get("req_1").max_usdc == Decimal("0.5")


def test_events_form_a_hash_chain(ledger):
    key = bytes.fromhex(ledger.path.with_name(ledger.path.name + ".key").read_text().strip())
    ledger.insert_request(plain_request("req_1"))
    ledger.insert_request(plain_request("req_2"))
    ledger.transition("req_1", State.inspecting)
    rows = ledger.db.execute("SELECT at, request_id, type, data, prev_hash, hash FROM events"
                             " ORDER BY seq").fetchall()  # fmt: skip
    previous = GENESIS
    for at, request_id, kind, data, prev_hash, digest in rows:
        payload = json.dumps(
            {"at": at, "request_id": request_id, "type": kind, "data": json.loads(data)},
            separators=(",", ":"), sort_keys=True, ensure_ascii=False,
        )  # fmt: skip
        assert prev_hash == previous
        # Keyed: an HMAC-SHA256 with the ledger's key, kept beside it, never in it.
        expected = hmac.new(key, (previous + payload).encode(), hashlib.sha256).hexdigest()
        assert digest == expected
        assert digest != hashlib.sha256((previous + payload).encode()).hexdigest()
        previous = digest
    assert len(rows) == 3


def test_reopening_continues_the_chain_and_one_writer_at_a_time(tmp_path, ledger_url):
    path = tmp_path / "ledger.db"
    first = Ledger(path, url=ledger_url)
    first.insert_request(plain_request("req_1"))
    if ledger_url is None:  # a SQLite file has one writer; PostgreSQL's are shared.py's
        with pytest.raises(LedgerLocked):
            Ledger(path, url=ledger_url)
    last = first.db.execute("SELECT hash FROM events ORDER BY seq DESC").fetchone()[0]
    first.close()
    second = Ledger(path, url=ledger_url)
    second.insert_request(plain_request("req_2"))
    link = second.db.execute("SELECT prev_hash FROM events ORDER BY seq DESC").fetchone()[0]
    assert link == last
    second.close()


def test_a_ledger_from_a_newer_version_is_refused_untouched(tmp_path, ledger_url):
    path = tmp_path / "ledger.db"
    Ledger(path, url=ledger_url).close()
    raw = open_database(path, ledger_url)
    with raw.atomic():
        raw.set_schema_version(99)
    with pytest.raises(RuntimeError, match="newer svc-console"):
        Ledger(path, url=ledger_url)
    assert raw.schema_version() == 99
    raw.close()
