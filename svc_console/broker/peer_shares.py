"""Who holds the agents' socket's connections: the share of each peer.

A peer is a uid (every process it runs, every name its agents invent) until a connection proves
it speaks for a registered agent; then that agent. Each holds at most `cap` connections.
"""

from __future__ import annotations

from svc_console.broker.agent_access import Identity
from svc_console.broker.deciders import Peer

PeerKey = tuple[str, object]


class PeerShares:
    """How many connections each peer holds: a uid, until a connection proves that it speaks for
    a registered agent, then that agent. An unverified name stays in its uid's count: inventing
    names moves nothing out of it."""

    def __init__(self, cap: int):
        self.cap = cap
        self.held: dict[PeerKey, int] = {}
        self.unproven = 0  # connections counted by their uid

    @staticmethod
    def key(peer: Peer | None, identity: Identity | None) -> PeerKey:
        if identity is not None and identity.verified:
            return ("agent", identity.name)
        return ("uid", peer.uid if peer is not None else None)

    def full(self, key: PeerKey) -> bool:
        return self.held.get(key, 0) >= self.cap

    def take(self, key: PeerKey) -> None:
        self.held[key] = self.held.get(key, 0) + 1
        self.unproven += key[0] == "uid"

    def give_back(self, key: PeerKey) -> None:
        left = self.held.get(key, 0) - 1
        if left > 0:
            self.held[key] = left
        else:
            self.held.pop(key, None)
        self.unproven -= key[0] == "uid"
