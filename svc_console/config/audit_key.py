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


def lost_key(ledger: Path, events: int, shown: str, *, backend: Any = ...) -> str:
    """Why a ledger holding `events` events, and no key, is not opened for writing: a new key
    would leave every event so far failing `audit verify`. One line, with where the key was
    and how to put it back. `shown`: the ledger as the operator knows it (a file, or a URL)."""
    backend = usable_keyring() if backend is ... else backend
    places = f"{key_file(ledger)}"
    if backend is not None:
        places = f"the OS keyring ({SERVICE!r}, {str(ledger.absolute())!r}) or {places}"
    counted = f"{events:,} audit event{'s' if events != 1 else ''}"
    return (
        f"the ledger {shown} holds {counted} but its audit key is missing (it was in {places}):"
        " restore it there from a backup (a broker sharing a PostgreSQL ledger: copy the key"
        " file of one that writes it) and start again; no new key is made for a ledger with"
        " events, which would leave every one of them failing audit verify"
    )


def audit_key(ledger: Path, *, create: bool = True, backend: Any = ...) -> bytes:
    """The ledger's key; made (32 random bytes) the first time when `create`, else NoAuditKey.
    Only for a ledger with no event (or a chain from before keys, `audit_chain.rekey`): the
    ledger says when (`Ledger._audit_key`)."""
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
