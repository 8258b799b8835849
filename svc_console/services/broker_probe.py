"""Whether a broker already runs for this home: a hello on its operator socket. Asked by every
`svc-console` before anything else, so it imports the socket client alone (no broker, no ledger,
no models): a console with no broker to attach to loses nothing of its start-up to it."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from svc_console.agent import Agent, AgentError

log = logging.getLogger(__name__)

CLIENT = "svc-console"  # as the CLI says in hello: the console's own client


def running_broker(operator_socket: Path) -> dict[str, Any] | None:
    """The hello of the broker answering on `operator_socket`, or None when none does (no
    socket, or one a stopped console left behind)."""
    if not operator_socket.exists():
        return None
    client = Agent(None, operator_socket, token="", client=CLIENT, timeout_s=5.0)
    try:
        return client.connect()
    except AgentError as exc:
        log.info("no broker answers on %s: %s", operator_socket, exc.message)
        return None
    finally:
        client.close()
