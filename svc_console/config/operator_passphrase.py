"""The operator passphrase: what a same-user agent cannot read.

An agent running as the operator's own user can read every file the operator can, the ledger
and this one included, so what is kept is only a slow hash (`slow_hash`). Once set, every
decision outside the open TUI needs the passphrase, typed on a terminal, until operator accounts
exist (`operator_accounts`): then an account's token does instead. Where agents of the
operator's own user are accepted, decisions outside the TUI need one of the two, and are refused
while neither is set (`broker.operator_proof`). Such an agent can still guess it offline against
its hash, at the slow hash's pace, or set one itself while none is set, which a running console
ignores until its next start.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

from svc_console.config import slow_hash
from svc_console.core.private_files import read_private, write_private

MIN_LENGTH = 8


class PassphraseFileError(Exception):
    """The stored hash cannot be read; the message names the file and what to do."""


class OperatorPassphrase:
    def __init__(self, path: Path):
        self.path = path

    def is_set(self) -> bool:
        return self.path.exists()

    def set(self, new: str) -> str:
        """Keep `new`'s slow hash; returns it."""
        if len(new) < MIN_LENGTH:
            raise ValueError(f"a passphrase needs at least {MIN_LENGTH} characters")
        stored = slow_hash.encode(new)
        write_private(self.path, stored + "\n")
        return stored

    def verify(self, candidate: str) -> bool:
        """Whether `candidate` is the passphrase as the file holds it now; False when none is."""
        try:
            stored = read_private(self.path).strip()
        except FileNotFoundError:
            return False
        return _matches(stored, candidate, self.path)

    def pin(self) -> Pinned:
        """The passphrase as it is now, for a console's whole run: a same-user agent that
        deletes or rewrites the file afterwards changes nothing for the running console."""
        try:
            return Pinned(read_private(self.path).strip(), self.path)
        except FileNotFoundError:
            return Pinned(None, self.path)

    def clear(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()

    # The TUI offers to set one once, at the first start that needs it: whether it has.
    @property
    def _offered(self) -> Path:
        return self.path.with_name(self.path.name + ".offered")

    def offered(self) -> bool:
        return self._offered.exists()

    def mark_offered(self) -> None:
        write_private(self._offered, "the TUI offered to set the operator passphrase\n")


class Pinned:
    def __init__(self, stored: str | None, path: Path):
        self._stored, self._path = stored, path

    def is_set(self) -> bool:
        return self._stored is not None

    def set(self, new: str) -> None:
        """Set the passphrase from the console's own process (its TUI, at the operator's
        keyboard): written for the next starts, and in force for this one at once. Only here:
        a file written by anyone else counts from the next start."""
        self._stored = OperatorPassphrase(self._path).set(new)

    def verify(self, candidate: str) -> bool:
        return self._stored is not None and _matches(self._stored, candidate, self._path)


def _matches(stored: str, candidate: str, path: Path) -> bool:
    try:
        return slow_hash.matches(stored, candidate)
    except ValueError as exc:
        raise PassphraseFileError(
            f"{path} does not hold a passphrase hash ({exc}); remove it and set"
            " the passphrase again with svc-console operators passwd"
        ) from None
