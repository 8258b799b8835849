"""Backups of a SQLite ledger that are checked before they are trusted.

`backup` copies the ledger with SQLite's online backup API in one step: one read transaction, so
the copy is one moment of the ledger however the broker writes meanwhile (WAL lets it go on), and
the copy is a single file (no WAL beside it), owner-only, never written over an existing file.

`restore` copies the backup beside the ledger, verifies that copy's audit chain with the ledger's
own key (`audit.verify`: every link, and the tables against the events), and only then puts it in
place. It refuses a chain shorter than the one it would replace unless told (`older`), refuses
while a broker holds the ledger (the broker's own lock, `engine.WriterLock`, held until the copy is
in place), and keeps the replaced ledger beside it (`ledger.db.replaced-<time>`, its WAL and head
file with it) rather than deleting it. The audit key is never copied into a backup: kept apart,
it is what tells a tampered backup from a real one.

A ledger on PostgreSQL is backed up with `pg_dump` (docs/operations.md), not here.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path

from svc_console.ledger import audit_chain, engine
from svc_console.ledger.audit import AuditError, open_read_only, verify


class BackupError(Exception):
    """Nothing was backed up or restored; the message says why and what to do."""


@dataclass(frozen=True)
class Backup:
    path: Path
    head: tuple[int, str] | None  # the chain's last event, None for a ledger with no event
    verified: bool  # whether its chain was checked with the key (False: no key at hand)


@dataclass(frozen=True)
class Restored:
    head: tuple[int, str] | None
    replaced: Path | None  # where the ledger it replaced is kept
    replaced_events: int  # how long that ledger's chain was


def head_of(path: Path) -> tuple[int, str] | None:
    """The last event (seq, hash) of the ledger file at `path`, read-only; None with no event."""
    conn = _open_read_only(path)
    try:
        row = conn.execute("SELECT seq, hash FROM events ORDER BY seq DESC LIMIT 1").fetchone()
    except sqlite3.Error as exc:
        raise BackupError(f"cannot read {path} as a ledger: {exc}") from None
    finally:
        conn.close()
    return (int(row[0]), str(row[1])) if row else None


def backup(ledger: Path, destination: Path, key: bytes | None) -> Backup:
    """Copy `ledger` to the new file `destination` and verify the copy with `key` (None: the
    copy is made but its chain cannot be checked here)."""
    destination = destination.expanduser().absolute()
    if destination.exists() or destination.is_symlink():
        raise BackupError(f"{destination} exists already: give a new file name")
    if not destination.parent.is_dir():
        raise BackupError(f"no folder {destination.parent} to write the backup in")
    source = _open_read_only(ledger)
    partial = _fresh(destination)
    try:
        copy = sqlite3.connect(partial)
        try:
            source.backup(copy)  # pages=-1: the whole file in one step, one snapshot
            copy.execute("PRAGMA journal_mode=DELETE")  # one file, no WAL beside it
        finally:
            copy.close()
        head = head_of(partial)
        if key is not None:
            _verified(partial, key, head, "the backup just made")
        os.link(partial, destination)  # refuses a file made there meanwhile
    except sqlite3.Error as exc:
        raise BackupError(f"cannot back up {ledger}: {exc}") from None
    except FileExistsError:
        raise BackupError(f"{destination} exists already: give a new file name") from None
    finally:
        source.close()
        with contextlib.suppress(FileNotFoundError):
            partial.unlink()
    return Backup(destination, head, key is not None)


def restore(source: Path, ledger: Path, key: bytes, *, older: bool = False) -> Restored:
    """Put the backup `source` in place of the ledger file `ledger`, once its chain verifies with
    `key`; the ledger replaced is kept beside it. Nothing changes when it refuses."""
    if not source.is_file():
        raise BackupError(f"no backup at {source}")
    lock = _writer_lock(ledger)
    staged = _fresh(ledger)
    try:
        shutil.copyfile(source, staged)  # what is verified is what is put in place
        head = _verified(staged, key, head_of(staged), str(source))
        current = _current_length(ledger, older)
        restored = head[0] if head else 0
        if restored < current and not older:
            raise BackupError(
                f"{source} holds {restored:,} audit events; the ledger at {ledger} holds"
                f" {current:,}: restoring would lose the last {current - restored:,}. To go back"
                " to the older ledger all the same, say --older (the current one is kept beside it)"
            )
        replaced = _set_aside(ledger)
        os.replace(staged, ledger)
        heads = audit_chain.HeadFile(ledger)  # the head beside it is the restored chain's
        try:
            heads.write(*(head or (0, audit_chain.GENESIS)))
        finally:
            heads.close()
    finally:
        with contextlib.suppress(FileNotFoundError):
            staged.unlink()
        lock.release()
    return Restored(head, replaced, current)


def _open_read_only(path: Path) -> sqlite3.Connection:
    try:
        return open_read_only(path)
    except AuditError as exc:
        raise BackupError(str(exc)) from None


def _fresh(beside: Path) -> Path:
    """A new owner-only file in `beside`'s folder, for a copy on its way there."""
    path = beside.with_name(f".{beside.name}.{os.getpid()}.partial")
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600))
    return path


def _verified(
    path: Path, key: bytes, head: tuple[int, str] | None, shown: str
) -> tuple[int, str] | None:
    """`head`, once the ledger at `path` is whole and its chain verifies with `key` up to it;
    else BackupError naming what is broken."""
    _whole(path, shown)
    try:
        report = verify(path, key=key, anchor=head or (0, audit_chain.GENESIS))
    except AuditError as exc:
        raise BackupError(f"{shown} cannot be verified: {exc}") from None
    if report.broken is not None:
        raise BackupError(
            f"{shown} does not verify: chain broken at event {report.broken.seq}:"
            f" {report.broken.why} (a backup tampered with, made of another ledger, or checked"
            " with another ledger's key)"
        )
    if report.problems:
        first = report.problems[0]
        raise BackupError(
            f"{shown} does not verify: its tables disagree with its audit chain"
            f" ({len(report.problems) + report.more_problems} problems; first: {first.why})"
        )
    return head


def _whole(path: Path, shown: str) -> None:
    """A damaged page the chain's walk never reads (an index, a table of no money) is still
    damage: SQLite's own check of every page first."""
    conn = _open_read_only(path)
    try:
        found = [row[0] for row in conn.execute("PRAGMA integrity_check(5)")]
    except sqlite3.Error as exc:
        raise BackupError(f"{shown} is damaged: {exc}") from None
    finally:
        conn.close()
    if found != ["ok"]:
        raise BackupError(f"{shown} is damaged: {found[0]}")


def _current_length(ledger: Path, older: bool) -> int:
    """How many events the chain being replaced holds (0: no ledger yet)."""
    if not ledger.exists():
        return 0
    try:
        head = head_of(ledger)
    except BackupError as exc:
        if older:
            return 0
        raise BackupError(
            f"{exc}; to replace it with the backup all the same, say --older (it is kept"
            " beside the restored one)"
        ) from None
    return head[0] if head else 0


def _writer_lock(ledger: Path) -> engine.WriterLock:
    try:
        return engine.WriterLock(ledger)
    except engine.LedgerLocked:
        raise BackupError(
            f"a broker is using {ledger}: stop it (the console, or svc-console serve) and"
            " restore again"
        ) from None


def _set_aside(ledger: Path) -> Path | None:
    """Move the ledger and the files that go with it (its WAL, its shared memory, its head) to
    `<ledger>.replaced-<time>`, where SQLite still opens it whole; None when there is none."""
    if not ledger.exists():
        return None
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    kept = ledger.with_name(f"{ledger.name}.replaced-{stamp}")
    number = 1
    while kept.exists():
        number += 1
        kept = ledger.with_name(f"{ledger.name}.replaced-{stamp}-{number}")
    for suffix in ("-wal", "-shm"):
        with contextlib.suppress(FileNotFoundError):
            os.replace(f"{ledger}{suffix}", f"{kept}{suffix}")
    with contextlib.suppress(FileNotFoundError):
        os.replace(audit_chain.head_path(ledger), audit_chain.head_path(kept))
    os.replace(ledger, kept)
    return kept
