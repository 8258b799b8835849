"""The CLI's side of the console's sockets: the agents' socket for `agent submit` (with the
agent's token from SVC_AGENT_TOKEN, when it has one), the operator socket for `approvals`; and
the broker's refusals turned into one-line errors."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from svc_console.cli.errors import EXIT_USAGE, CommandError

# Said in hello: the console's own client acts for whoever ran it, who is then the submitter.
CLIENT = "svc-console"


def connect(name: str | None, *, operator: bool = False) -> Any:
    from svc_console.agent import Agent, AgentError, NotConnected
    from svc_console.config.paths import client_paths

    paths = client_paths()
    if operator:
        # The operator socket knows the operator by uid; no agent token is ever sent there.
        agent = Agent(None, paths.operator_socket, token="", client=CLIENT)
    else:
        agent = Agent(name, paths.socket, client=CLIENT)
    try:
        agent.connect()
    except NotConnected as exc:
        raise CommandError(f"{exc.message}; is svc-console running?", EXIT_USAGE) from None
    except AgentError as exc:  # refused: another user, an unknown agent, a wrong token
        raise CommandError(exc.message, EXIT_USAGE) from None
    return agent


def call(action: Callable[[], Any]) -> Any:
    from svc_console.agent import AgentError

    try:
        return action()
    except AgentError as exc:
        raise CommandError(exc.message, EXIT_USAGE) from None
