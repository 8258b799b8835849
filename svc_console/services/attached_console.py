"""A console attached to a broker that already runs for this home (`svc-console serve`, or another
console): what the TUI holds in place of the `Runtime` it would otherwise start.

It starts nothing and stops nothing of the broker's: attaching connects to the operator socket and
opens the ledger read-only; leaving closes those two. The approvals screen and the usage screen
are served here (the usage history read from the ledger, read-only: its sync and the background
follower stay with the broker's own console); the screens that need the broker's own process
(the catalogue sync, the wallet's funding, the policy editor, the account forms, grants) say
that the console running the broker serves them (`serves`).
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

# The broker's client, the ledger's reader and the models are imported when the console
# attaches, after its first frame is on the terminal (as `Runtime` does for the broker).
if TYPE_CHECKING:
    from pathlib import Path

    from svc_console.config.paths import Paths
    from svc_console.ledger.readers import Connection
    from svc_console.ledger.usage_write import SyncResult
    from svc_console.services.attached_broker import AttachedBroker, Service

log = logging.getLogger(__name__)

# The screens an attached console shows; the others name the console that serves them.
SERVED = frozenset({"approvals", "usage"})
# The event the ledger keeps of a sync that stored a change (`ledger/usage_write.py`); a sync that
# found nothing new stores nothing, so this is the last time the history changed.
USAGE_SYNCED = "usage_synced"


class SyncedElsewhere(Exception):
    """A sync asked of an attached console: the broker's console syncs the usage history."""


class _Sandbox:
    """The embedded sandbox as the first frame's banner names it: by its address."""

    def __init__(self, base_url: str):
        self.base_url = base_url


class _Remembered:
    """The operator passphrase, checked by the broker as it checks every act's (its wait after
    wrong ones included), and once it matches kept in memory for this console's decisions: the
    broker asks for it on each one."""

    def __init__(self, passphrase: Any, console: AttachedConsole):
        self._passphrase, self._console = passphrase, console
        self.refusal: str | None = None  # the broker's word on the last wrong try

    def is_set(self) -> bool:
        # The file, as the embedded console reads it (before the broker is reached), or the
        # broker's word once it is.
        broker = self._console.broker
        if broker is not None:
            return broker.passphrase_required  # none with operator accounts: they replace it
        return self._passphrase.is_set()

    def verify(self, typed: str) -> bool:
        broker = self._console.broker
        # Checked in a worker: the console may have stopped (its broker let go) meanwhile.
        if broker is None:
            return False
        _, self.refusal = broker.check_from_thread({"passphrase": typed})
        if self.refusal is not None:
            return False
        broker.passphrase = typed
        return True


class _SignIn:
    """With operator accounts: the operator's name and token, checked by the broker as it
    checks every act's, then kept in memory and sent with each decision."""

    def __init__(self, console: AttachedConsole):
        self._console = console
        self.refusal: str | None = None  # the broker's word on the last wrong try

    def needed(self) -> bool:
        broker = self._console.broker
        return broker is not None and broker.operators_required

    @property
    def default_name(self) -> str:
        """`[operator] name` of settings.toml: who the console's owner decides as."""
        from svc_console.config.errors import SettingsError
        from svc_console.config.operator_settings import console_operator

        try:
            return console_operator(self._console.paths.settings) or ""
        except SettingsError:
            return ""

    def verify(self, name: str, token: str) -> bool:
        broker = self._console.broker
        if broker is None:  # the console stopped meanwhile: nobody to sign in to
            return False
        proved, self.refusal = broker.check_from_thread({"operator": name, "token": token})
        if proved is None:
            return False
        broker.operator = (proved, token)
        return True


class AttachedUsage:
    """What the usage screen reads in an attached console: the broker's ledger, read-only, with
    its URL where it lives on PostgreSQL. The sync from the service and the background follower
    need the broker's own process, and are not run here."""

    synced_elsewhere = True
    follower = None
    agent_warning = None  # said by the console that opened the agents' socket

    def __init__(self, console: AttachedConsole):
        self._console = console
        self.ledger_path = console.ledger_path
        self.ledger_url = console.ledger_url
        self.exports = console.paths.home / "exports"

    @property
    def market(self) -> Service | None:
        broker = self._console.broker
        return broker.market if broker is not None else None

    def now(self) -> float:
        return float(self._console.clock())

    async def sync(self) -> SyncResult:
        raise SyncedElsewhere(
            "the usage history is synced by the console running the broker; nothing was fetched"
        )

    def last_synced(self, conn: Connection) -> float | None:
        """When the broker's console last stored a change of the history, from the ledger."""
        row = conn.execute(
            "SELECT at FROM events WHERE type = ? ORDER BY seq DESC LIMIT 1", [USAGE_SYNCED]
        ).fetchone()
        return None if row is None else float(row[0])


class AttachedConsole:
    """The `Runtime` of an attached TUI: paths, the broker (over its socket), no runtime of its
    own to start or stop."""

    attached = True
    agent_warning = None  # said by the console that opened the agents' socket
    policy = None
    unsettled: tuple[Any, ...] = ()  # reported by the broker's own console at its start

    def __init__(
        self,
        paths: Paths,
        hello: dict[str, Any],
        *,
        clock: Any = time.time,
        ledger_url: str | None = None,
    ):
        """`ledger_url`: the PostgreSQL ledger the broker writes, where the settings do not name
        it (they are read at `start`, as the broker's console reads them)."""
        from svc_console.config.operator_passphrase import OperatorPassphrase

        self.paths, self.clock = paths, clock
        self.ledger_url = ledger_url
        service = hello.get("service") or {}
        self.sandboxed = bool(service.get("sandbox"))
        # Where the first frame reads, and what its banner says, before the broker is reached.
        self.service = None if self.sandboxed else service
        self.sandbox = _Sandbox(str(service.get("base_url") or "")) if self.sandboxed else None
        self.broker: AttachedBroker | None = None
        self.passphrase = _Remembered(OperatorPassphrase(paths.operator_passphrase), self)
        self.sign_in = _SignIn(self)

    @property
    def ledger_path(self) -> Path:
        return self.paths.ledger(sandbox=self.sandboxed)

    def serves(self, screen: str) -> bool:
        if screen == "usage" and self.apart:
            return False  # read from the ledger, which the broker's user alone reads
        return screen in SERVED

    @property
    def apart(self) -> bool:
        """Whether the broker runs as a user of its own, its ledger out of this console's reach:
        the queue is then read over the socket, and the usage history is not shown here."""
        return self.broker is not None and not self.broker.reads_ledger

    def usage_source(self) -> AttachedUsage:
        return AttachedUsage(self)

    async def start(self) -> AttachedBroker:
        from svc_console.services.attached_broker import AttachedBroker

        if self.ledger_url is None and not self.sandboxed:
            # A team's ledger on PostgreSQL, named as the broker's console finds it; sandbox
            # play stays in its local file, there as here.
            from svc_console.config.ledger_url import ledger_url

            self.ledger_url = ledger_url(self.paths)
        broker = AttachedBroker(
            self.paths.operator_socket,
            self.ledger_path,
            clock=self.clock,
            ledger_url=self.ledger_url,
        )
        await broker.attach()
        self.broker = broker
        return broker

    async def stop(self, *, leaving: bool = False) -> None:
        """Leave the broker as it was: only this console's connection and reader close."""
        if self.broker is not None:
            await self.broker.detach()
            self.broker = None
