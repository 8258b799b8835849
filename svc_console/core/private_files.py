"""Files and folders only their owner can read: every file svc-console writes is made here.

A secret, a log line or a ledger may name agents, amounts and tokens, so nothing is ever written
with a wider mode, not even for a moment.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path


class NotPrivate(Exception):
    """A file that should be owner-only is readable by others; the message says how to fix it."""


def ensure_private_dir(path: Path) -> Path:
    """Create a folder readable by its owner only, tightening it if it already exists."""
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    if stat.S_IMODE(path.stat().st_mode) != 0o700:
        path.chmod(0o700)
    return path


def write_private(path: Path, text: str) -> None:
    """Write a file that only its owner can read, atomically (never a half-written secret).

    The temporary file is created afresh (O_EXCL, no symlink followed), so a leftover one with a
    wider mode can never lend it that mode."""
    ensure_private_dir(path.parent)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with contextlib.suppress(FileNotFoundError):
        tmp.unlink()
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise


def read_private(path: Path) -> str:
    """Read an owner-only file; refuse one that others can read (it may hold a secret)."""
    mode = stat.S_IMODE(path.stat().st_mode)
    if mode & 0o077:
        raise NotPrivate(f"{path} is readable by others (mode {mode:o}); run: chmod 600 {path}")
    return path.read_text()
