"""Attaching to a broker that already runs for this home: the TUI (and the web console) become
its clients over the operator socket instead of starting a broker of their own, which the
ledger's lock would refuse."""

from __future__ import annotations

from typing import Any


def attached_console() -> Any:
    """An AttachedConsole when a broker answers on this home's operator socket, else None."""
    from svc_console.config import logs
    from svc_console.config.paths import resolve_paths
    from svc_console.services.attached_console import AttachedConsole, running_broker

    paths = resolve_paths()
    logs.configure(paths.logs)
    hello = running_broker(paths)
    return AttachedConsole(paths, hello) if hello is not None else None
