"""What the approvals screen tells the operator about requests it did not ask about: arrivals and
departures, gathered into one notification now and then rather than one per request.

The queue itself and the header's count ("3 pending") say what is waiting; a notification only
draws the eye to a change. Ten agents submitting at once make one "10 new requests", and a steady
trickle at most one notification every few seconds. The texts are the console's own words around
inert agent names; nothing here touches a widget but through the screen's `notify`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from textual.notifications import SeverityLevel
from textual.timer import Timer

from svc_console.core.models import SpendRequest
from svc_console.core.money import format_usdc
from svc_console.core.sanitize import inert_line
from svc_console.core.states import State
from svc_console.core.wording import plural
from svc_console.tui import present
from svc_console.tui.widgets.queue import endpoint_name

# How long a burst may take to arrive before it is announced as one.
GATHER_S = 1.0
# The least time between two announcements: arrivals meanwhile wait for the next one.
SPACING_S = 5.0
# How many agents a notification names before it just counts them.
NAMED = 3
# States after an approval that the operator hears about, with how loudly.
OUTCOME_SEVERITY: dict[State, SeverityLevel] = {
    State.succeeded: "information",
    State.failed: "error",
    State.awaiting_funds: "warning",
    State.unknown: "error",
    State.repriced: "warning",
}


class Announcer:
    """Arrivals and departures noted as they come, announced together after a short gathering
    and never closer together than `SPACING_S`."""

    def __init__(
        self,
        notify: Callable[..., Any],
        set_timer: Callable[..., Timer],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        # The screen's own, so notifications are raised (and timers run) where it lives.
        self._notify, self._set_timer, self._clock = notify, set_timer, clock
        self.arrivals: list[SpendRequest] = []
        self.departures: list[SpendRequest] = []
        self._timer: Timer | None = None
        self._last = float("-inf")

    @property
    def quiet(self) -> bool:
        """Nothing noted is still waiting to be announced."""
        return self._timer is None

    def note(self, arrivals: list[SpendRequest], departures: list[SpendRequest]) -> None:
        self.arrivals += arrivals
        self.departures += departures
        if (self.arrivals or self.departures) and self._timer is None:
            delay = max(GATHER_S, self._last + SPACING_S - self._clock())
            self._timer = self._set_timer(delay, self._announce, name="announce")

    def _announce(self) -> None:
        self._timer = None
        arrivals, self.arrivals = self.arrivals, []
        departures, self.departures = self.departures, []
        if arrivals:
            self._notify(arrivals_text(arrivals), markup=False)
        if departures:
            self._notify(departures_text(departures), severity="warning", markup=False)
        if arrivals or departures:
            self._last = self._clock()


def arrivals_text(arrivals: list[SpendRequest]) -> str:
    if len(arrivals) == 1:
        request = arrivals[0]
        return (
            f"New request from {inert_line(request.agent, 40)}: {endpoint_name(request, 40)}"
            f" · {present.price(request.estimate)} USDC"
        )
    agents = sorted({inert_line(request.agent, 24) for request in arrivals})
    named = ", ".join(agents[:NAMED]) + (" …" if len(agents) > NAMED else "")
    return f"{len(arrivals)} new requests from {named}"


def departures_text(departures: list[SpendRequest]) -> str:
    if len(departures) == 1:
        request = departures[0]
        how = "expired" if request.state == State.expired else "was cancelled by the agent"
        return f"{request.id} from {inert_line(request.agent, 40)} {how}"
    expired = sum(1 for request in departures if request.state == State.expired)
    cancelled = len(departures) - expired
    parts = [f"{expired} expired"] if expired else []
    parts += [f"{cancelled} cancelled by their agents"] if cancelled else []
    return f"{plural(len(departures), 'request')} left the queue: {', '.join(parts)}"


def outcome_text(request: SpendRequest) -> str:
    """How a request approved here ended (or where it stands), for its one notification."""
    if request.state == State.succeeded and request.outcome is not None:
        return (
            f"{request.id} succeeded: charged {format_usdc(request.outcome.charged_usdc)} USDC"
            f" on {inert_line(request.outcome.chain, 20)}"
        )
    if request.state == State.awaiting_funds:
        return f"{request.id} waits for funds: {inert_line(request.funding_url or '-', 120)}"
    return f"{request.id} {request.state}: {inert_line(request.reason or '-', 160)}"


def pending_status(count: int) -> str:
    """The header's count of waiting requests; nothing when none waits."""
    return f"{count:,} pending" if count else ""
