"""The key of a ledger's audit chain, kept outside the ledger: in the OS keyring when one works,
otherwise in an owner-only file beside the ledger (`<ledger>.key`).

Whoever can write the ledger but not read the key cannot forge a link of the chain; with the key
in the keyring, that is whoever has the file alone (a copy, a backup, a synced folder).
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path
from typing import Any

from svc_console.config.credentials import usable_keyring
from svc_console.core.private_files import read_private

SERVICE = "svc-console audit key"


class NoAuditKey(Exception):
    """The ledger's audit key is nowhere to be found (verification cannot check the links)."""


def key_file(ledger: Path) -> Path:
    return ledger.with_name(ledger.name + ".key")


def audit_key(ledger: Path, *, create: bool = True, backend: Any = ...) -> bytes:
    """The ledger's key; made (32 random bytes) the first time when `create`, else NoAuditKey."""
    backend = usable_keyring() if backend is ... else backend
    name = str(ledger.absolute())
    if backend is not None:
        stored = backend.get_password(SERVICE, name)
        if stored:
            return bytes.fromhex(stored)
    path = key_file(ledger)
    if path.exists():
        return bytes.fromhex(read_private(path).strip())
    if not create:
        raise NoAuditKey(
            f"no audit key for {ledger} (neither in the OS keyring nor in {path}):"
            " the chain's links cannot be checked without it"
        )
    key = secrets.token_bytes(32)
    if backend is not None:
        backend.set_password(SERVICE, name, key.hex())
    else:
        # Created exclusively: two processes opening a new ledger never keep different keys.
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        except FileExistsError:
            return bytes.fromhex(read_private(path).strip())
        with os.fdopen(fd, "w") as out:
            out.write(key.hex() + "\n")
    return key
