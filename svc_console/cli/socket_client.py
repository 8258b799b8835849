"""The CLI's side of the approval socket: connect as an agent or as the operator, and turn the
broker's refusals into one-line errors."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from svc_console.cli.errors import EXIT_USAGE, CommandError


def connect(name: str, *, operator: bool = False) -> Any:
    from svc_console.agent import Agent, NotConnected
    from svc_console.config.paths import resolve_paths
    from svc_console.core.private_files import NotPrivate, read_private

    paths = resolve_paths()
    token = None
    if operator:
        try:
            token = read_private(paths.operator_token).strip()
        except FileNotFoundError:
            raise CommandError(
                "no operator token: start the console (svc-console serve) first", EXIT_USAGE
            ) from None
        except NotPrivate as exc:
            raise CommandError(str(exc), EXIT_USAGE) from None
    agent = Agent(name, paths.socket, token=token)
    try:
        agent.connect()
    except NotConnected as exc:
        raise CommandError(f"{exc.message}; is svc-console running?", EXIT_USAGE) from None
    return agent


def call(action: Callable[[], Any]) -> Any:
    from svc_console.agent import AgentError

    try:
        return action()
    except AgentError as exc:
        raise CommandError(exc.message, EXIT_USAGE) from None
