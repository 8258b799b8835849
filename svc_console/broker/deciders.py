"""Who decides a request, as the console observed it, and the one thing no decider may be: the
process that submitted it, or a process running under it.

The TUI decides in its own process; the CLI (or any tool of the operator's) over the operator
socket, where the kernel names the peer's uid and pid. The decider's evidence (channel, uid, pid,
process name) is recorded with the decision; nothing the caller says about itself is, except the
operator's name once their account's token proved it (or, in the TUI, the console's own
setting: the TUI is the owner's own terminal).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Literal

from svc_console.broker import errors
from svc_console.core import processes
from svc_console.core.models import Evidence, SpendRequest, Submitter


@dataclass(frozen=True)
class Peer:
    """A socket peer's credentials as the kernel reported them (SO_PEERCRED)."""

    pid: int
    uid: int
    gid: int


@dataclass(frozen=True)
class Decider:
    channel: Literal["tui", "cli"]
    uid: int | None
    pid: int | None
    operator: str | None = None  # the operator's account (or, in the TUI, its setting)

    @classmethod
    def this_process(cls, operator: str | None = None) -> Decider:
        """The TUI: the operator at the console's own terminal."""
        return cls("tui", os.getuid(), os.getpid(), operator)

    @classmethod
    def on_operator_socket(cls, peer: Peer | None, operator: str | None = None) -> Decider:
        return cls("cli", peer.uid if peer else None, peer.pid if peer else None, operator)

    @property
    def by(self) -> str:
        """What a decision's `by` says: the operator's name, else the channel."""
        return self.operator or self.channel

    def evidence(self) -> Evidence:
        found = processes.process(self.pid) if self.pid else None
        return Evidence(
            channel=self.channel,
            uid=self.uid,
            pid=self.pid,
            process=found.name if found else None,
            operator=self.operator,
        )


def submitter_of(peer: Peer | None, *, via_console_client: bool) -> Submitter | None:
    """The process a request is traced back to: the agents' socket peer, or, when that peer is
    the console's own client run by an agent (`svc-console agent submit`), the agent that ran it.
    None for the console's own process (the demo's simulated agents) or an unknown peer."""
    if peer is None or peer.pid <= 0 or peer.pid == os.getpid():
        return None
    found = processes.process(peer.pid)
    if found is not None and via_console_client:
        parent = processes.process(found.ppid)
        found = parent or found
    if found is None:
        return Submitter(uid=peer.uid, pid=peer.pid)
    return Submitter(uid=peer.uid, pid=found.pid, start=found.start, process=found.name)


def refuse_own_request(request: SpendRequest, decider: Decider) -> None:
    """An agent cannot decide its own request: refuse a decider that is the submitting process
    or runs under it (an agent running the CLI, or speaking the operator socket itself)."""
    submitter = request.submitter
    if submitter is None or decider.pid is None:
        return
    if processes.descends_from(decider.pid, submitter.pid, submitter.start):
        name = f" ({submitter.process})" if submitter.process else ""
        raise errors.NotAuthorised(
            f"{request.id} was submitted by process {submitter.pid}{name}, and this decision"
            " comes from that process or one it started: an agent cannot decide its own"
            " request. Decide it from the console's TUI or another terminal."
        )
