"""Registered agents: each an identity with a token (only its hash kept) and, optionally, the
uid it runs as. `svc-console agents` writes this file; the broker reads it again whenever it
changes, so an agent added or revoked while the console runs counts at its next call.

Names are kept in their canonical form (`core/names.py`), and a name stays the registry's until it
is released: a revoked agent's name is refused to anyone without a token (its history, budgets and
grants are not for another to take over), and so is a name that looks like one the registry holds.

A token is 256 random bits, so a plain SHA-256 of it cannot be reversed or guessed from; a slow
hash would only slow every connection. The file is owner-only like everything the console writes,
and a lock makes two `agents` commands at once take turns instead of losing one's change.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import secrets
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from svc_console.config import named_records
from svc_console.core import names
from svc_console.core.private_files import read_private

TOKEN_PREFIX = "svcagent_"


class RegistryError(Exception):
    """A change the registry refuses (a taken name, an unknown agent); the message says why."""


@dataclass(frozen=True)
class RegisteredAgent:
    name: str
    token_sha256: str = field(repr=False)
    created_at: float
    uid: int | None = None
    rotated_at: float | None = None
    revoked_at: float | None = None
    # The operator account that added it (`agents add --operator`): under the two-person rule,
    # never one of the two who approve its requests.
    registered_by: str | None = None

    @property
    def active(self) -> bool:
        return self.revoked_at is None


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def new_token() -> str:
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


class AgentRegistry:
    def __init__(self, path: Path):
        self.path = path
        self._seen: tuple[int, int, int] | None = None
        self._agents: dict[str, RegisteredAgent] = {}
        self._skeletons: dict[str, str] | None = None  # of the names held, once asked for

    # -- reading --------------------------------------------------------------------------------

    def agents(self) -> list[RegisteredAgent]:
        """Every agent ever registered, revoked ones included, by name."""
        return sorted(self._current().values(), key=lambda agent: agent.name)

    def revoked(self) -> list[str]:
        """The names of the agents revoked (whose undecided requests must not stay)."""
        return [agent.name for agent in self.agents() if not agent.active]

    def get(self, name: str) -> RegisteredAgent | None:
        """The agent of that name (a canonical name: see `core/names.py`), revoked or not."""
        return self._current().get(name)

    def holder(self, name: str) -> str | None:
        """The name the registry holds (an active agent's, or a revoked one's until released)
        that canonical `name` is or looks like (the same TR39 skeleton); None when it is free."""
        agents = self._current()
        if name in agents:
            return name
        if self._skeletons is None:
            self._skeletons = {names.skeleton(held): held for held in agents}
        return self._skeletons.get(names.skeleton(name))

    def authenticate(self, name: str | None, token: str) -> RegisteredAgent | None:
        """The active agent whose token `token` is (and whose canonical name is `name`, when
        given); None for any other case, alike (a caller learns nothing of which names exist)."""
        digest = _digest(token)
        for agent in self._current().values():
            # Every digest compared in constant time: the search leaks no prefix of the hash.
            if hmac.compare_digest(digest, agent.token_sha256) and agent.active:
                return agent if name is None or name == agent.name else None
        return None

    def registrant(self, name: str) -> str | None:
        """The operator who registered agent `name` (revoked ones too), when one is known."""
        agent = self._current().get(name)
        return agent.registered_by if agent is not None else None

    def by_uid(self, uid: int) -> RegisteredAgent | None:
        """The active agent registered to run as `uid`, recognised by its peer uid alone."""
        return next((a for a in self._current().values() if a.active and a.uid == uid), None)

    def _current(self) -> dict[str, RegisteredAgent]:
        try:
            info = self.path.stat()
        except FileNotFoundError:
            self._seen, self._agents = None, {}
            return self._agents
        seen = (info.st_ino, info.st_mtime_ns, info.st_size)
        if seen != self._seen:
            self._agents, self._skeletons = self._read(), None
            self._seen = seen
        return self._agents

    def _read(self) -> dict[str, RegisteredAgent]:
        try:
            data = json.loads(read_private(self.path))
        except FileNotFoundError:
            return {}
        except (ValueError, UnicodeDecodeError) as exc:
            raise RegistryError(f"{self.path} is not a valid agent registry: {exc}") from None
        agents: dict[str, RegisteredAgent] = {}
        for written, fields in data.get("agents", {}).items():
            # A file written before names had one form: each name read in it.
            try:
                name = names.canonical(written)
            except ValueError:
                raise RegistryError(
                    f"{self.path}: agent name {written[:64]!r} {names.AGENT_NAME_RULE}"
                ) from None
            if name in agents:
                raise RegistryError(
                    f"{self.path} holds agent {name} twice, in two spellings: keep one"
                )
            agents[name] = RegisteredAgent(name=name, **fields)
        return agents

    # -- changing -------------------------------------------------------------------------------

    def add(self, name: str, uid: int | None = None, registered_by: str | None = None) -> str:
        """Register `name` (again, if it was revoked) and return its token, the only time it is
        ever shown. The name is kept in its canonical form (`canonical_name` says it)."""
        name = canonical_name(name)
        token = new_token()
        with self._changing() as agents:
            existing = agents.get(name)
            if existing is not None and existing.active:
                raise RegistryError(f"agent {name} is already registered; rotate its token instead")
            alike = next((held for held in agents if names.look_alike(held, name)), None)
            if alike is not None:
                raise RegistryError(
                    f"agent name {name} looks like {alike}, which the registry holds"
                    " (Unicode confusables): choose another name"
                )
            if uid is not None:
                holder = next((a for a in agents.values() if a.active and a.uid == uid), None)
                if holder is not None:
                    raise RegistryError(f"uid {uid} is already registered to agent {holder.name}")
            agents[name] = RegisteredAgent(
                name, _digest(token), time.time(), uid=uid, registered_by=registered_by
            )
        return token

    def rotate(self, name: str) -> str:
        """A new token for `name`; the old one stops working at once."""
        name = canonical_name(name)
        token = new_token()
        with self._changing() as agents:
            agent = self._active(agents, name)
            agents[name] = replace(agent, token_sha256=_digest(token), rotated_at=time.time())
        return token

    def revoke(self, name: str) -> RegisteredAgent:
        name = canonical_name(name)
        with self._changing() as agents:
            agent = replace(self._active(agents, name), revoked_at=time.time())
            agents[name] = agent
        return agent

    def release(self, name: str) -> RegisteredAgent:
        """Forget a revoked agent: its name is free again, for an unverified agent in open
        enrolment or a new registration. Refused for an agent still active."""
        name = canonical_name(name)
        with self._changing() as agents:
            agent = agents.get(name)
            if agent is None:
                raise RegistryError(f"no registered agent {name!r}")
            if agent.active:
                raise RegistryError(
                    f"agent {name} is active: revoke it first (svc-console agents revoke {name})"
                )
            del agents[name]
        return agent

    @staticmethod
    def _active(agents: dict[str, RegisteredAgent], name: str) -> RegisteredAgent:
        agent = agents.get(name)
        if agent is None or not agent.active:
            raise RegistryError(f"no registered agent {name!r}")
        return agent

    def _changing(self) -> contextlib.AbstractContextManager[dict[str, RegisteredAgent]]:
        return named_records.changing(self.path, "agents", self._read)


def canonical_name(name: str) -> str:
    """`name` as the registry keeps it; RegistryError when it is no name."""
    try:
        return names.canonical(name)
    except ValueError:
        raise RegistryError(f"agent name {name[:64]!r} {names.AGENT_NAME_RULE}") from None
