"""Live policies: the policy files are watched (watchfiles), and a saved change is in force
within a second, or, if it is invalid, reported while the last valid version stays in force.

The folders holding the files are watched rather than the files themselves: editors often save
by writing a new file and renaming it over the old one, which a watch on the old file would miss.
"""

from __future__ import annotations

import asyncio
import logging
import os
import pwd
from pathlib import Path

import watchfiles

from svc_console.policy.live import LivePolicy

log = logging.getLogger(__name__)
# Saves land in one burst of events: wait this long for the burst to end, then reload once.
DEBOUNCE_MS = 50
STEP_MS = 25


def owner_of(path: Path) -> str | None:
    """Who saved a file, as far as the system knows: its owner's login (None if unknown)."""
    try:
        return pwd.getpwuid(os.stat(path).st_uid).pw_name
    except (OSError, KeyError):
        return None


async def follow(live: LivePolicy, stop: asyncio.Event | None = None) -> None:
    """Reload `live` whenever one of its files changes, until cancelled (or `stop` is set)."""
    targets = {str(path.absolute()) for path in live.paths}
    folders = sorted({str(path.absolute().parent) for path in live.paths})
    present = [folder for folder in folders if Path(folder).is_dir()]
    for missing in sorted(set(folders) - set(present)):
        log.warning("policy folder %s does not exist: its files are not watched", missing)
    if not present:
        return

    def relevant(change: watchfiles.Change, path: str) -> bool:
        return path in targets

    async for changes in watchfiles.awatch(
        *present,
        watch_filter=relevant,
        debounce=DEBOUNCE_MS,
        step=STEP_MS,
        stop_event=stop,
        recursive=False,
    ):
        changed = sorted({path for _, path in changes})
        status = live.reload(saved_by=owner_of(Path(changed[0])) if changed else None)
        log.info("policy files changed (%s): %s", ", ".join(changed), status.state)
