"""The folder a socket lives in, made ready or refused.

In SVC_CONSOLE_HOME the folder is the console's own and is kept owner-only. Anywhere else (an
agents' socket in `/run/svc-console`, shared with agents of other users) it is checked as
OpenSSH checks the paths it trusts, and never changed: the folder and each folder above it must
belong to root or to the console's owner, and none may be writable by others (a folder above may
be, when its sticky bit stops others from renaming what is in it, as in /tmp). A folder others can
write lets them put their own socket in the console's place.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from svc_console.core.private_files import ensure_private_dir


class UnsafeFolder(OSError):
    """The message says which folder and why, and what to do."""


def prepare_folder(folder: Path, *, home: Path | None, opened: bool) -> None:
    """Make the socket's `folder` ready: create it when missing (traversable by others only when
    the socket is `opened` to them), then refuse it if it is not safe."""
    folder = folder.absolute()
    inside_home = home is not None and (folder == home or home in folder.parents)
    if inside_home:
        if opened:
            raise UnsafeFolder(
                f"the agents' socket is inside SVC_CONSOLE_HOME ({home}), which only you can"
                " enter: put it where agents can reach it, e.g."
                " SVC_CONSOLE_SOCKET=/run/svc-console/agents.sock"
            )
        ensure_private_dir(folder)
        return
    if not folder.exists():
        folder.mkdir(parents=True, mode=0o711 if opened else 0o700)
    problem = unsafe(folder)
    if problem is not None:
        raise UnsafeFolder(f"refusing to put a socket in {folder}: {problem}")


def unsafe(folder: Path) -> str | None:
    """Why `folder` is not safe for the console's socket, or None."""
    owner = os.getuid()
    current = folder
    while True:
        info = current.stat()
        mode = stat.S_IMODE(info.st_mode)
        if info.st_uid not in (0, owner):
            return f"{current} belongs to uid {info.st_uid}, neither root nor you"
        sticky = bool(mode & stat.S_ISVTX) and current != folder
        if mode & 0o022 and not sticky:
            return (
                f"{current} is writable by others (mode {mode:o}): make it writable by its"
                " owner only, or choose another folder"
            )
        if current.parent == current:
            return None
        current = current.parent
