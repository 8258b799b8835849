"""Nothing recorded is replaced (DESIGN.md invariant 11): a charge is its service's and its id's; a
second version of one already held is kept beside the first, flagged and told in the audit chain;
totals never drop; and a ledger synced before charges were told apart by service upgrades with
every seal intact. On both engines."""

from __future__ import annotations

import json
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError
from test_usage_ledger import executed

from svc_console.config.audit_key import audit_key
from svc_console.core.usage import (
    Reconciled,
    UsageCharge,
    UsageFilter,
    UsagePage,
    service_identity,
)
from svc_console.ledger import Ledger, audit_chain, engine
from svc_console.ledger import usage_query as U
from svc_console.ledger.audit import verify
from svc_console.ledger.schema import MIGRATIONS
from svc_console.ledger.usage_write import _service_row, fingerprint, sync_usage

FIRST_RUN, SECOND_RUN = "sandbox-0000000000000001", "sandbox-0000000000000002"


def charge(
    charge_id: str, amount: str, *, at: float = 1_780_000_000.0, **fields: Any
) -> UsageCharge:
    return UsageCharge.model_validate(
        {
            "id": charge_id,
            "createdAt": at,
            "resourceId": "ep_x",
            "chain": "base",
            "protocol": "x402",
            "amountUsdc": amount,
            "idempotencyKey": f"key-{charge_id}-{at}",
            **fields,
        }
    )


@pytest.fixture
def ledger(tmp_path: Path, ledger_url: str | None) -> Iterator[Ledger]:
    store = Ledger(tmp_path / "ledger.db", url=ledger_url)
    yield store
    store.close()


def totals(ledger: Ledger) -> U.UsageTotals:
    return U.totals(ledger.db.conn, UsageFilter())


def events(ledger: Ledger, kind: str) -> list[dict[str, Any]]:
    rows = ledger.db.execute("SELECT data FROM events WHERE type = ? ORDER BY seq", [kind])
    return [json.loads(data) for (data,) in rows.fetchall()]


def test_the_same_ids_from_another_service_are_other_charges(ledger: Ledger):
    """A restarted sandbox numbers its charges from ch_000001 again: under its own identity,
    they are added to the history, and the first run's stay as they were."""
    first = [charge(f"ch_00000{n}", "0.01", at=1_780_000_000.0 + n) for n in range(1, 4)]
    sync_usage(ledger, first, service=FIRST_RUN)
    before = totals(ledger)
    again = [charge(f"ch_00000{n}", "0.02", at=1_780_100_000.0 + n) for n in range(1, 3)]
    result = sync_usage(ledger, again, service=SECOND_RUN)
    assert (result.inserted, result.conflicts) == (2, 0)
    after = totals(ledger)
    assert (after.count, after.amount) == (before.count + 2, before.amount + 40_000)
    held = U.versions(ledger.db.conn, "ch_000001")
    assert [(r.service, r.version, r.amount_usdc) for r in held] == [
        (FIRST_RUN, 1, Decimal("0.01")),
        (SECOND_RUN, 1, Decimal("0.02")),
    ]
    assert U.count(ledger.db.conn, UsageFilter(state="conflict")) == 0


def test_a_second_version_is_kept_beside_the_first_flagged_and_in_the_chain(ledger: Ledger):
    sync_usage(ledger, [charge("ch_1", "0.01"), charge("ch_2", "0.02")], service=FIRST_RUN)
    before = totals(ledger)
    # The service says ch_1 again, with another amount and receipt: both are kept.
    changed = charge("ch_1", "0.05", receipt="0xdef")
    result = sync_usage(ledger, [changed], service=FIRST_RUN)
    assert (result.inserted, result.conflicts, result.flagged) == (0, 1, 1)
    first, second = U.versions(ledger.db.conn, "ch_1")
    assert (first.version, first.amount_usdc, first.receipt) == (1, Decimal("0.01"), None)
    assert (second.version, second.amount_usdc, second.receipt) == (2, Decimal("0.05"), "0xdef")
    assert (second.state, second.flag) == (Reconciled.conflict, "conflict")
    assert "both are kept" in (second.flag_text or "")
    # Totals never drop: the second version is counted, and flagged.
    after = totals(ledger)
    assert after.count == before.count + 1 and after.amount == before.amount + 50_000
    conflicts = U.totals(ledger.db.conn, UsageFilter(state="conflict"))
    assert (conflicts.count, conflicts.amount) == (1, 50_000)
    assert [r.id for r in U.window(ledger.db.conn, UsageFilter(state="conflict"), 0, 10)] == [
        "ch_1"
    ]
    # The audit chain tells it, and holds.
    (told,) = events(ledger, "charge_conflict")
    assert told["service"] == FIRST_RUN and told["id"] == "ch_1" and told["version"] == 2
    assert told["amount_usdc"] == "0.05" and len(told["earlier"]) == 1
    report = verify(ledger.path, url=ledger.url)
    assert report.intact, (report.broken, report.problems)


def test_a_version_seen_again_is_not_kept_twice_and_a_third_is_a_third(ledger: Ledger):
    sync_usage(ledger, [charge("ch_1", "0.01")], service=FIRST_RUN)
    sync_usage(ledger, [charge("ch_1", "0.05")], service=FIRST_RUN)
    # The day of overlap lists both again: nothing new.
    again = sync_usage(ledger, [charge("ch_1", "0.01"), charge("ch_1", "0.05")], service=FIRST_RUN)
    assert (again.inserted, again.conflicts, again.unchanged) == (0, 0, 2)
    # One page holding two new versions keeps both, numbered in order.
    third = sync_usage(ledger, [charge("ch_1", "0.07"), charge("ch_1", "0.09")], service=FIRST_RUN)
    assert third.conflicts == 2
    held = U.versions(ledger.db.conn, "ch_1")
    assert [(r.version, r.amount) for r in held] == [
        (1, 10_000),
        (2, 50_000),
        (3, 70_000),
        (4, 90_000),
    ]
    assert totals(ledger).amount == 220_000


def test_a_conflict_never_takes_the_approval_from_the_first_version(ledger: Ledger):
    """The approval covers the first version; a second, even one the service dates earlier,
    is a conflict, never the charge that used the approval first."""
    key = executed(ledger, "req_a", ceiling="0.05")
    sync_usage(
        ledger, [charge("ch_1", "0.01", at=1_780_000_100.0, idempotencyKey=key)], service=FIRST_RUN
    )
    dated_earlier = charge("ch_1", "0.02", at=1_780_000_000.0, idempotencyKey=key)
    sync_usage(ledger, [dated_earlier], service=FIRST_RUN)
    first, second = U.versions(ledger.db.conn, "ch_1")
    assert (first.state, first.request_id) == (Reconciled.ok, "req_a")
    assert (second.state, second.request_id, second.ceiling) == (
        Reconciled.conflict,
        "req_a",
        50_000,
    )


def test_the_service_identity_is_its_own_word_else_its_address():
    assert service_identity("HTTPS://Svc.Example/", None) == "https://svc.example"
    assert service_identity("http://127.0.0.1:8402/api/", None) == "http://127.0.0.1:8402/api"
    assert service_identity("http://127.0.0.1:8402", "sandbox-ab12") == "sandbox-ab12"


def test_a_service_identity_that_is_not_one_word_is_refused_and_stores_nothing(ledger: Ledger):
    for given in ("two words", "x" * 121, "", "tab\there", "é-accent"):
        with pytest.raises(ValidationError):
            UsagePage.model_validate({"charges": [], "serviceId": given})
    assert UsagePage.model_validate({"charges": [], "serviceId": FIRST_RUN}).service_id
    for service in ("two words", ""):
        with pytest.raises(ValueError, match="without spaces"):
            sync_usage(ledger, [charge("ch_1", "0.01")], service=service)
    assert totals(ledger).count == 0 and events(ledger, "usage_synced") == []


# -- a ledger from before charges were told apart by service ----------------------------------

LEGACY_STEPS = 10  # the schema before `_charges_by_service`


def write_legacy_ledger(path: Path, url: str | None, charges: list[UsageCharge]) -> None:
    """A ledger as the console wrote it before: usage keyed by the charge id alone (unique),
    each row sealed by that id in a keyed event, and the head file beside it."""
    db = engine.open_database(path, url)
    try:
        assert db.schema_version() == 0  # (which makes PostgreSQL's version table)
        for step in range(LEGACY_STEPS):
            with db.atomic():
                db.prepare_schema()
                MIGRATIONS[step](db)
                db.set_schema_version(step + 1)
        with db.atomic():
            db.finish_schema()
            seals = {}
            for c in charges:
                row = _service_row(c)
                db.execute(
                    "INSERT INTO usage (id, at, kind, resource, chain, protocol, amount,"
                    " idempotency_key, receipt, state, flag, flagged, fingerprint, synced_at)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'uncovered', 'no_request', 1, ?, ?)",
                    [c.id, c.at, c.kind, c.resource, c.chain, c.protocol, row["amount"],
                     c.idempotency_key, c.receipt, fingerprint(row), c.at],
                )  # fmt: skip
                cursor = db.execute("SELECT * FROM usage WHERE id = ?", [c.id])
                names = [d[0] for d in cursor.description]
                digest = audit_chain.row_digest(
                    names, cursor.fetchone(), audit_chain.SEALED["usage"][1]
                )
                seals[f"usage:{c.id}"] = digest
            chain = audit_chain.Chain(audit_key(path), (0, audit_chain.GENESIS))
            head = chain.append(db.conn, [(None, "usage_synced", {"rows": seals}, 1_780_000_900.0)])
        head_file = audit_chain.HeadFile(path)
        head_file.write(*head)
        head_file.close()
    finally:
        db.close()


def test_a_ledger_synced_before_upgrades_with_its_seals_intact(tmp_path: Path, ledger_url):
    path = tmp_path / "ledger.db"
    old = [charge("ch_1", "0.01"), charge("ch_2", "0.02")]
    write_legacy_ledger(path, ledger_url, old)
    assert verify(path, url=ledger_url).intact  # as the console left it
    ledger = Ledger(path, url=ledger_url)
    try:
        report = verify(path, url=ledger_url)
        assert report.intact, (report.broken, report.problems)
        first = U.get(ledger.db.conn, "ch_1")
        assert first is not None and (first.service, first.version) == (None, 1)
        # The service lists them again, now with its identity: the same facts are the same
        # charges; other facts for one of them are a second version, kept beside.
        again = sync_usage(ledger, [old[0], charge("ch_2", "0.03")], service=FIRST_RUN)
        assert (again.inserted, again.conflicts, again.unchanged) == (0, 1, 1)
        assert [(r.service, r.version) for r in U.versions(ledger.db.conn, "ch_2")] == [
            (None, 1),
            (FIRST_RUN, 2),
        ]
        assert totals(ledger).amount == 60_000
    finally:
        ledger.close()
    report = verify(path, url=ledger_url)
    assert report.intact, (report.broken, report.problems)


# -- what the chain does not account for -------------------------------------------------------


def test_a_charge_forged_into_the_usage_table_is_reported(ledger: Ledger):
    sync_usage(ledger, [charge("ch_1", "0.01")], service=FIRST_RUN)
    forged = (
        "INSERT INTO usage (row_key, service, id, at, kind, resource, chain, protocol, amount,"
        " state, flagged, synced_at) VALUES ('sandbox-x ch_9 v1', 'sandbox-x', 'ch_9',"
        " 1780000000, 'market_call', 'ep_x', 'base', 'x402', 10000, 'ok', 0, 1780000000)"
    )
    with ledger.db.atomic():
        ledger.db.execute(forged)
    report = verify(ledger.path, url=ledger.url)
    assert report.broken is None
    assert [p.why for p in report.problems] == [
        "usage row 'sandbox-x ch_9 v1' is in no event: a charge the audit chain does not"
        " account for, written by hand"
    ]


def test_the_syncs_look_ups_are_index_seeks(tmp_path: Path):
    """On a ledger of a million charges, a sync reads the versions of the ids it received and
    the newest charge of its service, never the table."""
    store = Ledger(tmp_path / "ledger.db")
    try:
        for sql, params in (
            ("SELECT id, service, version, fingerprint FROM usage WHERE id IN (?, ?)", ["a", "b"]),
            ("SELECT max(at) FROM usage WHERE service = ?", [FIRST_RUN]),
            ("SELECT * FROM usage WHERE id = ? ORDER BY seq", ["a"]),
        ):
            plan = [row[3] for row in store.db.execute(f"EXPLAIN QUERY PLAN {sql}", params)]
            assert any("INDEX usage_charge" in s or "INDEX usage_service" in s for s in plan), plan
            assert not any(s.startswith("SCAN usage") for s in plan), plan
    finally:
        store.close()
