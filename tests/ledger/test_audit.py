"""Tamper evidence: `svc-console audit verify` walks the ledger's hash-chained events and names the
first broken link. Ledgers are written through the ledger's own API (and once by the broker over
the socket); the tampering is done directly in SQLite, as someone with the file would."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from helpers import committed_rows

from svc_console.agent import AsyncAgent
from svc_console.cli import main
from svc_console.config.paths import Paths
from svc_console.core.models import Decision, Outcome, Receipt, SpendRequest
from svc_console.core.states import State
from svc_console.ledger import Ledger, audit_chain
from svc_console.ledger.audit import AuditError, AuditReport, verify
from svc_console.ledger.engine import open_database

REQUESTS = 6  # three events each: received, inspecting, rejected
EVENTS = REQUESTS * 3


def write_ledger(path: Path, requests: int = REQUESTS, url: str | None = None) -> None:
    ledger = Ledger(path, url=url)
    try:
        for n in range(requests):
            at = 1_795_000_000.25 + n
            ledger.insert_request(
                SpendRequest(
                    id=f"req_{n:03d}",
                    agent="bot",
                    kind="market_call",
                    endpoint_id="ep_websearch_basic",
                    inputs={"query": f"q{n} \u00e9\u202e"},
                    purpose=f"purpose {n}",
                    state=State.received,
                    created_at=at,
                    updated_at=at,
                )
            )
            ledger.transition(f"req_{n:03d}", State.inspecting, at=at + 0.5)
            ledger.transition(f"req_{n:03d}", State.rejected, at=at + 1, reason=f"no {n} «ü»")
    finally:
        ledger.close()


@pytest.fixture
def ledger_file(tmp_path: Path) -> Path:
    path = tmp_path / "ledger.db"
    write_ledger(path)
    return path


def tamper(path: Path, *statements: str) -> None:
    conn = sqlite3.connect(path)
    with conn:
        for statement in statements:
            conn.execute(statement)
    conn.close()


@dataclass
class Stored:
    """A ledger as whoever holds its database sees it, on either engine: the SQLite file at
    `path`, or the PostgreSQL database at `url` (its key and head files beside `path`)."""

    path: Path
    url: str | None

    def verify(self, **options: Any) -> AuditReport:
        return verify(self.path, url=self.url, **options)

    def tamper(self, *statements: str) -> None:
        if self.url is None:
            tamper(self.path, *statements)
            return
        conn = open_database(self.path, self.url)
        with conn.atomic():
            # The owner of a database can switch its foreign keys off, as a plain SQLite
            # connection has them off: the tampering below deletes rows others point at.
            conn.execute("SET LOCAL session_replication_role = replica")
            for statement in statements:
                conn.execute(statement)
        conn.close()

    def rows(self, sql: str) -> list[tuple]:
        return committed_rows(self, sql)


@pytest.fixture
def stored(tmp_path: Path, ledger_url: str | None) -> Stored:
    path = tmp_path / "ledger.db"
    write_ledger(path, url=ledger_url)
    return Stored(path, ledger_url)


def test_an_intact_chain_verifies(stored: Stored):
    report = stored.verify()
    assert report.intact and report.verified == EVENTS
    assert [(report.head,)] == stored.rows(f"SELECT hash FROM events WHERE seq = {EVENTS}")


def test_an_empty_ledger_verifies(tmp_path: Path):
    path = tmp_path / "empty.db"
    write_ledger(path, requests=0)
    report = verify(path)
    assert report.intact and report.verified == 0


def test_the_canonical_json_every_link_and_seal_covers_is_pinned():
    """Every ledger written so far was linked with these exact bytes: sorted keys, no spaces,
    text as it is, Python's spelling of floats and of NaN, integers of any size."""
    value = {"b": 1.5, "a": "é\n\u2028\x00", "c": [None, True, 10**30, 1e-05, 1e20, float("nan")]}
    assert audit_chain.dumps(value) == (
        '{"a":"é\\n\u2028\\u0000","b":1.5,"c":[null,true,1000000000000000000000000000000,'
        "1e-05,1e+20,NaN]}"
    )


def test_whole_number_times_verify(tmp_path: Path):
    # SQLite hands `at` back as REAL; the ledger hashed the int it was given.
    path = tmp_path / "ledger.db"
    ledger = Ledger(path)
    request = SpendRequest(
        id="req_int",
        agent="bot",
        kind="market_call",
        endpoint_id="ep",
        inputs={},
        purpose="p",
        state=State.received,
        created_at=100,
        updated_at=100,
    )
    ledger.insert_request(request)
    ledger.transition("req_int", State.inspecting, at=200)
    ledger.close()
    assert verify(path).verified == 2


@pytest.mark.parametrize(
    ("statements", "seq", "why"),
    [
        (['UPDATE events SET data = \'{"reason":"approved by me"}\' WHERE seq = 9'], 9, "edited"),
        (["UPDATE events SET at = at + 1 WHERE seq = 4"], 4, "edited"),
        (["UPDATE events SET type = 'succeeded' WHERE seq = 12"], 12, "edited"),
        (["UPDATE events SET request_id = 'req_005' WHERE seq = 2"], 2, "edited"),
        # Whitespace the ledger never writes is an edit too: the stored text is what was hashed.
        (["UPDATE events SET data = replace(data, ':', ': ') WHERE seq = 3"], 3, "edited"),
        (["DELETE FROM events WHERE seq = 7"], 7, "event 7 is missing: seq jumps from 6 to 8"),
        (["DELETE FROM events WHERE seq IN (7, 8, 9)"], 7, "events 7-9 are missing"),
        (["DELETE FROM events WHERE seq = 1"], 1, "the chain starts at event 2"),
        (["UPDATE events SET hash = upper(hash) WHERE seq = 11"], 11, "edited"),
        # A rewritten link with a matching hash of its own breaks the next link instead.
        (["UPDATE events SET prev_hash = hash WHERE seq = 5"], 5, "not the hash of event 4"),
        # Two rows swapped (every column but seq): the first one out of place breaks.
        (
            [
                "UPDATE events SET seq = -1 WHERE seq = 5",
                "UPDATE events SET seq = 5 WHERE seq = 6",
                "UPDATE events SET seq = 6 WHERE seq = -1",
            ],
            5,
            "not the hash of event 4",
        ),
        # A row deleted and the rest renumbered: no gap, but the links no longer meet.
        (
            [
                "DELETE FROM events WHERE seq = 10",
                "UPDATE events SET seq = seq - 1 WHERE seq > 10",
            ],
            10,
            "not the hash of event 9",
        ),
    ],
    ids=[
        "data",
        "at",
        "type",
        "request_id",
        "whitespace",
        "deleted",
        "deleted-run",
        "deleted-first",
        "hash",
        "prev_hash",
        "reordered",
        "renumbered",
    ],
)
def test_tampering_is_found_at_the_right_event(stored, statements, seq, why):
    stored.tamper(*statements)
    report = stored.verify()
    assert report.broken is not None
    assert report.broken.seq == seq
    assert why in report.broken.why
    assert report.verified == seq - 1


def test_a_rewrite_with_every_hash_recomputed_is_found_without_the_key(ledger_file: Path):
    """An event rewritten and every link after it recomputed, as plain SHA-256 (what the chain
    was before it was keyed) or as an HMAC with a key of the forger's: the first link is not the
    ledger's."""
    import hashlib
    import hmac

    from svc_console.ledger.audit_chain import GENESIS, stored_payload

    for name, forge in (
        ("plain", lambda text: hashlib.sha256(text.encode()).hexdigest()),
        ("other key", lambda text: hmac.new(b"k" * 32, text.encode(), "sha256").hexdigest()),
    ):
        conn = sqlite3.connect(ledger_file)
        previous = GENESIS
        with conn:
            rows = conn.execute(
                "SELECT seq, at, request_id, type, data FROM events ORDER BY seq"
            ).fetchall()
            for seq, at, request_id, kind, data in rows:
                if seq == 6:
                    data = '{"reason":"approved after all"}'
                digest = forge(previous + stored_payload(at, request_id, kind, data))
                conn.execute(
                    "UPDATE events SET data = ?, prev_hash = ?, hash = ? WHERE seq = ?",
                    [data, previous, digest, seq],
                )
                previous = digest
            last = rows[-1][0]
        conn.close()
        # The head file too, as a thorough forger would.
        (ledger_file.parent / "ledger.db.head").write_text(f'{{"seq":{last},"hash":"{previous}"}}')
        report = verify(ledger_file)
        assert report.broken is not None and report.broken.seq == 1, name
        assert "without the ledger's key" in report.broken.why


def test_batches_meet_without_a_seam(stored: Stored):
    # A batch boundary inside the chain changes nothing, and a break just after one is found.
    assert stored.verify(batch=4).verified == EVENTS
    stored.tamper("UPDATE events SET data = '{}' WHERE seq = 9")
    assert stored.verify(batch=4).broken.seq == 9  # type: ignore[union-attr]


def test_the_key_lives_outside_the_ledger_and_without_it_nothing_is_verified(
    ledger_file: Path, capsys: pytest.CaptureFixture[str]
):
    key_file = ledger_file.with_name("ledger.db.key")
    assert key_file.stat().st_mode & 0o777 == 0o600
    conn = sqlite3.connect(ledger_file)
    stored = b"".join(
        str(cell).encode()
        for table in ("events", "requests")
        for row in conn.execute(f"SELECT * FROM {table}")
        for cell in row
    )
    conn.close()
    assert key_file.read_text().strip().encode() not in stored
    key_file.rename(ledger_file.with_name("elsewhere"))
    with pytest.raises(AuditError, match="no audit key"):
        verify(ledger_file)
    assert main(["audit", "verify", "--ledger", str(ledger_file)]) == 2
    assert "no audit key" in capsys.readouterr().err


def test_a_plain_chain_from_before_is_keyed_when_the_ledger_opens(tmp_path: Path):
    """A ledger written before the chain was keyed (plain SHA-256 links, no seals) is relinked
    with the key and its rows sealed, once, when the broker opens it; then it verifies."""
    import hashlib

    from svc_console.ledger.audit_chain import GENESIS, stored_payload

    path = tmp_path / "ledger.db"
    write_ledger(path, requests=2)
    conn = sqlite3.connect(path)
    previous = GENESIS
    with conn:
        for seq, at, request_id, kind, data in conn.execute(
            "SELECT seq, at, request_id, type, data FROM events ORDER BY seq"
        ).fetchall():
            digest = hashlib.sha256(
                (previous + stored_payload(at, request_id, kind, data)).encode()
            ).hexdigest()
            conn.execute(
                "UPDATE events SET prev_hash = ?, hash = ? WHERE seq = ?", [previous, digest, seq]
            )
            previous = digest
    conn.close()
    Ledger(path).close()
    report = verify(path)
    assert report.intact, (report.broken, report.problems)
    # The old events, one sealing the requests' rows, one saying the chain is keyed from here.
    assert report.verified == 2 * 3 + 2


def test_what_is_not_a_ledger_is_an_audit_error(tmp_path: Path):
    with pytest.raises(AuditError, match="no ledger at"):
        verify(tmp_path / "absent.db")
    assert not (tmp_path / "absent.db").exists()  # read-only: nothing created
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(AuditError, match="cannot read"):
        verify(garbage)
    other = tmp_path / "other.db"
    sqlite3.connect(other).execute("CREATE TABLE t (x)").connection.close()
    with pytest.raises(AuditError, match="no events table"):
        verify(other)


async def test_a_ledger_the_broker_wrote_verifies(runtime):
    """Every kind of event the broker writes (submit, inspect, pending, a decision, execution,
    success) hashes as the verifier recomputes it."""
    from helpers import eventually
    from operator_support import operator_knowing

    async with AsyncAgent("bot", runtime.paths.socket) as agent:
        ticket = await agent.submit(
            endpoint_id="ep_websearch_basic", inputs={"query": "solar"}, purpose="audit me"
        )
        request_id = ticket["request_id"]
        await eventually(lambda: runtime.broker.get(request_id).state == State.pending)
        async with operator_knowing(runtime) as line:  # agents of this user: it is needed
            await line.call("approvals.approve", {"request_id": request_id})
        done = await agent.wait_for_outcome(request_id, 10)
    assert done["state"] == "succeeded"
    report = verify(runtime.ledger.path, url=runtime.ledger.url)
    assert report.intact and report.verified >= 6


# -- the command --------------------------------------------------------------------------------


def test_cli_exit_0_with_the_count(ledger_file: Path, capsys: pytest.CaptureFixture[str]):
    assert main(["audit", "verify", "--ledger", str(ledger_file)]) == 0
    out, err = capsys.readouterr()
    assert out.count("\n") == 1 and not err
    assert f"{EVENTS} events verified; chain intact, tables agree; head {EVENTS}:" in out
    head = out.rsplit("head ", 1)[1].strip()
    # The head kept elsewhere proves the same later; a head that is not in the chain does not.
    assert main(["audit", "verify", "--ledger", str(ledger_file), "--head", head]) == 0
    capsys.readouterr()
    forged = head[:-1] + ("0" if head[-1] != "0" else "1")
    assert main(["audit", "verify", "--ledger", str(ledger_file), "--head", forged]) == 1
    assert "not the one the head anchored" in capsys.readouterr().out
    with pytest.raises(SystemExit) as usage:
        main(["audit", "verify", "--ledger", str(ledger_file), "--head", "x"])
    assert usage.value.code == 2
    assert "must be SEQ:HASH" in capsys.readouterr().err


def test_cli_exit_1_names_the_first_break(ledger_file: Path, capsys: pytest.CaptureFixture[str]):
    tamper(ledger_file, "DELETE FROM events WHERE seq = 13")
    assert main(["audit", "verify", "--ledger", str(ledger_file)]) == 1
    out, err = capsys.readouterr()
    assert out.count("\n") == 1 and not err
    assert "chain broken at event 13: event 13 is missing" in out
    assert "(12 events before it verified)" in out


def test_cli_verifies_the_postgresql_ledger_the_settings_name(
    paths: Paths, postgres: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
):
    """With a service and SVC_LEDGER_URL, `audit verify` checks the real ledger in PostgreSQL
    (its key and head files in SVC_CONSOLE_HOME); the URL is shown without its password."""
    url = postgres.new_database()
    monkeypatch.setenv("SVC_BASE_URL", "https://svc.example")
    monkeypatch.setenv("SVC_LEDGER_URL", url)
    write_ledger(paths.ledger(sandbox=False), requests=2, url=url)
    assert not paths.ledger(sandbox=False).exists()  # the rows are in the database
    assert main(["audit", "verify"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"{url}: 6 events verified; chain intact")
    Stored(paths.ledger(sandbox=False), url).tamper("UPDATE events SET type = 'x' WHERE seq = 4")
    assert main(["audit", "verify"]) == 1
    assert "chain broken at event 4" in capsys.readouterr().out


def test_cli_defaults_to_the_sandbox_ledger(paths: Paths, capsys: pytest.CaptureFixture[str]):
    assert main(["audit", "verify"]) == 2
    assert "no ledger at" in capsys.readouterr().err
    write_ledger(paths.ledger(sandbox=True), requests=1)
    assert main(["audit", "verify"]) == 0
    out = capsys.readouterr().out
    assert str(paths.ledger(sandbox=True)) in out and "3 events verified" in out


def test_cli_defaults_to_the_real_ledger_when_a_service_is_configured(
    paths: Paths, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
):
    write_ledger(paths.ledger(sandbox=True), requests=1)
    (paths.home / "settings.toml").write_text('[service]\nbase_url = "https://svc.example"\n')
    assert main(["audit", "verify"]) == 2
    assert f"no ledger at {paths.ledger(sandbox=False)}" in capsys.readouterr().err
    write_ledger(paths.ledger(sandbox=False), requests=2)
    assert main(["audit", "verify"]) == 0
    assert "6 events verified" in capsys.readouterr().out
    (paths.home / "settings.toml").unlink()
    monkeypatch.setenv("SVC_BASE_URL", "https://svc.example")
    assert main(["audit", "verify"]) == 0
    assert "6 events verified" in capsys.readouterr().out


def test_cli_errors_are_one_line_without_a_traceback(tmp_path: Path, home: Path):
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"\x1b]52;c;aGk=\x07 not sqlite" * 100)
    for target in (garbage, tmp_path / "absent\x1b[2J.db"):
        result = subprocess.run(
            [sys.executable, "-m", "svc_console", "audit", "verify", "--ledger", str(target)],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert result.returncode == 2
        assert result.stdout == ""
        assert result.stderr.count("\n") == 1 and result.stderr.startswith("svc-console: ")
        assert "Traceback" not in result.stderr and "\x1b" not in result.stderr


# -- the money: every fact that moves or permits it is in the chain -----------------------------


def write_money_ledger(path: Path, url: str | None = None) -> None:
    """A ledger that holds one of every fact of money: a request approved with a ceiling,
    executed and charged (its budget reserved, then settled), a policy version, usage synced."""
    from svc_console.core.usage import UsageCharge
    from svc_console.ledger import policy_versions
    from svc_console.ledger.usage_write import sync_usage

    write_ledger(path, requests=2, url=url)
    ledger = Ledger(path, url=url)
    try:
        at = 1_795_000_100.0
        ledger.insert_request(
            SpendRequest(
                id="req_paid",
                agent="bot",
                kind="market_call",
                endpoint_id="ep_websearch_basic",
                inputs={"query": "solar"},
                purpose="paid",
                state=State.received,
                created_at=at,
                updated_at=at,
            )
        )
        ledger.transition("req_paid", State.inspecting, at=at + 1)
        ledger.transition("req_paid", State.pending, at=at + 2, expires_at=at + 1000)
        decision = Decision(approved=True, by="operator", at=at + 3, ceiling_usdc="0.05")
        decision_id = ledger.decide("req_paid", decision, State.approved)
        execution = ledger.start_execution("req_paid", decision_id, 1, "req_paid-1", at=at + 4)
        receipt = Receipt(
            protocol="x402", network="base", transaction="0xabc", idempotency_key="req_paid-1"
        )
        outcome = Outcome(
            status=200,
            content_type="application/json",
            body="{}",
            charged_usdc="0.04",
            chain="base",
            receipt=receipt,
        )
        ledger.finish_execution(execution, State.succeeded, at=at + 5, outcome=outcome)
        policy_versions.record(
            ledger,
            path="SKILLS.md",
            text="```policy\nper_call_max_usdc: 1\n```\n",
            sha256="f" * 64,
            at=at + 6,
            saved_by=None,
            valid=True,
        )
        charges = [
            UsageCharge.model_validate(
                {
                    "id": f"ch_{n}",
                    "createdAt": at + 7 + n,
                    "resourceId": "ep_websearch_basic",
                    "chain": "base",
                    "protocol": "x402",
                    "amountUsdc": "0.04",
                    "idempotencyKey": "req_paid-1" if n == 0 else None,
                }
            )
            for n in range(3)
        ]
        sync_usage(ledger, charges, now=at + 20, service="sandbox-audit")
    finally:
        ledger.close()


@pytest.fixture
def money_file(tmp_path: Path) -> Path:
    path = tmp_path / "ledger.db"
    write_money_ledger(path)
    return path


@pytest.fixture
def money(tmp_path: Path, ledger_url: str | None) -> Stored:
    path = tmp_path / "ledger.db"
    write_money_ledger(path, ledger_url)
    return Stored(path, ledger_url)


def sealed_by(path: Path | Stored, name: str) -> int:
    """The last event that sealed row `name` ("table:key"), as the ledger wrote it."""
    import json

    ledger = path if isinstance(path, Stored) else Stored(path, None)
    found = [
        seq
        for seq, data in ledger.rows("SELECT seq, data FROM events ORDER BY seq")
        if name in (json.loads(data).get("rows") or {})
    ]
    assert found, name
    return found[-1]


def test_a_ledger_of_money_verifies_and_every_table_is_sealed(money: Stored):
    report = money.verify()
    assert report.intact, (report.broken, report.problems)
    for name in ("requests:req_paid", "decisions:1", "executions:1", "budget_reservations:1"):
        assert sealed_by(money, name)
    assert sealed_by(money, "policy_versions:1") and sealed_by(money, "usage:sandbox-audit ch_2 v1")


PAID = "requests:req_paid"
RESERVATION = "budget_reservations:1"
CHARGE_1, CHARGE_2 = "usage:sandbox-audit ch_1 v1", "usage:sandbox-audit ch_2 v1"
MONEY_TAMPERING = [
    ("decision-ceiling", ["UPDATE decisions SET ceiling_usdc = 5000000"], "decisions:1", "edited"),
    ("decision-by", ["UPDATE decisions SET by = 'policy:all'"], "decisions:1", "edited"),
    ("charged", ["UPDATE executions SET charged_usdc = 1"], "executions:1", "edited"),
    ("state", ["UPDATE requests SET state = 'denied' WHERE id = 'req_paid'"], PAID, "edited"),
    ("inputs", ["UPDATE requests SET inputs = '{}' WHERE id = 'req_paid'"], PAID, "edited"),
    ("decision-deleted", ["DELETE FROM decisions"], "decisions:1", "is gone"),
    ("execution-deleted", ["DELETE FROM executions"], "executions:1", "is gone"),
    ("reservation", ["UPDATE budget_reservations SET settled_usdc = 0"], RESERVATION, "edited"),
    ("policy", ["UPDATE policy_versions SET text = 'nothing'"], "policy_versions:1", "edited"),
    ("usage-deleted", ["DELETE FROM usage WHERE id = 'ch_1'"], CHARGE_1, "is gone"),
    ("usage-amount", ["UPDATE usage SET amount = 1 WHERE id = 'ch_2'"], CHARGE_2, "edited"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("statements", "row", "why"),
    [case[1:] for case in MONEY_TAMPERING],
    ids=[case[0] for case in MONEY_TAMPERING],
)
def test_an_edit_of_money_is_found_at_the_event_that_sealed_it(money, statements, row, why):
    seq = sealed_by(money, row)
    money.tamper(*statements)
    report = money.verify()
    assert report.broken is None  # the chain itself holds: the tables disagree with it
    assert report.problems, "the edit was not found"
    first = report.problems[0]
    assert first.seq == seq and why in first.why, report.problems
    table, key = row.split(":")
    assert f"{table} row" in first.why and key in first.why


def test_a_row_of_money_written_by_hand_is_found(money: Stored):
    money.tamper(
        "INSERT INTO decisions (request_id, approved, by, at, ceiling_usdc)"
        " VALUES ('req_000', 1, 'operator', 1.0, 9000000)",
    )
    report = money.verify()
    assert any("decisions row 2 is in no event" in p.why for p in report.problems), report


def test_wiped_budget_totals_are_found(money: Stored):
    money.tamper("DELETE FROM budget_totals")
    report = money.verify()
    assert report.broken is None and report.problems
    assert all(p.why.startswith("budget_totals ") for p in report.problems)
    assert "the sealed reservations sum to 0 and 40000" in report.problems[0].why
    money.tamper("UPDATE budget_reservations SET state = 'released'")
    assert any("budget_reservations row 1" in p.why for p in money.verify().problems)


def test_cutting_the_last_events_off_is_found_by_the_head(money: Stored):
    ((last,),) = money.rows("SELECT max(seq) FROM events")
    money.tamper(f"DELETE FROM events WHERE seq > {last - 2}")
    report = money.verify()
    assert report.broken is not None and report.broken.seq == last - 1
    assert f"head was anchored at event {last}" in report.broken.why
    assert "the last 2 events were cut off" in report.broken.why
    (money.path.parent / "ledger.db.head").unlink()
    report = money.verify()
    assert report.broken is not None and "no head file" in report.broken.why


def test_the_cli_lists_what_the_tables_disagree_on(money_file, capsys):
    tamper(money_file, "UPDATE executions SET charged_usdc = 1", "DELETE FROM budget_totals")
    assert main(["audit", "verify", "--ledger", str(money_file)]) == 1
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert "chain intact" in lines[0] and "the tables disagree with it" in lines[0]
    seq = sealed_by(money_file, "executions:1")
    assert lines[1] == f"  event {seq}: executions row 1 is not what event {seq} sealed: edited"
    assert any(line.startswith("  budget_totals ") for line in lines[2:])


def test_a_reader_makes_no_key_beside_a_ledger_no_broker_has_keyed(tmp_path: Path):
    path = tmp_path / "ledger.db"
    Ledger(path, exclusive=False).close()
    assert not path.with_name("ledger.db.key").exists()
    assert not path.with_name("ledger.db.head").exists()
