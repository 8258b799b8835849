"""`svc-console audit anchor` and `audit verify --anchor`: the head kept outside the home catches a
chain rewritten and sealed again with its own key, which every check inside the home passes; the
anchor is refused inside the home. And `serve`, the TUI and the demo refuse a ledger with events
whose key is gone, in one line."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers import rejected_requests
from tui_support import until

from svc_console.cli import main
from svc_console.config.audit_key import audit_key, key_file
from svc_console.config.paths import Paths
from svc_console.ledger.audit_chain import GENESIS, head_path, link, stored_payload
from svc_console.ledger.engine import open_database

CLI = [sys.executable, "-m", "svc_console"]
EVENTS = 18  # six requests, three events each


def write_ledger(path: Path, requests: int = 6, url: str | None = None) -> None:
    rejected_requests(path, 0, requests, url)


def tamper(path: Path, statement: str) -> None:
    conn = sqlite3.connect(path)
    with conn:
        conn.execute(statement)
    conn.close()


def reseal(path: Path, url: str | None, seq: int | None = None, data: str = "") -> None:
    """What whoever holds the ledger and its key can do: edit event `seq` (if any), compute every
    link again with the key, and rewrite the head file to match the chain."""
    key = audit_key(path, create=False)
    db = open_database(path, url)
    try:
        with db.atomic():
            rows = db.execute(
                "SELECT seq, at, request_id, type, data FROM events ORDER BY seq"
            ).fetchall()
            previous = GENESIS
            for number, at, request_id, kind, text in rows:
                if number == seq:
                    text = data
                digest = link(key, previous, stored_payload(at, request_id, kind, text))
                db.execute(
                    "UPDATE events SET data = ?, prev_hash = ?, hash = ? WHERE seq = ?",
                    [text, previous, digest, number],
                )
                previous = digest
    finally:
        db.close()
    head = json.dumps({"seq": rows[-1][0], "hash": previous}).encode().ljust(127) + b"\n"
    head_path(path).write_bytes(head)


@pytest.fixture
def elsewhere(tmp_path: Path) -> Path:
    """A folder outside the home and the ledger's folder, as an audit share would be."""
    folder = tmp_path / "audit-share"
    folder.mkdir()
    return folder


@pytest.fixture
def ledger_file(tmp_path: Path, paths: Paths) -> Path:
    (tmp_path / "ledger").mkdir()
    path = tmp_path / "ledger" / "ledger.db"
    write_ledger(path)
    return path


def test_an_anchor_kept_elsewhere_catches_a_chain_sealed_again_with_its_key(
    ledger_file: Path, elsewhere: Path, capsys: pytest.CaptureFixture[str]
):
    anchor = elsewhere / "ledger.anchor"
    assert main(["audit", "anchor", "--ledger", str(ledger_file), "--to", str(anchor)]) == 0
    said = capsys.readouterr().out
    assert f"head {EVENTS}:" in said and f"audit verify --anchor {anchor}" in said
    assert anchor.stat().st_mode & 0o777 == 0o600
    record = json.loads(anchor.read_text())
    assert (record["ledger"], record["seq"]) == (str(ledger_file), EVENTS)
    verify = ["audit", "verify", "--ledger", str(ledger_file), "--anchor", str(anchor)]
    assert main(verify) == 0
    assert f"the anchor at event {EVENTS} holds" in capsys.readouterr().out

    reseal(ledger_file, None, 5, '{"reason":"approved after all"}')
    # Every check made inside the home passes: the links, the head file, the tables.
    assert main(["audit", "verify", "--ledger", str(ledger_file)]) == 0
    assert "chain intact" in capsys.readouterr().out
    # The anchor kept elsewhere does not.
    assert main(verify) == 1
    out = capsys.readouterr().out
    assert f"chain broken at event {EVENTS}: event {EVENTS} is not the one anchored outside" in out
    assert "sealed again with its key" in out


def test_events_cut_off_after_the_anchor_are_found_by_it(
    ledger_file: Path, elsewhere: Path, capsys: pytest.CaptureFixture[str]
):
    anchor = elsewhere / "a"
    assert main(["audit", "anchor", "--ledger", str(ledger_file), "--to", str(anchor)]) == 0
    tamper(ledger_file, f"DELETE FROM events WHERE seq > {EVENTS - 3}")
    reseal(ledger_file, None)  # the head file rewritten to the shorter chain
    assert main(["audit", "verify", "--ledger", str(ledger_file), "--anchor", str(anchor)]) == 1
    assert "the last 3 events were cut off" in capsys.readouterr().out


def test_an_anchor_printed_for_a_ticket_is_one_line_that_verify_reads(
    ledger_file: Path, elsewhere: Path, capsys: pytest.CaptureFixture[str]
):
    assert main(["audit", "anchor", "--ledger", str(ledger_file)]) == 0
    printed = capsys.readouterr().out
    assert printed.count("\n") == 1 and json.loads(printed)["seq"] == EVENTS
    ticket = elsewhere / "from-the-ticket.json"
    ticket.write_text(printed)
    assert main(["audit", "verify", "--ledger", str(ledger_file), "--anchor", str(ticket)]) == 0


def test_an_anchor_inside_the_home_or_beside_the_ledger_is_refused(
    ledger_file: Path, paths: Paths, elsewhere: Path, capsys: pytest.CaptureFixture[str]
):
    link_into_home = elsewhere / "into-home"
    link_into_home.symlink_to(paths.home, target_is_directory=True)
    for place, name in (
        (paths.home / "ledger.anchor", "SVC_CONSOLE_HOME"),
        (link_into_home / "ledger.anchor", "SVC_CONSOLE_HOME"),
        (ledger_file.parent / "ledger.anchor", "the ledger's folder"),
    ):
        command = ["audit", "anchor", "--ledger", str(ledger_file), "--to", str(place)]
        assert main(command) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and f"is inside {name}" in err and "keep it elsewhere" in err
        assert not place.exists()
    kept = paths.home / "kept.anchor"
    kept.write_text("{}")
    assert main(["audit", "verify", "--ledger", str(ledger_file), "--anchor", str(kept)]) == 2
    assert "is inside SVC_CONSOLE_HOME" in capsys.readouterr().err


def test_bad_anchors_and_broken_chains_are_one_line_and_anchor_nothing(
    ledger_file: Path, tmp_path: Path, elsewhere: Path, capsys: pytest.CaptureFixture[str]
):
    verify = ["audit", "verify", "--ledger", str(ledger_file), "--anchor"]
    garbage = elsewhere / "garbage"
    garbage.write_bytes(b"\x1b[2J not json")
    assert main([*verify, str(garbage)]) == 2
    err = capsys.readouterr().err
    assert "is not an anchor written by svc-console audit anchor" in err and "\x1b" not in err
    assert main([*verify, str(elsewhere / "absent")]) == 2
    assert "cannot read the anchor" in capsys.readouterr().err
    # An anchor of another ledger is not this one's rewrite: refused, with the way out.
    (tmp_path / "other").mkdir()
    other = tmp_path / "other" / "ledger.db"
    write_ledger(other, requests=1)
    theirs = elsewhere / "theirs"
    assert main(["audit", "anchor", "--ledger", str(other), "--to", str(theirs)]) == 0
    capsys.readouterr()
    assert main([*verify, str(theirs)]) == 2
    assert f"anchors {other}, not {ledger_file}: give that ledger" in capsys.readouterr().err
    # A chain that does not verify is never anchored.
    tamper(ledger_file, "UPDATE events SET data = '{}' WHERE seq = 2")
    mine = elsewhere / "mine"
    assert main(["audit", "anchor", "--ledger", str(ledger_file), "--to", str(mine)]) == 1
    out, err = capsys.readouterr()
    assert "chain broken at event 2" in out and "nothing anchored" in err
    assert not mine.exists()


def test_anchor_and_verify_the_postgresql_ledger_the_settings_name(
    paths: Paths,
    postgres: Any,
    elsewhere: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
):
    """On PostgreSQL the anchor names the database (URL without password); a chain sealed
    again in the database, its head file rewritten in the home, is caught the same way."""
    url = postgres.new_database()
    monkeypatch.setenv("SVC_BASE_URL", "https://svc.example")
    monkeypatch.setenv("SVC_LEDGER_URL", url)
    path = paths.ledger(sandbox=False)
    write_ledger(path, requests=2, url=url)
    anchor = elsewhere / "team-ledger.anchor"
    assert main(["audit", "anchor", "--to", str(anchor)]) == 0
    assert json.loads(anchor.read_text())["ledger"] == url
    assert main(["audit", "verify", "--anchor", str(anchor)]) == 0
    capsys.readouterr()
    reseal(path, url, 2, '{"reason":"never inspected"}')
    assert main(["audit", "verify"]) == 0
    capsys.readouterr()
    assert main(["audit", "verify", "--anchor", str(anchor)]) == 1
    assert "is not the one anchored outside the home" in capsys.readouterr().out


# -- the key is never made twice: every way the ledger is opened for writing -------------------


def keyless(paths: Paths) -> Path:
    """The sandbox's ledger, with events, its key file deleted."""
    paths.home.mkdir(parents=True, exist_ok=True, mode=0o700)
    path = paths.ledger(sandbox=True)
    write_ledger(path, requests=1)
    key_file(path).unlink()
    return path


def test_serve_refuses_a_ledger_with_events_and_no_key(paths: Paths):
    path = keyless(paths)
    done = subprocess.run([*CLI, "serve"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert "holds 3 audit events but its audit key is missing" in done.stderr
    assert f"it was in {key_file(path)}" in done.stderr and "restore it there" in done.stderr
    assert not key_file(path).exists()
    assert not os.path.exists(paths.socket)


async def test_the_console_and_the_demo_refuse_it_in_one_line(
    paths: Paths, capsys: pytest.CaptureFixture[str]
):
    from svc_console.runtime import Runtime
    from svc_console.tui.app import ConsoleApp

    path = keyless(paths)

    async def demo_agents(runtime: Any) -> None:
        raise AssertionError("the demo's agents never start on a refused ledger")

    for after_start in (None, demo_agents):
        app = ConsoleApp(Runtime(paths=paths), after_start=after_start, cursor_blink=False)
        async with app.run_test(size=(100, 30)) as pilot:
            await until(pilot, lambda app=app: app.return_code == 1)
        said = " ".join(capsys.readouterr().err.split())
        assert "svc-console could not start" in said and "its audit key is missing" in said
        assert not key_file(path).exists()
