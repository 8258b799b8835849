"""Why a ledger is not opened: each refusal a line that says why and what to do.

The ledger's file is refused when it (or a file SQLite or the writer's lock opens beside it) is a
symbolic link or not a regular file: writing through a link changes a file elsewhere, perhaps
outside the home. Readers and the writer check alike.
"""

from __future__ import annotations

import os
import sqlite3
import stat
from pathlib import Path


class LedgerRefused(Exception):
    """The ledger cannot be opened for a broker; the message says why and what to do."""


class LedgerLocked(LedgerRefused):
    """Another broker already holds this (SQLite) ledger."""


class UnsafeLedgerFile(LedgerRefused, sqlite3.DatabaseError):
    """The ledger's file (or its lock, its WAL) is a symbolic link or not a file: writing through
    it would change a file elsewhere, perhaps outside the home. A reader meets it as any other
    failed read (a sqlite3 error)."""


class CorruptLedger(LedgerRefused):
    """The ledger's file is not a database SQLite can read."""


# The files SQLite and the writer's lock open beside the ledger, following a link if one is there.
_BESIDE = ("", "-wal", "-shm", ".lock")


def refuse_unsafe_file(path: Path) -> None:
    """Raise UnsafeLedgerFile when the ledger's path, or a file opened beside it, is a symbolic
    link or anything but a regular file; a missing one is made later, as a file."""
    for suffix in _BESIDE:
        place = Path(f"{path}{suffix}")
        try:
            info = place.lstat()
        except FileNotFoundError:
            continue
        if stat.S_ISLNK(info.st_mode):
            raise UnsafeLedgerFile(
                f"{place} is a symbolic link (to {os.readlink(place)}): the ledger is kept in"
                " files of its own in the home; put the file itself there"
            )
        if not stat.S_ISREG(info.st_mode):
            raise UnsafeLedgerFile(f"{place} is not a regular file; move it away")
