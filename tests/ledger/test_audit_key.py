"""The audit key is never made twice (DESIGN.md invariant 10): a ledger that has events and no key
is refused for writing, saying where the key was and how to put it back, and is left as it was
found; only a ledger with no event gets a new key. On both engines (the key stays beside the
ledger's path either way)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from test_audit import write_ledger

from svc_console.config.audit_key import key_file
from svc_console.ledger import Ledger, LedgerRefused
from svc_console.ledger.audit import verify
from svc_console.ledger.engine import open_database


def state_of(path: Path, url: str | None) -> str:
    """A digest of every event and the schema version, as the database holds them."""
    db = open_database(path, url)
    try:
        rows = db.execute("SELECT seq, hash FROM events ORDER BY seq").fetchall()
        return hashlib.sha256(
            repr((db.schema_version(), [tuple(r) for r in rows])).encode()
        ).hexdigest()
    finally:
        db.close()


def test_a_ledger_with_events_and_no_key_is_refused_and_left_as_it_was(
    tmp_path: Path, ledger_url: str | None
):
    path = tmp_path / "ledger.db"
    write_ledger(path, requests=2, url=ledger_url)
    before = state_of(path, ledger_url)
    kept = key_file(path).read_bytes()
    key_file(path).unlink()
    with pytest.raises(LedgerRefused) as refused:
        Ledger(path, url=ledger_url)
    said = str(refused.value)
    assert "\n" not in said
    assert "holds 6 audit events but its audit key is missing" in said
    assert f"it was in {key_file(path)}" in said and "restore it there from a backup" in said
    assert not key_file(path).exists()  # no key made
    assert state_of(path, ledger_url) == before  # nothing written, not even a migration
    # Put back, the same key opens it and every event verifies.
    key_file(path).write_bytes(kept)
    key_file(path).chmod(0o600)
    Ledger(path, url=ledger_url).close()
    assert verify(path, url=ledger_url).intact


def test_only_an_empty_ledger_gets_a_new_key(tmp_path: Path, ledger_url: str | None):
    path = tmp_path / "ledger.db"
    Ledger(path, url=ledger_url).close()  # made, no event yet
    key_file(path).unlink()
    Ledger(path, url=ledger_url).close()
    assert key_file(path).stat().st_mode & 0o777 == 0o600


def test_a_reader_opens_a_ledger_whose_key_is_missing_and_makes_none(tmp_path: Path):
    path = tmp_path / "ledger.db"
    write_ledger(path, requests=1)
    key_file(path).unlink()
    reader = Ledger(path, exclusive=False)
    try:
        assert reader.db.execute("SELECT count(*) FROM events").fetchone()[0] == 3
    finally:
        reader.close()
    assert not key_file(path).exists()


def test_the_message_names_the_keyring_entry_where_one_is_used(tmp_path: Path):
    from svc_console.config.audit_key import SERVICE, lost_key

    class Keyring:
        def get_password(self, service: str, name: str) -> None:
            return None

    path = tmp_path / "ledger.db"
    said = lost_key(path, 1_234, str(path), backend=Keyring())
    assert f"the OS keyring ({SERVICE!r}, {str(path)!r}) or {key_file(path)}" in said
    assert "holds 1,234 audit events" in said
