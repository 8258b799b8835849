"""Tamper evidence: `svc-console audit verify` walks the ledger's hash-chained events and names the
first broken link. Ledgers are written through the ledger's own API (and once by the broker over
the socket); the tampering is done directly in SQLite, as someone with the file would."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from svc_console.agent import AsyncAgent
from svc_console.cli import main
from svc_console.config.paths import Paths
from svc_console.core.models import SpendRequest
from svc_console.core.states import State
from svc_console.ledger import Ledger
from svc_console.ledger.audit import AuditError, verify

REQUESTS = 6  # three events each: received, inspecting, rejected
EVENTS = REQUESTS * 3


def write_ledger(path: Path, requests: int = REQUESTS) -> None:
    ledger = Ledger(path)
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


def test_an_intact_chain_verifies(ledger_file: Path):
    report = verify(ledger_file)
    assert report.intact and report.verified == EVENTS
    conn = sqlite3.connect(ledger_file)
    assert (
        report.head == conn.execute("SELECT hash FROM events WHERE seq = ?", [EVENTS]).fetchone()[0]
    )
    conn.close()


def test_an_empty_ledger_verifies(tmp_path: Path):
    path = tmp_path / "empty.db"
    write_ledger(path, requests=0)
    report = verify(path)
    assert report.intact and report.verified == 0


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
        (["UPDATE events SET hash = lower(hex(randomblob(32))) WHERE seq = 11"], 11, "edited"),
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
def test_tampering_is_found_at_the_right_event(ledger_file, statements, seq, why):
    tamper(ledger_file, *statements)
    report = verify(ledger_file)
    assert report.broken is not None
    assert report.broken.seq == seq
    assert why in report.broken.why
    assert report.verified == seq - 1


def test_an_edited_row_with_its_hash_recomputed_breaks_the_next_link(ledger_file: Path):
    import hashlib

    from svc_console.ledger.audit import payload

    conn = sqlite3.connect(ledger_file)
    at, request_id, kind, prev = conn.execute(
        "SELECT at, request_id, type, prev_hash FROM events WHERE seq = 6"
    ).fetchone()
    data = '{"reason":"approved after all"}'
    forged = hashlib.sha256((prev + payload(at, request_id, kind, data)).encode()).hexdigest()
    with conn:
        conn.execute("UPDATE events SET data = ?, hash = ? WHERE seq = 6", [data, forged])
    conn.close()
    report = verify(ledger_file)
    assert report.broken is not None and report.broken.seq == 7
    assert "not the hash of event 6" in report.broken.why


def test_batches_meet_without_a_seam(ledger_file: Path):
    # A batch boundary inside the chain changes nothing, and a break just after one is found.
    assert verify(ledger_file, batch=4).verified == EVENTS
    tamper(ledger_file, "UPDATE events SET data = '{}' WHERE seq = 9")
    assert verify(ledger_file, batch=4).broken.seq == 9  # type: ignore[union-attr]


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
    from helpers import eventually, operator

    async with AsyncAgent("bot", runtime.paths.socket) as agent:
        ticket = await agent.submit(
            endpoint_id="ep_websearch_basic", inputs={"query": "solar"}, purpose="audit me"
        )
        request_id = ticket["request_id"]
        await eventually(lambda: runtime.broker.get(request_id).state == State.pending)
        async with operator(runtime) as line:
            await line.call("approvals.approve", {"request_id": request_id})
        done = await agent.wait_for_outcome(request_id, 10)
    assert done["state"] == "succeeded"
    report = verify(runtime.paths.ledger(sandbox=True))
    assert report.intact and report.verified >= 6


# -- the command --------------------------------------------------------------------------------


def test_cli_exit_0_with_the_count(ledger_file: Path, capsys: pytest.CaptureFixture[str]):
    assert main(["audit", "verify", "--ledger", str(ledger_file)]) == 0
    out, err = capsys.readouterr()
    assert out.count("\n") == 1 and not err
    assert f"{EVENTS} events verified; chain intact, head " in out


def test_cli_exit_1_names_the_first_break(ledger_file: Path, capsys: pytest.CaptureFixture[str]):
    tamper(ledger_file, "DELETE FROM events WHERE seq = 13")
    assert main(["audit", "verify", "--ledger", str(ledger_file)]) == 1
    out, err = capsys.readouterr()
    assert out.count("\n") == 1 and not err
    assert "chain broken at event 13: event 13 is missing" in out
    assert "(12 events before it verified)" in out


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
