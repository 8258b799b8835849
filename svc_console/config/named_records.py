"""Owner-only JSON files of named records (the agent registry, the operator accounts), changed by
one command at a time: read, changed and written again under an exclusive lock, so two commands
adding at once take turns instead of one losing the other's record."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from collections.abc import Callable, Iterator
from dataclasses import asdict
from pathlib import Path
from typing import Any, TypeVar

from svc_console.core.private_files import ensure_private_dir, write_private

R = TypeVar("R")


@contextlib.contextmanager
def changing(path: Path, section: str, read: Callable[[], dict[str, R]]) -> Iterator[dict[str, R]]:
    """The records as `read` gives them, to change in place; written back as `{section: {name:
    fields}}` (each a dataclass whose `name` is its key) when the block ends without an error."""
    lock_path = path.with_name(f".{path.name}.lock")
    ensure_private_dir(path.parent)
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        records = read()
        yield records
        fields: dict[str, Any] = {
            name: {k: v for k, v in asdict(record).items() if k != "name"}
            for name, record in sorted(records.items())
        }
        write_private(path, json.dumps({section: fields}, indent=2) + "\n")
    finally:
        os.close(fd)
