"""What one agent may ask of the approval socket; `console.hello` tells every agent."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Limits:
    max_line_bytes: int = 256 * 1024  # one line, its newline included
    max_depth: int = 64  # nesting of arrays and objects in one message
    max_connections: int = 512
    max_pending_per_connection: int = 256  # lines read and not yet answered
    max_waits_per_connection: int = 64
    max_wait_s: float = 3600.0
    line_timeout_s: float = 10.0  # from a line's first byte to its newline
    write_buffer_bytes: int = 256 * 1024  # replies held for a client that is not reading
    write_timeout_s: float = 10.0  # how long such a client is waited for

    def describe(self) -> dict[str, Any]:
        return dict(vars(self))
