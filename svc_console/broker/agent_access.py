"""Who may speak the agents' socket, and as whom.

A connection is admitted by its peer uid (the kernel's word, SO_PEERCRED): the console's own user
(when settings accept that risk), a uid or group that `[agents]` names, or a uid registered to an
agent. It is then bound to an identity: a registered agent proves its name with its token, or by
running as the uid registered for it; an unregistered name is accepted only in open enrolment,
and stays flagged as unverified. Nothing an agent says about itself is taken on trust: a
registered name without its token is refused in every mode, and so are, to an unverified agent, a
revoked agent's name (until released) and any name that looks like one the registry holds. Names
are compared in their canonical form (`core/names.py`), made here, once per connection.
"""

from __future__ import annotations

import os
import socket
import struct
from dataclasses import dataclass, field
from pathlib import Path

from svc_console.broker import errors
from svc_console.broker.deciders import Peer
from svc_console.config.agent_registry import AgentRegistry
from svc_console.config.agents import AgentSettings
from svc_console.core import names

APART = (
    "run agents as another user and open the agents' socket to them with [agents] group or"
    " uids in settings.toml (docs/security.md: Keeping agents apart), or set [agents]"
    " allow_same_user = true to accept the risk"
)


@dataclass(frozen=True)
class Identity:
    name: str
    verified: bool
    # The hash of the token it proved itself with, so a rotation ends the old token's sessions.
    token_sha256: str | None = field(default=None, repr=False)


def peer_of(sock: socket.socket | None) -> Peer | None:
    """The connected peer's pid, uid and gid; None where the platform cannot say."""
    if sock is None or not hasattr(socket, "SO_PEERCRED"):
        return None
    creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    pid, uid, gid = struct.unpack("3i", creds)
    return Peer(pid=pid, uid=uid, gid=gid)


def _groups_of(pid: int) -> set[int]:
    """The process's supplementary groups (SO_PEERCRED names only its primary one)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("Groups:"):
                return {int(gid) for gid in line.split()[1:]}
    except (OSError, ValueError):
        pass
    return set()


class AgentAccess:
    def __init__(
        self,
        settings: AgentSettings,
        registry: AgentRegistry,
        *,
        sandbox: bool,
        owner_uid: int | None = None,
    ):
        self.settings, self.registry = settings, registry
        self.enrolment = settings.enrolment_for(sandbox=sandbox)
        self.owner_uid = os.getuid() if owner_uid is None else owner_uid

    @property
    def same_user_accepted(self) -> bool:
        return self.enrolment == "open" or self.settings.allow_same_user

    def same_user_warning(self) -> str | None:
        """What the operator must be told wherever agents of their own user are accepted."""
        if not self.same_user_accepted:
            return None
        return (
            f"agents running as your own user (uid {self.owner_uid}) are accepted: they can read"
            " every file you can. Set an operator passphrase (svc-console operators passwd) and"
            " run agents as another user (docs/security.md: Keeping agents apart)."
        )

    def refusal(self, peer: Peer | None) -> str | None:
        """Why a peer may not speak the agents' socket at all, or None to admit it."""
        if peer is None:
            return None  # no peer credentials on this platform: the socket's mode is the guard
        if peer.uid == self.owner_uid:
            if self.same_user_accepted:
                return None
            return (
                f"agents may not run as the console's own user (uid {peer.uid}) under strict"
                f" enrolment: such an agent could read everything the operator can. To fix: {APART}"
            )
        if peer.uid == 0 or peer.uid in self.settings.uids:
            return None
        gid = self.settings.gid
        if gid is not None and (peer.gid == gid or gid in _groups_of(peer.pid)):
            return None
        if self.registry.by_uid(peer.uid) is not None:
            return None
        return f"uid {peer.uid} may not use this socket: [agents] in settings.toml names who may"

    def bind(self, peer: Peer | None, name: str | None, token: str | None) -> Identity | None:
        """The identity a connection speaks as, from `console.hello` (or a first submit): None
        while it has named no one and no registered uid names it."""
        if name is not None:
            try:
                name = names.canonical(name)
            except ValueError:
                raise errors.InvalidParams(
                    f"agent name {name[:64]!r} {names.AGENT_NAME_RULE}"
                ) from None
        if token is not None:
            agent = self.registry.authenticate(name, token)
            if agent is None:
                raise errors.NotAuthorised("unknown agent or wrong token")
            return Identity(agent.name, verified=True, token_sha256=agent.token_sha256)
        by_uid = None
        if peer is not None and peer.uid != self.owner_uid:
            by_uid = self.registry.by_uid(peer.uid)
        if by_uid is not None:
            if name is not None and name != by_uid.name:
                raise errors.NotAuthorised(
                    f"uid {peer.uid if peer else '?'} is registered to agent {by_uid.name}"
                )
            return Identity(by_uid.name, verified=True)
        if name is None:
            return None
        registered = self.registry.get(name)
        if registered is not None and registered.active:
            raise errors.NotAuthorised(
                f"agent {name} is registered: say console.hello with its token (SVC_AGENT_TOKEN)"
            )
        if self.enrolment == "strict":
            raise errors.NotAuthorised(
                f"agent {name} is not registered and enrolment is strict: the operator registers"
                f" it with svc-console agents add {name}"
            )
        held = self.registry.holder(name)
        if held == name:
            raise errors.NotAuthorised(
                f"agent {name} was revoked: its name stays reserved until the operator releases"
                f" it (svc-console agents release {name})"
            )
        if held is not None:
            raise errors.NotAuthorised(
                f"agent name {name} looks like registered agent {held}: choose another name"
            )
        return Identity(name, verified=False)

    def still_valid(self, identity: Identity) -> bool:
        """Whether a connection's identity still holds: a verified one whose agent was revoked,
        or whose token was rotated, since it said hello no longer speaks for it; an unverified
        name stops being usable once the registry holds it, or one it looks like."""
        if not identity.verified:
            return self.registry.holder(identity.name) is None
        registered = self.registry.get(identity.name)
        if registered is None or not registered.active:
            return False
        return identity.token_sha256 in (None, registered.token_sha256)
