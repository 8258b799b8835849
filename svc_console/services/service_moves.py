"""Moving the operator's keys, ledger and policies into the service's home, and back: what moves
where (pure, from a listing: `--dry-run` prints it), what stops a move, and the move itself,
which verifies every ledger's audit chain where it landed and undoes itself when one fails.

Everything in the operator's svc-console home moves but the sockets and the operator's own
folders (logs, themes, exports), and the spec's wallet files from the operator's home with it:
an agent of the operator's user must find no key left behind.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

KEPT = frozenset({"logs", "themes", "exports"})  # the operator's own: they stay
# The spec's files in the operator's home (`~`), when SVC_CONSOLE_HOME did not put them in it.
WALLET_FILES = (Path(".svc-agentwallet") / "config.json", Path(".svc-wallet.json"))
WALLET_FOLDER = ".svc-agentwallet"


@dataclass(frozen=True)
class Where:
    """The operator's svc-console home, and what the spec calls `~` (the same folder when
    SVC_CONSOLE_HOME set it)."""

    home: Path
    user_home: Path

    @property
    def wallet_files(self) -> list[Path]:
        return [] if self.user_home == self.home else [self.user_home / f for f in WALLET_FILES]


@dataclass(frozen=True)
class Move:
    source: Path
    target: Path

    def says(self) -> str:
        return f"move {self.source} to {self.target}"


def listing(folder: Path) -> list[str]:
    """The names in `folder` that a move takes: not sockets, not the operator's own folders."""
    if not folder.is_dir():
        return []
    return sorted(
        entry.name
        for entry in folder.iterdir()
        if entry.name not in KEPT and not stat.S_ISSOCK(entry.lstat().st_mode)
    )


def moves_in(
    where: Where, service_home: Path, names: Iterable[str], present: set[Path]
) -> list[Move]:
    """Into the service's home: each of `names` (the operator's home's `listing`), and the
    wallet files of `~` that are `present`."""
    moves = [Move(where.home / name, service_home / name) for name in sorted(names)]
    for found in where.wallet_files:
        if found in present:
            moves.append(Move(found, service_home / found.relative_to(where.user_home)))
    return moves


def moves_back(where: Where, service_home: Path, names: Iterable[str]) -> list[Move]:
    """Back where they came from: each of `names` (the service home's `listing`), the wallet
    files to `~` when they came from there."""
    moves = []
    for name in sorted(names):
        if where.wallet_files and name == WALLET_FOLDER:
            folder = service_home / name
            moves += [
                Move(folder / f.name, where.user_home / name / f.name) for f in _files(folder)
            ]
        elif where.wallet_files and name == WALLET_FILES[1].name:
            moves.append(Move(service_home / name, where.user_home / name))
        else:
            moves.append(Move(service_home / name, where.home / name))
    return moves


def _files(folder: Path) -> list[Path]:
    return sorted(folder.iterdir()) if folder.is_dir() else []


def problems(moves: list[Move]) -> list[str]:
    """Why these moves cannot be made, one line each: a target already there, or a secret held
    in the operator's OS keyring, which another user cannot read."""
    found = []
    for move in moves:
        if os.path.lexists(move.target):
            found.append(f"{move.target} is already there: move it away first")
        if move.source.name.endswith(".db") and not _beside(move, ".key", moves):
            found.append(
                f"the audit key of {move.source} is not beside it (it is in your OS keyring):"
                f" write it to {move.source}.key (owner-only) first"
            )
        if _secrets_in_keyring(move.source):
            found.append(
                f"{move.source} keeps its secrets in your OS keyring, which the service cannot"
                " read: save them to the files (no keyring) first"
            )
    return found


def _beside(move: Move, suffix: str, moves: list[Move]) -> bool:
    return any(other.source == move.source.with_name(move.source.name + suffix) for other in moves)


def _secrets_in_keyring(path: Path) -> bool:
    candidates = [path] if path.is_file() else []
    if path.name == WALLET_FOLDER:
        candidates = _files(path)
    for candidate in candidates:
        if candidate.suffix != ".json":
            continue
        try:
            held = json.loads(candidate.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(held, dict) and held.get("secretsIn") == "keyring":
            return True
    return False


def move_all(moves: list[Move], owner: tuple[int, int]) -> None:
    """Make the moves, giving what moved (and the folders made for it) to `owner` (uid, gid),
    owner-only. A move that fails puts back what moved before it, then raises."""
    done: list[Move] = []
    try:
        for move in moves:
            _private_folders(move.target.parent, owner)
            shutil.move(move.source, move.target)
            done.append(move)
            _own(move.target, owner)
            _drop_emptied(move.source.parent)
    except BaseException:
        undo(done)
        raise


def undo(done: list[Move]) -> None:
    """Put back what moved (owned as the folder it returns to is)."""
    for move in reversed(done):
        folder = move.source.parent
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        shutil.move(move.target, move.source)
        info = folder.stat()
        _own(move.source, (info.st_uid, info.st_gid))
        _drop_emptied(move.target.parent)


def _drop_emptied(folder: Path) -> None:
    """The wallet's folder, emptied by its move, goes too: nothing is left where it was."""
    if folder.name == WALLET_FOLDER and not any(folder.iterdir()):
        folder.rmdir()


def _private_folders(folder: Path, owner: tuple[int, int]) -> None:
    missing = [folder, *folder.parents]
    missing = [f for f in missing if not f.exists()]
    for made in reversed(missing):
        made.mkdir(mode=0o700)
        os.chown(made, *owner)


def _own(path: Path, owner: tuple[int, int]) -> None:
    """`path` and all inside it to `owner`, with no one else's access."""
    for item in [path, *(path.rglob("*") if path.is_dir() and not path.is_symlink() else [])]:
        os.chown(item, *owner, follow_symlinks=False)
        if item.is_symlink():
            continue
        mode = stat.S_IMODE(item.lstat().st_mode)
        item.chmod(mode & 0o700)


def ledgers(moves: list[Move]) -> list[Path]:
    """The ledger files among what moved, where they landed: each is verified there."""
    return [
        m.target for m in moves if m.target.name.startswith("ledger") and m.target.suffix == ".db"
    ]


def verify_ledgers(paths: list[Path]) -> str | None:
    """Why a ledger's audit chain does not verify where it lies, or None when all do."""
    from svc_console.ledger.audit import AuditError, verify

    for path in paths:
        sidecars = [path.with_name(path.name + end) for end in ("-wal", "-shm")]
        before = {sidecar for sidecar in sidecars if sidecar.exists()}
        try:
            report = verify(path)
        except AuditError as exc:
            return f"{path}: {exc}"
        finally:
            # What this reader made (as root) is left neither for the service to trip on nor
            # behind: an empty log and the index of a closed database.
            for made in set(sidecars) - before:
                made.unlink(missing_ok=True)
        if not report.intact:
            broken = report.broken.why if report.broken else report.problems[0].why
            return f"{path}: the audit chain does not verify after the move: {broken}"
    return None
