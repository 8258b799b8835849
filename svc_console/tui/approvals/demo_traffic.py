"""The demo's pause key on the approvals screen: `P` holds the simulated agents, so an operator
trying the console can read a request without new ones arriving around it, and lets them go on.

Offered only when the app runs something beside the console (`after_start`: the demo's agents).
The demo module is imported when the key is pressed, never before: the console proper does not
depend on it. A mixin of `ApprovalsScreen`, which shows the state in the header.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class DemoTraffic:
    """`action_pause_demo_agents`; the screen provides `notify`, `app` and the header."""

    notify: Callable[..., Any]
    app: Any
    _key_of: Callable[[str], str]
    _show_header_status: Callable[[], None]
    # The demo's simulated agents are held by the pause key.
    agents_paused = False

    @property
    def demo_running(self) -> bool:
        return getattr(self.app, "after_start", None) is not None

    def action_pause_demo_agents(self) -> None:
        """Hold the demo's simulated agents (each waits before its next submission), or let them
        go on."""
        from svc_console.demo import TRAFFIC

        self.agents_paused = TRAFFIC.toggle()
        self._show_header_status()
        key = self._key_of("approvals.pause_demo")
        if self.agents_paused:
            text = f"Simulated agents paused: they submit nothing until {key} is pressed again."
        else:
            text = "Simulated agents resumed."
        self.notify(text, markup=False)
