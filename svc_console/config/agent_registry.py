"""Registered agents: each an identity with a token (only its hash kept) and, optionally, the
uid it runs as. `svc-console agents` writes this file; the broker reads it again whenever it
changes, so an agent added or revoked while the console runs counts at its next call.

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
from svc_console.core.names import AGENT_NAME, AGENT_NAME_RULE
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

    # -- reading --------------------------------------------------------------------------------

    def agents(self) -> list[RegisteredAgent]:
        """Every agent ever registered, revoked ones included, by name."""
        return sorted(self._current().values(), key=lambda agent: agent.name)

    def revoked(self) -> list[str]:
        """The names of the agents revoked (whose undecided requests must not stay)."""
        return [agent.name for agent in self.agents() if not agent.active]

    def get(self, name: str) -> RegisteredAgent | None:
        return self._current().get(name)

    def authenticate(self, name: str | None, token: str) -> RegisteredAgent | None:
        """The active agent whose token `token` is (and whose name is `name`, when given); None
        for any other case, alike (a caller learns nothing of which names exist)."""
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
            self._agents = self._read()
            self._seen = seen
        return self._agents

    def _read(self) -> dict[str, RegisteredAgent]:
        try:
            data = json.loads(read_private(self.path))
        except FileNotFoundError:
            return {}
        except (ValueError, UnicodeDecodeError) as exc:
            raise RegistryError(f"{self.path} is not a valid agent registry: {exc}") from None
        return {
            name: RegisteredAgent(name=name, **fields)
            for name, fields in data.get("agents", {}).items()
        }

    # -- changing -------------------------------------------------------------------------------

    def add(self, name: str, uid: int | None = None, registered_by: str | None = None) -> str:
        """Register `name` (again, if it was revoked) and return its token, the only time it is
        ever shown."""
        if not AGENT_NAME.match(name):
            raise RegistryError(f"agent name {name[:64]!r} {AGENT_NAME_RULE}")
        token = new_token()
        with self._changing() as agents:
            existing = agents.get(name)
            if existing is not None and existing.active:
                raise RegistryError(f"agent {name} is already registered; rotate its token instead")
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
        token = new_token()
        with self._changing() as agents:
            agent = self._active(agents, name)
            agents[name] = replace(agent, token_sha256=_digest(token), rotated_at=time.time())
        return token

    def revoke(self, name: str) -> RegisteredAgent:
        with self._changing() as agents:
            agent = replace(self._active(agents, name), revoked_at=time.time())
            agents[name] = agent
        return agent

    @staticmethod
    def _active(agents: dict[str, RegisteredAgent], name: str) -> RegisteredAgent:
        agent = agents.get(name)
        if agent is None or not agent.active:
            raise RegistryError(f"no registered agent {name[:64]!r}")
        return agent

    def _changing(self) -> contextlib.AbstractContextManager[dict[str, RegisteredAgent]]:
        return named_records.changing(self.path, "agents", self._read)
