"""A strip above the lists naming the agents the circuit breaker paused: while one is paused, every
request it makes waits for the operator, and only an operator's resume ends that, so the operator
must see it without looking for it. Hidden when no agent is paused.

Agent names are the agents' own words and go through `inert_line`; the strip renders rich Text
with markup off, like the rest of the screen.
"""

from __future__ import annotations

import inspect
import logging
import time
from collections.abc import Callable
from typing import Any

from rich.text import Text
from textual.widgets import Static

from svc_console.broker import BrokerError
from svc_console.broker.deciders import Decider
from svc_console.core.sanitize import inert_line
from svc_console.core.wording import plural
from svc_console.ledger.pauses import Pause
from svc_console.tui.colors import Palette
from svc_console.tui.glyphs import glyph

log = logging.getLogger(__name__)

# Lines the strip may take.
SHOWN = 3


class PausedAgents(Static):
    """One line per paused agent: who, why, since when, and the key that resumes."""

    def __init__(self, key: str = "R", *, id: str | None = None) -> None:
        super().__init__("", id=id, markup=False)
        self.key = key  # as the operator's keymap has it
        self.pauses: tuple[Pause, ...] = ()
        self._drawn: tuple[object, ...] = ((), "", None)

    @property
    def agents(self) -> list[str]:
        return [pause.agent for pause in self.pauses]

    def show(self, pauses: list[Pause], now: float, colours: Palette) -> bool:
        """Show these pauses; False when nothing changed since the last call (nothing redrawn)."""
        # Read every second: drawn again only when the pauses, the theme or the day (a pause
        # from an earlier day names its date) changed.
        drawn = (tuple(pauses), _day(now), colours)
        if drawn == self._drawn:
            return False
        self._drawn, self.pauses = drawn, tuple(pauses)
        self.display = bool(pauses)
        self.update(render(pauses, now, colours, self.key, glyph(self.app, "paused")))
        return True


class ResumeKey:
    """`R` on the approvals screen (a mixin of it): resume a paused agent."""

    query_one: Callable[..., Any]
    notify: Callable[..., Any]
    table: Any
    broker: Any
    _show_pauses: Callable[[], None]

    async def action_resume_agent(self) -> None:
        """Resume the selected request's agent if it is paused, else the only paused agent."""
        strip = self.query_one(PausedAgents)
        paused = strip.agents
        request = self.table.selected
        if request is not None and request.agent in paused:
            agent = request.agent
        elif len(paused) == 1:
            agent = paused[0]
        else:
            if paused:
                names = ", ".join(inert_line(name, 40) for name in paused)
                text = f"Paused: {names}. Select a request of the one to resume, press {strip.key}."
            else:
                text = "No agent is paused."
            self.notify(text, title="Which agent?", severity="warning", markup=False)
            return
        try:
            # Named as the console's decisions are (attached: the broker names who signed in).
            operator = getattr(self.broker.decisions, "console_operator", None)
            resumed = self.broker.pauses.resume(agent, Decider.this_process(operator))
            if inspect.isawaitable(resumed):  # attached: over the operator socket
                await resumed
        except BrokerError as exc:
            self.notify(exc.message, title="Could not resume", severity="error", markup=False)
        except Exception:
            log.exception("resuming %s failed", agent)
            self.notify(
                "Unexpected error; see the log for details.",
                title="Could not resume",
                severity="error",
            )
        else:
            self.notify(
                f"Agent {inert_line(agent, 40)} resumed: its rules apply again", markup=False
            )
        self._show_pauses()


def render(
    pauses: list[Pause], now: float, colours: Palette, key: str = "R", mark: str = "⏸"
) -> Text:
    hint = f"{key} resume" if len(pauses) == 1 else f"{key} resumes the selected request's agent"
    # Past SHOWN, the last line names the others, so the strip keeps its height.
    named = pauses if len(pauses) <= SHOWN else pauses[: SHOWN - 1]
    text = Text(no_wrap=True, overflow="ellipsis")
    for n, pause in enumerate(named):
        if n:
            text.append("\n")
        text.append(f"{mark} paused: ", style=f"bold {colours.warn}")
        text.append(inert_line(pause.agent, 40), style="bold")
        # Only its rules are paused: the agent still asks, the operator decides.
        text.append("'s rules", style="bold")
        # The key before the reason: a narrow strip cuts the reason (the detail has it).
        text.append(f" {since(pause.since, now)}")
        if n == 0:
            text.append(f" · {hint}", style=colours.label)
        text.append(f" — {inert_line(pause.reason, 80)}")
    others = pauses[len(named) :]
    if others:
        more = f"\n{mark} rules of {plural(len(others), 'more agent')} paused: "
        text.append(more, style=f"bold {colours.warn}")
        text.append(", ".join(inert_line(pause.agent, 24) for pause in others))
    return text


def since(at: float, now: float) -> str:
    """Since when, as "since 14:03 UTC"; with the date when not today (UTC, as the console's
    times are)."""
    clock = time.strftime("%H:%M", time.gmtime(at))
    if _day(at) != _day(now):
        return f"since {_day(at)} {clock} UTC"
    return f"since {clock} UTC"


def _day(at: float) -> str:
    return time.strftime("%Y-%m-%d", time.gmtime(at))
