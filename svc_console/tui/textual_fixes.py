"""Work-arounds for Textual behaviour that would hurt the operator, applied once on import.

Each names what goes wrong and is checked by a test that fails (in its own process, with a time
limit) if Textual's behaviour comes back.
"""

from __future__ import annotations

from typing import Any

from textual.widgets._toast import Toast

# The least time a toast is given before its timer removes it.
MIN_TOAST_S = 0.001


def _toast_timer_never_negative() -> None:
    """A toast takes its notification's time left when it is made. When the notification runs
    out between the toast rack's check (`has_expired`) and the toast's making (a busy console,
    many notifications), that time is a hair below zero, and Textual's `Timer` given a negative
    interval loops without ever yielding: the console freezes at full CPU. So it is never below
    `MIN_TOAST_S`."""
    made = Toast.__init__

    def __init__(self: Toast, *args: Any, **kwargs: Any) -> None:
        made(self, *args, **kwargs)
        self._timeout = max(self._timeout, MIN_TOAST_S)

    Toast.__init__ = __init__  # type: ignore[method-assign]


_toast_timer_never_negative()
