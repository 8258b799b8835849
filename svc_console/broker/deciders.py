"""Who decides a request, as the console observed it, and the one thing no decider may be: the
process that submitted it, or a process running under it.

The TUI decides in its own process; the CLI (or any tool of the operator's) over the operator
socket, where the kernel names the peer's uid and pid. The decider's evidence (channel, uid, pid,
process name) is recorded with the decision; nothing the caller says about itself is, except the
operator's name once their account's token proved it. In the TUI, that is the operator who signed
in at start once accounts exist; without accounts, the console's own setting (`[operator] name`:
the TUI is the owner's own terminal).

The operator's acts that are not decisions but still touch money or permissions (revoking a
grant, a funding checkout, a funded retry) need the same proof over the operator socket, and the
ones that change something are kept in the audit chain with who did them (`record_act`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Literal

from svc_console.broker import errors
from svc_console.broker.params import Credentials
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
    # The operator's proven account (or, in a TUI without accounts, its setting).
    operator: str | None = None

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


def credentials_of(params: dict[str, Any]) -> tuple[Credentials, dict[str, Any]]:
    """Who acts, taken out of a method's params that have no field for it (a grant's id, a
    request's funding): the credentials, and the params without them."""
    fields = Credentials.model_fields
    given = Credentials.model_validate({k: v for k, v in params.items() if k in fields})
    return given, {k: v for k, v in params.items() if k not in fields}


def record_act(broker: Any, request_id: str | None, kind: str, decider: Decider) -> None:
    """Keep an operator's act that is not a decision (a funding checkout, a funded retry) in
    the audit chain, naming who did it: invariant 10 covers every fact that moves money."""
    data = {"by": decider.by, "evidence": decider.evidence().model_dump(mode="json")}
    with broker.ledger.transaction():
        broker.ledger.event(request_id, kind, data, broker.clock())


class RetryRecorded:
    """The broker as `Funding` sees it, keeping who asked for a funded retry the moment the
    retry starts: one refused (the balance short, retried already) records nothing."""

    def __init__(self, broker: Any, decider: Decider):
        self._broker, self._decider = broker, decider

    def __getattr__(self, name: str) -> Any:
        return getattr(self._broker, name)

    async def retry_funded(self, request_id: str) -> Any:
        request = await self._broker.retry_funded(request_id)
        record_act(self._broker, request_id, "funding_retry", self._decider)
        return request
