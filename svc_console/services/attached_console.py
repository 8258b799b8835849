"""A console attached to a broker that already runs for this home (`svc-console serve`, or another
console): what the TUI holds in place of the `Runtime` it would otherwise start.

It starts nothing and stops nothing of the broker's: attaching connects to the operator socket and
opens the ledger read-only; leaving closes those two. Only the approvals screen is served here;
the screens that need the broker's own process (the catalogue sync, the wallet's funding, the
policy editor, usage sync, the account forms, grants) say that the console running the broker
serves them (`serves`).
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

from svc_console.agent import Agent, AgentError
from svc_console.services.attached_broker import CLIENT, AttachedBroker

if TYPE_CHECKING:
    from pathlib import Path

    from svc_console.config.paths import Paths

log = logging.getLogger(__name__)

# The screens an attached console shows; the others name the console that serves them.
SERVED = frozenset({"approvals"})


def running_broker(paths: Paths) -> dict[str, Any] | None:
    """The hello of the broker answering on this home's operator socket, or None when none
    does (no socket, or one a stopped console left behind)."""
    if not paths.operator_socket.exists():
        return None
    client = Agent(None, paths.operator_socket, token="", client=CLIENT, timeout_s=5.0)
    try:
        return client.connect()
    except AgentError as exc:
        log.info("no broker answers on %s: %s", paths.operator_socket, exc.message)
        return None
    finally:
        client.close()


class _Sandbox:
    """The embedded sandbox as the first frame's banner names it: by its address."""

    def __init__(self, base_url: str):
        self.base_url = base_url


class _Remembered:
    """The operator passphrase, checked as the embedded console checks it, and once it matches
    kept in memory for this console's decisions: the broker asks for it on each one."""

    def __init__(self, passphrase: Any, broker: AttachedBroker):
        self._passphrase, self._broker = passphrase, broker

    def is_set(self) -> bool:
        # The file, as the embedded console reads it (before the broker is reached), or the
        # broker's word once it is.
        return self._broker.passphrase_required or self._passphrase.is_set()

    def verify(self, typed: str) -> bool:
        if not self._passphrase.verify(typed):
            return False
        self._broker.passphrase = typed
        return True


class AttachedConsole:
    """The `Runtime` of an attached TUI: paths, the broker (over its socket), no runtime of its
    own to start or stop."""

    attached = True
    agent_warning = None  # said by the console that opened the agents' socket
    policy = None
    unsettled: tuple[Any, ...] = ()  # reported by the broker's own console at its start

    def __init__(self, paths: Paths, hello: dict[str, Any], *, clock: Any = time.time):
        from svc_console.config.operator_passphrase import OperatorPassphrase

        self.paths, self.clock = paths, clock
        service = hello.get("service") or {}
        self.sandboxed = bool(service.get("sandbox"))
        # Where the first frame reads, and what its banner says, before the broker is reached.
        self.service = None if self.sandboxed else service
        self.sandbox = _Sandbox(str(service.get("base_url") or "")) if self.sandboxed else None
        self.broker = AttachedBroker(paths.operator_socket, self.ledger_path, clock=clock)
        self.passphrase = _Remembered(OperatorPassphrase(paths.operator_passphrase), self.broker)

    @property
    def ledger_path(self) -> Path:
        return self.paths.ledger(sandbox=self.sandboxed)

    def serves(self, screen: str) -> bool:
        return screen in SERVED

    async def start(self) -> AttachedBroker:
        await self.broker.attach()
        return self.broker

    async def stop(self, *, leaving: bool = False) -> None:
        """Leave the broker as it was: only this console's connection and reader close."""
        await self.broker.detach()
