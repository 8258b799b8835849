"""What the usage screen reads, and the one thing it asks: a sync. The console that runs the broker
gives it its `Runtime` (`RuntimeUsage`); a console attached to a broker running elsewhere gives
the same screen what it can read of that broker's ledger (`services.attached_console`), where the
sync and the background follower stay with the broker's own console.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Protocol

from svc_console.ledger.readers import Connection
from svc_console.ledger.usage_write import SyncResult

# What `s` says where the broker's console syncs.
SYNCED_ELSEWHERE = (
    "This console is attached to a broker running elsewhere: the console running it syncs the"
    " usage history from the service (in the background, and on s there). Nothing was fetched"
    " here; r reads again what it has stored."
)


class UsageSource(Protocol):
    @property
    def ledger_path(self) -> Path: ...

    @property
    def ledger_url(self) -> str | None: ...

    @property
    def exports(self) -> Path:
        """Where an export is proposed."""

    @property
    def follower(self) -> Any:
        """The background sync of this process (a `UsageFollower`), or None."""

    @property
    def market(self) -> Any:
        """The service the banner names, or None."""

    @property
    def agent_warning(self) -> str | None: ...

    @property
    def synced_elsewhere(self) -> bool:
        """True where the history is synced by another process (the broker's console): `s` says
        so, and `last_synced` reads from the ledger when that process last stored a sync."""

    def now(self) -> float: ...

    async def sync(self) -> SyncResult: ...

    def last_synced(self, conn: Connection) -> float | None: ...


class RuntimeUsage:
    """The console running the broker: its ledger, its clock, its follower, its sync."""

    synced_elsewhere = False

    def __init__(self, runtime: Any) -> None:
        assert runtime.ledger is not None, "the usage screen needs a started runtime"
        self._runtime = runtime
        self.ledger_path: Path = runtime.ledger.path
        self.ledger_url: str | None = runtime.ledger.url
        self.exports: Path = runtime.paths.home / "exports"

    @property
    def follower(self) -> Any:
        return self._runtime.usage

    @property
    def market(self) -> Any:
        return self._runtime.market

    @property
    def agent_warning(self) -> str | None:
        return self._runtime.agent_warning

    def now(self) -> float:
        broker = self._runtime.broker
        return broker.clock() if broker is not None else time.time()

    async def sync(self) -> SyncResult:
        return await self._runtime.sync_usage()  # type: ignore[no-any-return]

    def last_synced(self, conn: Connection) -> float | None:
        return None  # the follower says it, as it happens


def usage_source(runtime: Any) -> UsageSource:
    """The runtime's own source when it brings one (an attached console), else its `Runtime`'s."""
    own = getattr(runtime, "usage_source", None)
    return own() if own is not None else RuntimeUsage(runtime)
