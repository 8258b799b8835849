"""One notice at a time: the newest is drawn, titled with how many others are current; `n` lists
them all, newest first; `c` there clears them; when the drawn one goes, the next newest is drawn."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from helpers import FakeClock
from textual.notifications import Notification, Notifications
from textual.pilot import Pilot
from textual.widgets._toast import Toast
from tui_support import build_console, notices, screen_text, started, until

from svc_console.runtime import Runtime
from svc_console.tui.app import ConsoleApp
from svc_console.tui.notices import NoticesScreen, newest_drawn

RAISED = ("Grant 1 revoked", "Exported 2 charges to usage.csv", "Policy saved: in force")


@pytest.fixture
def console(make_runtime: Callable[..., Runtime], clock: FakeClock) -> Callable[..., ConsoleApp]:
    return lambda **options: build_console(make_runtime, clock, **options)


def toasts(app: ConsoleApp) -> list[Toast]:
    return list(app.screen.query(Toast))


async def three_notices(pilot: Pilot[Any]) -> None:
    app = pilot.app
    await started(pilot)
    app.clear_notifications()
    for message in RAISED:
        app.notify(message, timeout=600)
    await until(pilot, lambda: len(app._notifications) == 3)
    await until(pilot, lambda: RAISED[-1] in notices(app) and len(toasts(app)) == 1)


async def test_only_the_newest_notice_is_drawn_and_counts_the_rest(console):
    app = console()
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await three_notices(pilot)
        text = notices(app)
        assert "+2 more notices · n lists them" in text
        assert RAISED[0] not in text and RAISED[1] not in text


async def test_n_lists_every_current_notice_newest_first_and_c_clears_them(console):
    app = console()
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await three_notices(pilot)
        await pilot.press("n")
        await until(pilot, lambda: isinstance(app.screen, NoticesScreen))
        await until(pilot, lambda: RAISED[0] in screen_text(app))
        text = screen_text(app)
        assert "Notices: 3 notices" in text
        positions = [text.index(message) for message in reversed(RAISED)]
        assert positions == sorted(positions)  # newest first
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, NoticesScreen))
        assert len(app._notifications) == 3  # closing forgets nothing

        await pilot.press("n")
        await until(pilot, lambda: isinstance(app.screen, NoticesScreen))
        await pilot.press("c")
        await until(pilot, lambda: not isinstance(app.screen, NoticesScreen))
        assert len(app._notifications) == 0 and not app.told
        await until(pilot, lambda: not toasts(app))
        await pilot.press("n")
        await until(pilot, lambda: "No notices" in screen_text(app))


async def test_a_notice_whose_toast_has_gone_is_still_listed(console):
    """The toast counts the others; by the time the operator presses n, theirs may be over."""
    app = console()
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await three_notices(pilot)
        for _ in RAISED:
            toasts(app)[0]._expire()  # as its timer (or a click) does
            await until(pilot, lambda: len(toasts(app)) <= 1)
        await until(pilot, lambda: not app._notifications and not toasts(app))
        await pilot.press("n")
        await until(pilot, lambda: isinstance(app.screen, NoticesScreen))
        await until(pilot, lambda: all(message in screen_text(app) for message in RAISED))
        assert "Notices: 3 notices" in screen_text(app)


async def test_when_the_drawn_notice_goes_the_next_newest_is_drawn(console):
    app = console()
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await three_notices(pilot)
        toasts(app)[0]._expire()  # as its timer (or a click) does
        await until(pilot, lambda: RAISED[1] in notices(app))
        assert "+1 more notice · n lists them" in notices(app)
        assert [n.message for n in app._notifications] == list(RAISED[:2])


def test_snapshot_the_notice_line(snap_compare: Any, console):
    """The newest of three notices, beside the list, counting the other two."""
    assert snap_compare(console(), terminal_size=(120, 40), run_before=three_notices)


def test_snapshot_the_notices_list(snap_compare: Any, console):
    app = console()

    async def run_before(pilot: Pilot[Any]) -> None:
        await three_notices(pilot)
        await pilot.press("n")
        await until(pilot, lambda: isinstance(app.screen, NoticesScreen))

    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)


def test_snapshot_the_notice_line_at_80x24(snap_compare: Any, console):
    """At 80x24 the one toast still leaves the footer's q and F1 in sight."""
    assert snap_compare(console(), terminal_size=(80, 24), run_before=three_notices)


class ExpiringOnSecondLook(Notification):
    """A notice that expires between one look and the next: as one does when its timeout ends
    between the two reaps `list()` of the notifications makes (iterator, then length)."""

    looked = 0

    @property
    def has_expired(self) -> bool:
        type(self).looked += 1
        return type(self).looked > 1


def test_a_notice_expiring_while_the_newest_is_chosen_is_left_out_not_a_crash():
    """Found by a full run: the toast rack's draw raised "dictionary changed size during
    iteration" when a notice expired as the newest was chosen."""
    notifications = Notifications()
    notifications.add(Notification("kept", timeout=600))
    ExpiringOnSecondLook.looked = 0
    notifications._notifications["going"] = ExpiringOnSecondLook("going", identity="going")
    drawn = list(newest_drawn(notifications)._notifications.values())  # as drawn, unreaped
    assert [(n.message, n.title) for n in drawn] == [("going", "+1 more notice · n lists them")]
