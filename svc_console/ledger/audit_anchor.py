"""The chain's head kept outside the home: what catches a chain re-sealed with its own key.

Whoever holds the ledger and its key (the same user, a backup with both) can edit events and
compute every link again; the chain then holds link by link, and the head file beside the ledger
is rewritten with it. Only a head kept where that person cannot write tells: the event it names
must still be there with the hash it had. `svc-console audit anchor` writes one (a file outside
`SVC_CONSOLE_HOME`, or a line on stdout for a ticket); `audit verify --anchor FILE` checks the
chain against it (`audit.verify`'s `outside`). docs/audit.md says how to keep them.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path

from svc_console.core.usage import iso_instant, parse_instant

MAX_BYTES = 4096  # an anchor is one short JSON object


class AnchorError(Exception):
    """An anchor that cannot be written or read where asked; the message says why."""


@dataclass(frozen=True)
class Anchor:
    """The head of one ledger's chain (`seq`, `hash`) as it stood at `at`."""

    ledger: str  # the ledger it was taken of: a file's absolute path, or a URL without password
    seq: int
    hash: str
    at: float

    @property
    def head(self) -> tuple[int, str]:
        return self.seq, self.hash

    def text(self) -> str:
        """One line of JSON: what a file holds, and what a ticket can quote."""
        record = {
            "svc_console_anchor": 1,
            "ledger": self.ledger,
            "seq": self.seq,
            "hash": self.hash,
            "anchored_at": iso_instant(self.at),
        }
        return json.dumps(record, separators=(", ", ": "))


def taken(ledger: str, head: tuple[int, str], at: float | None = None) -> Anchor:
    return Anchor(ledger, head[0], head[1], time.time() if at is None else at)


def within(path: Path, folder: Path) -> bool:
    """Whether `path` (a file that may not exist yet) lies under `folder`, links followed."""
    where = Path(os.path.realpath(path.expanduser().absolute()))
    return where.is_relative_to(Path(os.path.realpath(folder)))


def write(path: Path, anchor: Anchor) -> Path:
    """Write the anchor into a new owner-only file at `path` (replacing one there), whole or not
    at all; returns where."""
    path = path.expanduser().absolute()
    if path.is_dir():
        raise AnchorError(f"{path} is a folder; give a file name")
    if not path.parent.is_dir():
        raise AnchorError(f"no folder {path.parent} to write the anchor in")
    partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
    with contextlib.suppress(FileNotFoundError):
        partial.unlink()
    try:
        fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(anchor.text() + "\n")
        os.replace(partial, path)
    except OSError as exc:
        with contextlib.suppress(FileNotFoundError):
            partial.unlink()
        raise AnchorError(f"cannot write {path}: {exc.strerror}") from None
    return path


def read(path: Path) -> Anchor:
    """The anchor in the file at `path`, checked; AnchorError says what is wrong with it."""
    try:
        with path.expanduser().open("rb") as source:
            data = source.read(MAX_BYTES + 1)
    except OSError as exc:
        raise AnchorError(f"cannot read the anchor {path}: {exc.strerror}") from None
    try:
        if len(data) > MAX_BYTES:
            raise ValueError("too long")
        record = json.loads(data.decode("utf-8"))
        seq, digest, ledger = record["seq"], record["hash"], record["ledger"]
        if not (isinstance(seq, int) and not isinstance(seq, bool) and seq > 0):
            raise ValueError("seq")
        if not (isinstance(digest, str) and len(digest) == 64):
            raise ValueError("hash")
        int(digest, 16)
        if not isinstance(ledger, str):
            raise ValueError("ledger")
        return Anchor(ledger, seq, digest.lower(), parse_instant(record["anchored_at"]))
    except (ValueError, KeyError, TypeError, UnicodeDecodeError):
        raise AnchorError(f"{path} is not an anchor written by svc-console audit anchor") from None
