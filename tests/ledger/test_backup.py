"""`svc-console ledger backup` and `ledger restore`: a backup is a verified, owner-only copy; a
restore puts it in place only once its chain verifies with the home's key, refuses a shorter chain
without --older and a ledger a broker holds, keeps what it replaces, and changes nothing when it
refuses (a damaged backup, a tampered one, one of another ledger, no key)."""

from __future__ import annotations

import hashlib
import shutil
import sqlite3
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import rejected_requests

from svc_console.cli import main
from svc_console.config.audit_key import key_file
from svc_console.ledger import Ledger


def requests_of(path: Path) -> dict[str, str]:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return dict(conn.execute("SELECT id, state FROM requests"))
    finally:
        conn.close()


def snapshot(folder: Path) -> dict[str, str]:
    """Every file of a folder and its content's digest: what "nothing changed" compares."""
    return {
        path.name: hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(folder.iterdir())
        if path.is_file() and not path.name.endswith(("-shm", "-wal", ".lock"))
    }


@pytest.fixture
def ledger(home: Path) -> Path:
    path = home / "ledger-sandbox.db"  # no service configured: the sandbox's ledger
    rejected_requests(path, 0, 6)
    return path


@pytest.fixture
def backup(ledger: Path, tmp_path: Path) -> Path:
    """A backup of the ledger, made from its home."""
    copy = tmp_path / "backup.db"
    assert main(["ledger", "backup", str(copy)]) == 0
    return copy


@pytest.fixture
def new_home(monkeypatch: pytest.MonkeyPatch, ledger: Path, backup: Path) -> Iterator[Path]:
    """Another console home, holding only the audit key the ledger was written with."""
    folder = Path(tempfile.mkdtemp(prefix="svc-new-"))
    shutil.copy2(key_file(ledger), key_file(folder / ledger.name))
    monkeypatch.setenv("SVC_CONSOLE_HOME", str(folder))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def test_a_backup_is_an_owner_only_copy_that_verifies_without_the_key_in_it(
    ledger: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    copy = tmp_path / "monday.db"
    assert main(["ledger", "backup", str(copy)]) == 0
    said = capsys.readouterr().out
    assert "18 audit events" in said and "verified with the ledger's audit key" in said
    assert copy.stat().st_mode & 0o777 == 0o600
    assert requests_of(copy) == requests_of(ledger)
    assert key_file(ledger).read_text().strip() not in copy.read_bytes().hex()
    assert not list(tmp_path.glob("monday.db*-wal")), "one file, no WAL beside it"
    assert main(["audit", "verify", "--ledger", str(copy), "--head", _head(said)]) == 2, (
        "the backup carries no key: checked only with the home's"
    )


def test_a_backup_never_writes_over_a_file(ledger: Path, tmp_path: Path, capsys):
    taken = tmp_path / "taken.db"
    taken.write_text("an earlier backup")
    assert main(["ledger", "backup", str(taken)]) == 1
    assert "exists already" in capsys.readouterr().err
    assert taken.read_text() == "an earlier backup"


def test_restored_into_a_new_home_with_the_key_it_verifies_and_holds_every_request(
    ledger: Path, backup: Path, new_home: Path, capsys: pytest.CaptureFixture[str]
):
    capsys.readouterr()
    restored = new_home / ledger.name
    assert main(["ledger", "restore", str(backup)]) == 0
    said = capsys.readouterr().out
    assert f"restored into {restored}" in said and "18 audit events" in said
    assert "replaced" not in said, "there was no ledger to replace"
    assert requests_of(restored) == requests_of(ledger)
    assert restored.stat().st_mode & 0o777 == 0o600
    assert main(["audit", "verify"]) == 0
    assert "18 events verified; chain intact, tables agree" in capsys.readouterr().out


def test_an_older_backup_is_refused_without_older_then_restored_keeping_the_newer(
    ledger: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    copy = tmp_path / "older.db"
    assert main(["ledger", "backup", str(copy)]) == 0
    rejected_requests(ledger, 6, 2)  # the ledger moves on: 24 events
    before = snapshot(ledger.parent)
    capsys.readouterr()
    assert main(["ledger", "restore", str(copy)]) == 1
    err = capsys.readouterr().err
    assert "holds 18 audit events" in err and "holds 24" in err and "--older" in err
    assert snapshot(ledger.parent) == before

    assert main(["ledger", "restore", str(copy), "--older"]) == 0
    assert "(24 events) is kept at" in capsys.readouterr().out
    assert set(requests_of(ledger)) == {f"req_{n:03d}" for n in range(6)}
    kept = [
        path
        for path in ledger.parent.glob("ledger-sandbox.db.replaced-*")
        if not path.name.endswith(("-wal", "-shm", ".head"))
    ]
    assert len(kept) == 1 and len(requests_of(kept[0])) == 8, "the newer ledger is kept whole"
    assert main(["audit", "verify"]) == 0, "the head beside the ledger is the restored chain's"


def test_a_damaged_backup_is_refused_and_nothing_changes(ledger: Path, tmp_path: Path, capsys):
    copy = tmp_path / "damaged.db"
    assert main(["ledger", "backup", str(copy)]) == 0
    data = bytearray(copy.read_bytes())
    data[len(data) // 2 : len(data) // 2 + 4096] = b"\xa5" * 4096
    copy.write_bytes(bytes(data))
    before = snapshot(ledger.parent)
    capsys.readouterr()
    assert main(["ledger", "restore", str(copy), "--older"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("svc-console: nothing restored:") and err.count("\n") == 1
    assert snapshot(ledger.parent) == before


@pytest.mark.parametrize(
    ("edit", "found"),
    [
        ("UPDATE requests SET max_usdc = 50000000 WHERE id = 'req_002'", "tables disagree"),
        ("UPDATE events SET data = replace(data, 'no 3', 'ok') WHERE seq = 12", "chain broken"),
        ("DELETE FROM events WHERE seq = 4", "chain broken at event 4"),
    ],
    ids=["a row of money edited", "an event edited", "an event deleted"],
)
def test_a_tampered_backup_is_refused_and_nothing_changes(
    ledger: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], edit: str, found: str
):
    copy = tmp_path / "tampered.db"
    assert main(["ledger", "backup", str(copy)]) == 0
    conn = sqlite3.connect(copy)
    with conn:
        conn.execute(edit)
    conn.close()
    before = snapshot(ledger.parent)
    capsys.readouterr()
    assert main(["ledger", "restore", str(copy), "--older"]) == 1
    assert found in capsys.readouterr().err
    assert snapshot(ledger.parent) == before


def test_a_backup_of_another_ledger_does_not_verify_with_this_homes_key(
    ledger: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    (tmp_path / "other").mkdir()
    other = tmp_path / "other" / "ledger.db"
    rejected_requests(other, 0, 9)  # longer, and written with a key of its own
    before = snapshot(ledger.parent)
    assert main(["ledger", "restore", str(other)]) == 1
    assert "chain broken at event 1" in capsys.readouterr().err
    assert snapshot(ledger.parent) == before


def test_without_the_key_nothing_is_restored(
    ledger: Path, backup: Path, new_home: Path, capsys: pytest.CaptureFixture[str]
):
    key_file(new_home / ledger.name).unlink()
    capsys.readouterr()
    assert main(["ledger", "restore", str(backup)]) == 1
    assert "no audit key for the ledger" in capsys.readouterr().err
    assert not (new_home / ledger.name).exists()


def test_a_ledger_a_broker_holds_is_not_replaced(ledger: Path, tmp_path: Path, capsys):
    copy = tmp_path / "backup.db"
    assert main(["ledger", "backup", str(copy)]) == 0
    held = Ledger(ledger)  # a broker's writer: it holds the home's lock
    try:
        before = snapshot(ledger.parent)
        capsys.readouterr()
        assert main(["ledger", "restore", str(copy)]) == 1
        assert "a broker is using" in capsys.readouterr().err
        assert snapshot(ledger.parent) == before
    finally:
        held.close()


def test_a_ledger_on_postgresql_is_sent_to_pg_dump(
    home: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys
):
    monkeypatch.setenv("SVC_BASE_URL", "https://marketplace.example")
    monkeypatch.setenv("SVC_LEDGER_URL", "postgresql://svc:secret@db.example/ledger")
    for command in (["backup", str(tmp_path / "b.db")], ["restore", str(tmp_path / "b.db")]):
        assert main(["ledger", *command]) == 2
        err = capsys.readouterr().err
        assert "pg_dump" in err and "docs/operations.md" in err and "secret" not in err
    assert not (tmp_path / "b.db").exists()


def _head(said: str) -> str:
    return said.split("head ")[1].split(",")[0]
