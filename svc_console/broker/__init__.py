"""The broker: the approval socket, intake, decisions and the executor.

Runs as asyncio tasks inside the TUI's process or headless (`svc-console serve`): the same code.
Never imports Textual.
"""

from svc_console.broker.errors import BrokerError
from svc_console.broker.service import Broker, BrokerConfig

__all__ = ["Broker", "BrokerConfig", "BrokerError"]
