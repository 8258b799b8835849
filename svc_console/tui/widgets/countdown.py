"""The time a request has left, in a dialog that decides it: "Expires in 4m 12s", read from the
console's clock every second. The operator reading a dialog sees the deadline come, instead of
learning from a refusal after typing an amount that the request had expired meanwhile.

At zero it says so, once, and posts `Countdown.Expired`: the dialog refuses from then on.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from rich.text import Text
from textual.message import Message
from textual.widgets import Static

from svc_console.tui import present

TICK_S = 1.0
# Below this many seconds left the line is drawn as a warning, as the queue's expiry cell is.
SOON_S = 60.0


class Countdown(Static):
    """Seconds left until `expires_at` by `clock`; nothing at all for a request that never
    expires."""

    DEFAULT_CSS = """
    Countdown {
        height: auto;
        color: $text-muted;
    }
    Countdown.-soon {
        color: $text-warning;
    }
    Countdown.-over {
        color: $text-error;
        text-style: bold;
    }
    """

    class Expired(Message):
        """The countdown reached zero: whatever the dialog decides now would be refused."""

    def __init__(
        self,
        expires_at: float | None,
        clock: Callable[[], float],
        *,
        id: str = "countdown",
        running: str = "Expires in",
        over: str = "Expired: this request can no longer be decided.",
    ) -> None:
        super().__init__("", id=id, markup=False)
        self.expires_at = expires_at
        self.clock = clock
        self.running, self.over_text = running, over
        self._announced = False
        # What the line says now, as plain text.
        self.text = ""
        self.display = expires_at is not None

    @property
    def left(self) -> float | None:
        return None if self.expires_at is None else self.expires_at - self.clock()

    @property
    def over(self) -> bool:
        left = self.left
        return left is not None and left <= 0

    def on_mount(self) -> None:
        self.tick()
        if self.expires_at is not None:
            self.set_interval(TICK_S, self.tick, name="countdown")

    def tick(self) -> None:
        left = self.left
        if left is None:
            return
        if left <= 0:
            self._say(self.over_text)
            self.set_class(True, "-over")
            self.set_class(False, "-soon")
            if not self._announced:
                self._announced = True
                self.post_message(self.Expired())
            return
        # Rounded up: "0s" would read as expired while the broker still takes a decision.
        self._say(f"{self.running} {present.duration(math.ceil(left))}")
        self.set_class(left < SOON_S, "-soon")

    def _say(self, text: str) -> None:
        if text != self.text:
            self.text = text
            self.update(Text(text))
