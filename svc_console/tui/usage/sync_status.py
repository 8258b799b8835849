"""When the usage history was last synced, as the usage screen says it: "synced 12:03 UTC", or why
the last sync failed. The history is synced in the background (`services/usage_follow.py`) and on
`s`; whichever happened last is what the operator is told. In a console attached to a broker
running elsewhere, that broker's console syncs: the screen says so, with the last time the ledger
shows a sync that stored a change.

An error's text may quote the service, so it is drawn through `core.sanitize.inert_line`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from rich.text import Text

from svc_console.core.sanitize import inert_line
from svc_console.tui.colors import Palette


@dataclass(frozen=True)
class SyncStatus:
    synced_at: float | None = None  # the last sync that succeeded
    error: str | None = None  # why the latest sync failed, when it did
    # Synced by the broker's console, not here: `synced_at` is then the last change it stored.
    elsewhere: bool = False

    @classmethod
    def of(cls, follower: Any) -> SyncStatus:
        """The background follower's (a `UsageFollower`, or None when there is none)."""
        if follower is None:
            return cls()
        return cls(follower.last_synced_at, follower.last_error)

    def succeeded(self, at: float) -> SyncStatus:
        return SyncStatus(at, None)

    def failed(self, error: str) -> SyncStatus:
        return SyncStatus(self.synced_at, error)


def _clock_time(at: float, now: float) -> str:
    """The time alone on the day it is read, with the date on any other."""
    same_day = time.gmtime(at)[:3] == time.gmtime(now)[:3]
    return time.strftime("%H:%M UTC" if same_day else "%Y-%m-%d %H:%M UTC", time.gmtime(at))


def sync_text(status: SyncStatus, now: float, colours: Palette, *, short: bool = False) -> Text:
    """`short`: on a narrow screen, where the long form would squeeze the totals beside it."""
    if status.elsewhere:
        # No time: not read yet, or no sync has stored anything yet.
        at = None if status.synced_at is None else _clock_time(status.synced_at, now)
        if short:
            return Text(f"synced {at}" if at else "synced elsewhere", colours.label)
        return Text(f"synced by the broker's console{f' · {at}' if at else ''}", colours.label)
    if status.error is not None:
        text = Text(f"sync failed: {inert_line(status.error, 80)}", colours.high)
        if status.synced_at is not None:
            text.append(f" · last synced {_clock_time(status.synced_at, now)}", colours.label)
        return text
    if status.synced_at is None:
        return Text("not synced yet", colours.label)
    return Text(f"synced {_clock_time(status.synced_at, now)}", colours.label)
