"""The approvals screen's announcer at its own pace, on a clock moved by hand: a burst gathered
for a second into one notification, and two notifications never closer than five seconds.

The screen tests wait for announcements as events, at a quicker pace (tests/conftest.py); these
hold the pacing itself."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from helpers import FakeClock, plain_request

from svc_console.core.states import State
from svc_console.tui.approvals import notices
from svc_console.tui.approvals.notices import Announcer


class Timers:
    """`set_timer` as the screen gives it, kept by hand: each timer's delay and its callback."""

    def __init__(self) -> None:
        self.set: list[tuple[float, Callable[[], Any]]] = []

    def __call__(self, delay: float, callback: Callable[[], Any], name: str = "") -> object:
        self.set.append((delay, callback))
        return object()

    def fire(self) -> None:
        self.set[-1][1]()


@pytest.fixture
def pace(monkeypatch: pytest.MonkeyPatch) -> None:
    """The pace an operator lives with (the screen tests set a quicker one)."""
    monkeypatch.setattr(notices, "GATHER_S", 1.0)
    monkeypatch.setattr(notices, "SPACING_S", 5.0)


def arrival(n: int, agent: str = "bot") -> Any:
    return plain_request(f"req_{n}").model_copy(update={"agent": agent, "state": State.pending})


def announcer() -> tuple[Announcer, list[str], Timers, FakeClock]:
    said: list[str] = []
    timers, clock = Timers(), FakeClock()
    return Announcer(lambda text, **_: said.append(text), timers, clock), said, timers, clock


def test_a_burst_is_gathered_for_a_second_into_one_notification(pace: None):
    speaker, said, timers, clock = announcer()
    speaker.note([arrival(1)], [])
    clock.advance(0.3)
    speaker.note([arrival(2, "other")], [])
    speaker.note([arrival(3)], [])
    assert [delay for delay, _ in timers.set] == [1.0]  # one timer, for the first of them
    assert not speaker.quiet and said == []
    timers.fire()
    assert said == ["3 new requests from bot, other"] and speaker.quiet


def test_the_next_announcement_waits_out_the_spacing(pace: None):
    speaker, said, timers, clock = announcer()
    speaker.note([arrival(1), arrival(2)], [])
    timers.fire()
    clock.advance(1.5)
    speaker.note([arrival(3), arrival(4)], [])
    assert timers.set[-1][0] == pytest.approx(5.0 - 1.5)
    timers.fire()
    clock.advance(60)
    speaker.note([arrival(5), arrival(6)], [])
    assert timers.set[-1][0] == 1.0  # long after: only the gathering
    assert said == ["2 new requests from bot"] * 2
