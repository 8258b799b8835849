"""The garbage collector while a long-running console starts.

Starting, the TUI and `serve` make some hundred and seventy thousand objects that live as long as
the process (modules, classes, models, the broker, the screens) and little garbage: about three
thousand objects in cycles. The collector's automatic passes, each over every object made so far,
were about a fifth of the TUI's time to ready to decide. So those two commands pause automatic
collection as they begin (`starting`) and, once their runtime is up (`started`), freeze what
start-up made, so that no later pass scans it again (`Runtime.stop` lets it go), and resume it.
What start-up left in cycles is frozen with the rest: about a megabyte, once.
"""

from __future__ import annotations

import gc

_paused = False  # by `starting`: collection was on, and `resume` turns it back on


def starting() -> None:
    global _paused
    if gc.isenabled():
        gc.disable()
        _paused = True


def started() -> None:
    """Ready: what start-up made is frozen (`Runtime.stop` lets it go), and collection resumes."""
    gc.freeze()
    resume()


def resume() -> None:
    """Collection resumes, if `starting` paused it: also where a start ends without a runtime of
    its own to freeze (an attached console, a start that failed). A collector someone else
    turned off stays off."""
    global _paused
    if _paused:
        _paused = False
        gc.enable()
