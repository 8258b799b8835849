"""The broker: the approval socket, intake, decisions and the executor.

Runs as asyncio tasks inside the TUI's process or headless (`svc-console serve`): the same code.
Never imports Textual.

`Broker`, `BrokerConfig` and `BrokerError` are imported on first use, not with the package: its
submodules (the settings in `broker.config`, the errors) are then read without the whole decision
path, which the TUI imports only after its first frame.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from svc_console.broker.config import BrokerConfig
    from svc_console.broker.errors import BrokerError
    from svc_console.broker.service import Broker

__all__ = ["Broker", "BrokerConfig", "BrokerError"]

_HOMES = {
    "Broker": "svc_console.broker.service",
    "BrokerConfig": "svc_console.broker.config",
    "BrokerError": "svc_console.broker.errors",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(home), name)
