"""What one agent may ask of the approval socket; `console.hello` tells every agent.

How many connections the sockets take comes from the process's open-file limit, not a fixed
number: past that limit `accept` fails for everyone, the operator included. Half the limit is left
to everything else the console opens (the ledger, logs, HTTP connections to the service, the
embedded sandbox's side of them); of the other half a share is the operator socket's alone, so
agents holding every connection they may still leave the operator able to decide. Of the agents'
socket, one uid may hold a quarter, and a quarter is kept for registered agents.
"""

from __future__ import annotations

import dataclasses
import resource
from dataclasses import dataclass
from typing import Any

OPERATOR_CONNECTIONS = 16
MOST_AGENT_CONNECTIONS = 4096


@dataclass(frozen=True)
class Limits:
    max_line_bytes: int = 256 * 1024  # one line, its newline included
    max_depth: int = 64  # nesting of arrays and objects in one message
    max_connections: int = 512
    # One uid, however many processes it runs, until a connection proves a registered agent,
    # then that agent: no single peer may take every connection.
    max_connections_per_peer: int = 128
    # Of `max_connections`, the room only connections proving a registered agent may take: a
    # flood of unregistered ones (several uids at their share) leaves registered agents served.
    reserved_for_registered: int = 0
    # A connection with nothing asked and nothing in flight (a bare newline asks nothing) is
    # closed after this long, with a `console.closing` notice; clients connect again.
    idle_timeout_s: float = 300.0
    max_pending_per_connection: int = 256  # lines read and not yet answered
    max_waits_per_connection: int = 64
    max_wait_s: float = 3600.0
    line_timeout_s: float = 10.0  # from a line's first byte to its newline
    write_buffer_bytes: int = 256 * 1024  # replies held for a client that is not reading
    write_timeout_s: float = 10.0  # how long such a client is waited for
    # Changes held for an operator connection following the queue (`approvals.follow`) that
    # has not read them yet; one more and it is cut off.
    follow_buffer: int = 4096

    def describe(self) -> dict[str, Any]:
        return dict(vars(self))


def raise_open_files(most: int = 65536) -> int:
    """Raise the process's soft open-file limit to its hard limit (at most `most`), as servers do:
    the soft default (often 1,024) is a guard for old select() programs, not a resource the
    system lacks. Returns the soft limit now in force."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = most if hard == resource.RLIM_INFINITY else min(hard, most)
    if soft != resource.RLIM_INFINITY and soft < wanted:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
            soft = wanted
        except (ValueError, OSError):
            pass  # kept as it was: the limits below are derived from it all the same
    return soft


def within_open_files(open_files: int | None = None) -> tuple[Limits, Limits]:
    """(the agents' socket's limits, the operator socket's) for a process that may hold
    `open_files` descriptors (its soft RLIMIT_NOFILE when not given)."""
    if open_files is None:
        soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        open_files = soft if soft != resource.RLIM_INFINITY else 2 * MOST_AGENT_CONNECTIONS
    for_sockets = max(16, open_files // 2)
    operator = min(OPERATOR_CONNECTIONS, max(2, for_sockets // 8))
    agents = min(MOST_AGENT_CONNECTIONS, for_sockets - operator)
    per_peer = max(4, agents // 4)
    base = Limits()
    agents_limits = dataclasses.replace(
        base,
        max_connections=agents,
        max_connections_per_peer=per_peer,
        reserved_for_registered=agents // 4,
    )
    return (
        agents_limits,
        dataclasses.replace(base, max_connections=operator, max_connections_per_peer=operator),
    )
