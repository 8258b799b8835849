"""Attaching to a broker that already runs for this home: the TUI (and the web console) become
its clients over the operator socket instead of starting a broker of their own, which the
ledger's lock would refuse."""

from __future__ import annotations

from typing import Any


def attached_console() -> Any:
    """An AttachedConsole when a broker answers on this home's operator socket, else None.
    Nothing heavier than the socket client is imported until one does."""
    from svc_console.config.paths import client_paths
    from svc_console.services.broker_probe import running_broker

    paths = client_paths()
    hello = running_broker(paths.operator_socket)
    if hello is None:
        return None
    from svc_console.config import logs
    from svc_console.services.attached_console import AttachedConsole

    logs.configure(paths.logs)
    return AttachedConsole(paths, hello)
