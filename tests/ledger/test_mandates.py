"""Mandates in the ledger, on both engines: kept with the approving decision (the row sealed in the
chain, the digest in the decision's event), read back for the executor and the command line, and
a copy checked against the chain: the one approved passes; an edited copy, or a ledger whose chain
no longer verifies, does not."""

from __future__ import annotations

import json
import sqlite3
from decimal import Decimal
from pathlib import Path

import sqlite_utils
from mandates import mandate

from svc_console.core.mandate import Mandate
from svc_console.core.models import Decision, SpendRequest
from svc_console.core.states import State
from svc_console.ledger import mandates
from svc_console.ledger.engine import open_database
from svc_console.ledger.schema import MIGRATIONS
from svc_console.ledger.store import Ledger

EVIL = "0xdEaD000000000000000000000000000000bEEf01"


def approved(path: Path, url: str | None, request_id: str = "req_1") -> Mandate:
    """A request approved with a mandate in the ledger at `path` (or `url`)."""
    terms = mandate(request_id=request_id, at=2.0)
    ledger = Ledger(path, url=url)
    try:
        ledger.insert_request(
            SpendRequest(
                id=request_id,
                agent="tester",
                kind="dataset",
                dataset_id="ds_test",
                inputs={},
                purpose="p",
                state=State.received,
                created_at=1.0,
                updated_at=1.0,
            )
        )
        ledger.transition(request_id, State.inspecting, at=1.0)
        ledger.transition(request_id, State.pending, at=1.0, expires_at=10**10)
        decision = Decision(approved=True, by="alice", at=2.0, ceiling_usdc=Decimal("0.25"))
        ledger.decide(request_id, decision, State.approved, mandate=terms)
    finally:
        ledger.close()
    return terms


def rows(path: Path, url: str | None, sql: str) -> list[tuple]:
    conn = open_database(path, url)
    try:
        return [tuple(row) for row in conn.execute(sql).fetchall()]
    finally:
        conn.close()


def test_a_mandate_is_kept_with_its_decision_and_its_digest_in_the_chain(
    tmp_path: Path, ledger_url: str | None
):
    path = tmp_path / "ledger.db"
    terms = approved(path, ledger_url)
    [(stored,)] = rows(path, ledger_url, "SELECT mandate FROM decisions")
    assert stored == terms.canonical()
    [(data,)] = rows(path, ledger_url, "SELECT data FROM events WHERE type = 'decision'")
    assert json.loads(data)["mandate_sha256"] == terms.digest
    conn = open_database(path, ledger_url)
    try:
        assert mandates.latest(conn, "req_1") == terms
        assert mandates.of_decision(conn, 1) == terms
    finally:
        conn.close()
    checked = mandates.check(terms, path, ledger_url)
    assert checked.problem is None and checked.seq is not None


def test_the_printed_copy_verifies_and_an_edited_one_does_not(
    tmp_path: Path, ledger_url: str | None
):
    path = tmp_path / "ledger.db"
    terms = approved(path, ledger_url)
    printed = Mandate.parse(terms.printed())
    assert printed.digest == terms.digest  # as printed, indented, it is the same mandate
    assert mandates.check(printed, path, ledger_url).problem is None
    edited = terms.model_copy(update={"recipient": EVIL})
    problem = mandates.check(edited, path, ledger_url).problem
    assert problem is not None and "this is not the mandate approved for req_1" in problem
    assert "the copy was edited" in problem
    other = mandate(request_id="req_unknown")
    problem = mandates.check(other, path, ledger_url).problem
    assert problem == "no approval of req_unknown with a mandate is in the audit chain"


def test_a_mandate_edited_in_the_ledger_fails_the_chain_and_the_check(tmp_path: Path):
    """Rewriting the stored mandate to a new recipient is an edit of a sealed row: the chain no
    longer verifies, so no mandate is checked against it, not even the original."""
    path = tmp_path / "ledger.db"
    terms = approved(path, None)
    forged = terms.model_copy(update={"recipient": EVIL}).canonical()
    conn = sqlite3.connect(path)
    with conn:
        conn.execute("UPDATE decisions SET mandate = ?", [forged])
    conn.close()
    problem = mandates.check(terms, path).problem
    assert problem is not None
    assert problem.startswith("the ledger's audit chain does not verify (event ")
    assert "decisions row 1 is not what event" in problem


def test_the_step_adds_the_column_to_a_ledger_from_before_and_may_run_twice(tmp_path: Path):
    """Found by its name, not its place: the order of the steps is settled when work merges."""
    path = tmp_path / "ledger.db"
    Ledger(path).close()
    raw = sqlite3.connect(path)
    raw.execute("ALTER TABLE decisions DROP COLUMN mandate")
    [step] = [s for s in MIGRATIONS if s.__name__ == "_decision_mandates"]
    for _ in range(2):
        step(sqlite_utils.Database(raw))
    assert "mandate" in [row[1] for row in raw.execute("PRAGMA table_info(decisions)")]
    assert mandates.latest(raw, "req_none") is None
    raw.close()
