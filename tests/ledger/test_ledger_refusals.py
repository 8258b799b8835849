"""A ledger file that is no database, or a symbolic link (into the home or out of it), is refused
by `serve` in one line, never a traceback, and left exactly as it was: nothing written through
the link, no WAL made beside its target. A read (`usage export`) refuses the link the same way."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from svc_console.config.paths import resolve_paths
from svc_console.ledger import Ledger, LedgerRefused

CLI = [sys.executable, "-m", "svc_console"]


def run(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *argv], capture_output=True, text=True, timeout=120)


def fingerprint(folder: Path) -> dict[str, str]:
    """Every file of a folder, by name, with the digest of its bytes."""
    return {
        path.name: hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(folder.iterdir())
        if path.is_file() and not path.is_symlink()
    }


def one_line(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode != 0, done
    assert "Traceback" not in done.stderr and done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith("svc-console: ")
    return done.stderr.strip()


def a_real_ledger(path: Path) -> None:
    Ledger(path).close()


def test_a_file_that_is_no_database_is_refused_in_one_line(home: Path):
    ledger = resolve_paths().ledger(sandbox=True)
    ledger.write_bytes(os.urandom(20_000))
    before = fingerprint(home)
    said = one_line(run("serve"))
    assert said == (
        f"svc-console: {ledger} is not a ledger SQLite can read (file is not a database):"
        " restore it from a backup, or move it away to start an empty one"
    )
    after = fingerprint(home)
    assert after[ledger.name] == before[ledger.name]


def test_a_ledger_whose_schema_is_damaged_is_refused_in_one_line(home: Path):
    ledger = resolve_paths().ledger(sandbox=True)
    a_real_ledger(ledger)
    data = bytearray(ledger.read_bytes())
    data[100:4096] = os.urandom(3996)  # the schema's page, after the 100-byte header
    ledger.write_bytes(bytes(data))
    said = one_line(run("serve"))
    assert said.startswith(f"svc-console: {ledger} is not a ledger SQLite can read (")
    with pytest.raises(LedgerRefused):
        Ledger(ledger)


@pytest.mark.parametrize("where", ["out of the home", "in the home"])
def test_a_symlinked_ledger_is_refused_and_nothing_is_written_through_it(
    home: Path, tmp_path: Path, where: str
):
    ledger = resolve_paths().ledger(sandbox=True)
    target_folder = tmp_path / "elsewhere" if where == "out of the home" else home / "kept"
    target_folder.mkdir(mode=0o700)
    target = target_folder / "ledger.db"
    a_real_ledger(target)
    for beside in target_folder.glob("ledger.db*"):
        if beside != target:
            beside.unlink()
    ledger.symlink_to(target)
    before = fingerprint(target_folder)
    said = one_line(run("serve"))
    assert said == (
        f"svc-console: {ledger} is a symbolic link (to {target}): the ledger is kept in files"
        " of its own in the home; put the file itself there"
    )
    assert fingerprint(target_folder) == before  # no write, no WAL, no lock beside it
    exported = run("usage", "export")
    assert one_line(exported).endswith(
        f"{ledger} is a symbolic link (to {target}): the ledger"
        " is kept in files of its own in the home; put the file"
        " itself there"
    )
    assert exported.stdout == ""


def test_a_symlinked_wal_is_refused(home: Path, tmp_path: Path):
    ledger = resolve_paths().ledger(sandbox=True)
    a_real_ledger(ledger)
    elsewhere = tmp_path / "wal"
    elsewhere.write_bytes(b"")
    Path(f"{ledger}-wal").unlink(missing_ok=True)
    Path(f"{ledger}-wal").symlink_to(elsewhere)
    said = one_line(run("serve"))
    assert said.startswith(f"svc-console: {ledger}-wal is a symbolic link (to {elsewhere})")
    assert elsewhere.read_bytes() == b""
