"""Quitting with an unsaved policy draft: the console asks first (save and quit, quit without
saving, cancel), against the real thing: SKILLS.md in a temporary SVC_CONSOLE_HOME, the broker's
live policy and its watcher, the sandbox over HTTP. The author is a Textual pilot pressing keys."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from helpers import FakeClock
from test_tui_policies import (
    CAP_LINE,
    GOOD,
    edit_line,
    editor,
    in_force,
    open_policies,
    settle,
    sha,
)
from textual.pilot import Pilot
from textual.widgets import Button
from tui_support import build_console, screen_text, type_text, until

from svc_console.config.paths import Paths
from svc_console.runtime import Runtime
from svc_console.tui.app import ConsoleApp
from svc_console.tui.approvals.screen import ApprovalsScreen
from svc_console.tui.policies.screen import PoliciesScreen
from svc_console.tui.unsaved import QuitWithUnsavedWork

EDITED = GOOD.replace("per_call_max_usdc: 0.25", "per_call_max_usdc: 0.20")
BROKEN_CAP = 'SKILLS.md:6:1: per_call_max_usdc must be a number of USDC, got "two"'


@pytest.fixture(autouse=True)
def saved_by_alice(monkeypatch: pytest.MonkeyPatch) -> None:
    """Who saved a file is its owner's login: fixed, so screenshots do not name the machine's."""
    for module in ("svc_console.broker.policy_link", "svc_console.policy.watch"):
        monkeypatch.setattr(f"{module}.owner_of", lambda path: "alice")


@pytest.fixture
def skills(paths: Paths) -> Path:
    paths.home.mkdir(parents=True, exist_ok=True)
    path = paths.home / "SKILLS.md"
    path.write_text(GOOD)
    return path


@pytest.fixture
def console(make_runtime: Callable[..., Runtime], clock: FakeClock) -> Callable[..., ConsoleApp]:
    return lambda **options: build_console(make_runtime, clock, **options)


def asking(app: ConsoleApp) -> bool:
    return isinstance(app.screen, QuitWithUnsavedWork)


def dialog_text(app: ConsoleApp) -> str:
    """The words inside the question's frame, its wrapped lines joined again."""
    inside = [line.split("█")[1] for line in screen_text(app).splitlines() if line.count("█") >= 2]
    return " ".join(" ".join(inside).split())


def buttons(app: ConsoleApp) -> list[str]:
    return [str(button.label) for button in app.screen.query(Button)]


async def draft_and_ask(pilot: Pilot[Any], value: str = "0.20", quit_key: str = "q") -> None:
    """Open the policies screen, change the cap to `value` (not saved), leave the editor and
    quit: the question is in front."""
    await open_policies(pilot)
    await edit_line(pilot, CAP_LINE, 4, value)
    await settle(pilot)
    await pilot.press("escape", quit_key)
    await until(pilot, lambda: asking(pilot.app))
    await pilot.pause()  # and drawn


# -- each answer ----------------------------------------------------------------------------------


async def test_s_saves_the_draft_then_quits(console: Callable[..., ConsoleApp], skills: Path):
    app = console()
    async with app.run_test(size=(120, 40)) as pilot:
        await draft_and_ask(pilot)
        text = screen_text(app)
        assert "Quit with an unsaved policy draft?" in text
        assert "$SVC_CONSOLE_HOME/SKILLS.md" in text
        assert "2 lines differ from the file on disk (1 added, 1 removed)" in text
        assert buttons(app) == ["Save and quit (s)", "Quit without saving (d)", "Cancel (esc)"]
        assert skills.read_text() == GOOD and app.is_running
        await pilot.press("s")
    await until(pilot, lambda: app.return_code == 0)
    assert skills.read_text() == EDITED


async def test_d_quits_and_the_file_stays_as_saved(
    console: Callable[..., ConsoleApp], skills: Path
):
    os.utime(skills, (1, 1))
    app = console()
    async with app.run_test(size=(120, 40)) as pilot:
        await draft_and_ask(pilot)
        await pilot.press("d")
    await until(pilot, lambda: app.return_code == 0)
    assert skills.read_text() == GOOD and skills.stat().st_mtime == 1


async def test_escape_and_cancel_keep_the_console_and_the_draft(
    console: Callable[..., ConsoleApp], skills: Path
):
    app = console()
    async with app.run_test(size=(120, 40)) as pilot:
        await draft_and_ask(pilot)
        await pilot.press("escape")
        await until(pilot, lambda: isinstance(app.screen, PoliciesScreen))
        assert app.is_running and app.return_code is None
        assert editor(app).text == EDITED and skills.read_text() == GOOD

        await pilot.press("q")
        await until(pilot, lambda: asking(app))
        await pilot.press("enter")  # Cancel has the focus: enter alone loses nothing
        await until(pilot, lambda: isinstance(app.screen, PoliciesScreen))
        assert app.is_running and editor(app).text == EDITED

        # Typing in the editor, q is a letter; ctrl+q still quits, and asks.
        await pilot.press("e", "end", "q")
        await until(pilot, lambda: "per_call_max_usdc: 0.20q" in editor(app).text)
        assert not asking(app)
        await pilot.press("ctrl+q")
        await until(pilot, lambda: asking(app))
        await pilot.press("ctrl+q")  # again, in front of the question: still one question
        await pilot.press("escape")
        await until(pilot, lambda: isinstance(app.screen, PoliciesScreen))
        assert app.is_running and "per_call_max_usdc: 0.20q" in editor(app).text
        assert skills.read_text() == GOOD


async def test_the_palettes_quit_asks_too(console: Callable[..., ConsoleApp], skills: Path):
    app = console()
    async with app.run_test(size=(120, 40)) as pilot:
        await open_policies(pilot)
        await edit_line(pilot, CAP_LINE, 4, "0.20")
        await pilot.press("escape", "ctrl+p")
        await type_text(pilot, "Quit")
        await pilot.press("enter")
        await until(pilot, lambda: asking(app))
        await pilot.press("escape")
        await until(pilot, lambda: isinstance(app.screen, PoliciesScreen))
        assert app.is_running and editor(app).text == EDITED


async def test_ctrl_c_neither_quits_nor_loses_the_draft(
    console: Callable[..., ConsoleApp], skills: Path
):
    """ctrl+c copies in the editor and, elsewhere, only says which key quits."""
    app = console()
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await open_policies(pilot)
        await edit_line(pilot, CAP_LINE, 4, "0.20")
        await pilot.press("ctrl+c", "escape", "ctrl+c")
        await until(pilot, lambda: "to quit the app" in screen_text(app))
        assert app.is_running and not asking(app)
        assert editor(app).text == EDITED


# -- what cannot be saved -------------------------------------------------------------------------


async def test_an_invalid_draft_cannot_be_saved_from_the_question(
    console: Callable[..., ConsoleApp], skills: Path
):
    os.utime(skills, (1, 1))
    app = console()
    async with app.run_test(size=(120, 40)) as pilot:
        await draft_and_ask(pilot, "two")
        text = dialog_text(app)
        assert f"It cannot be saved: the draft has 1 error (first {BROKEN_CAP})" in text
        assert "a draft with errors is never saved, and the policy in force stays as it is" in text
        assert "Quit without saving loses it; cancel goes back to it." in text
        assert buttons(app) == ["Quit without saving (d)", "Cancel (esc)"]
        await pilot.press("s")  # not offered: nothing happens
        await pilot.pause()
        assert asking(app) and app.is_running
        assert skills.read_text() == GOOD and skills.stat().st_mtime == 1
        await pilot.press("escape")
        await until(pilot, lambda: isinstance(app.screen, PoliciesScreen))
        assert "per_call_max_usdc: two" in editor(app).text

        await pilot.press("q")
        await until(pilot, lambda: asking(app))
        await pilot.press("d")
    await until(pilot, lambda: app.return_code == 0)
    assert skills.read_text() == GOOD and skills.stat().st_mtime == 1


async def test_a_save_that_fails_is_said_in_the_question_which_stays(
    console: Callable[..., ConsoleApp], skills: Path
):
    app = console()
    async with app.run_test(size=(120, 40)) as pilot:
        await draft_and_ask(pilot)
        # What the atomic save writes first cannot be made: a folder holds its name.
        blocker = skills.with_name(f".{skills.name}.{os.getpid()}.tmp")
        blocker.mkdir()
        try:
            await pilot.press("s")
            await pilot.pause()
            text = dialog_text(app)
            assert "SKILLS.md could not be saved" in text
            assert "Nothing more was saved: quit without saving, or cancel to stay." in text
            assert asking(app) and buttons(app) == ["Quit without saving (d)", "Cancel (esc)"]
            assert skills.read_text() == GOOD
        finally:
            blocker.rmdir()
        await pilot.press("escape")
        await until(pilot, lambda: isinstance(app.screen, PoliciesScreen))
        assert app.is_running and editor(app).text == EDITED


# -- when nothing is asked ------------------------------------------------------------------------


async def test_no_question_when_the_draft_is_the_saved_file(
    console: Callable[..., ConsoleApp], skills: Path
):
    app = console()
    async with app.run_test(size=(120, 40)) as pilot:
        page = await open_policies(pilot)
        await edit_line(pilot, CAP_LINE, 4, "0.20")
        await pilot.press("ctrl+s")
        await until(pilot, lambda: skills.read_text() == EDITED)
        assert page.unsaved_work() is None
        await edit_line(pilot, CAP_LINE, 4, "0.25")  # typed back to what is saved
        await settle(pilot)
        skills.write_text(GOOD)  # and so is the file now
        assert page.unsaved_work() is None
        await pilot.press("escape", "q")
    await until(pilot, lambda: app.return_code == 0)


async def test_no_question_for_the_untouched_template_of_a_new_file(
    console: Callable[..., ConsoleApp], paths: Paths
):
    app = console()
    async with app.run_test(size=(120, 40)) as pilot:
        await open_policies(pilot)
        await pilot.press("q")
    await until(pilot, lambda: app.return_code == 0)
    assert not (paths.home / "SKILLS.md").exists()


async def test_leaving_the_screen_keeps_the_draft_and_asks_nothing(
    console: Callable[..., ConsoleApp], skills: Path
):
    app = console()
    async with app.run_test(size=(120, 40)) as pilot:
        await open_policies(pilot)
        await edit_line(pilot, CAP_LINE, 4, "0.20")
        await pilot.press("escape", "1")
        await until(pilot, lambda: isinstance(app.screen, ApprovalsScreen))
        await pilot.press("4")
        await settle(pilot)
        assert editor(app).text == EDITED and "unsaved: +1 -1 lines" in screen_text(app)
        # From another screen, quitting still asks about the policy draft.
        await pilot.press("escape", "1")
        await until(pilot, lambda: isinstance(app.screen, ApprovalsScreen))
        await pilot.press("q")
        await until(pilot, lambda: asking(app))
        assert "$SVC_CONSOLE_HOME/SKILLS.md" in screen_text(app)
        await pilot.press("s")
    await until(pilot, lambda: skills.read_text() == EDITED and app.return_code == 0)


# -- files that move under the draft --------------------------------------------------------------


async def test_a_file_changed_on_disk_keeps_the_draft_and_the_question_says_so(
    console: Callable[..., ConsoleApp], skills: Path
):
    app = console()
    async with app.run_test(size=(120, 40)) as pilot:
        await open_policies(pilot)
        await edit_line(pilot, CAP_LINE, 4, "0.20")
        elsewhere = GOOD.replace("max_usdc: 5", "max_usdc: 6")
        skills.write_text(elsewhere)  # saved by someone else meanwhile
        await until(pilot, lambda: in_force(app) == sha(elsewhere))
        await settle(pilot)
        assert editor(app).text == EDITED  # the edited draft stays
        await pilot.press("escape", "q")
        await until(pilot, lambda: asking(app))
        text = screen_text(app)
        assert "4 lines differ from the file on disk (2 added, 2 removed)" in text
        assert "the file changed on disk since the draft began; saving replaces it" in text
        await pilot.press("s")  # the question was the confirmation
    await until(pilot, lambda: skills.read_text() == EDITED)


async def test_two_drafts_are_named_and_saved_together(
    console: Callable[..., ConsoleApp], skills: Path, paths: Paths
):
    team = paths.home / "team.md"
    team.write_text("# Team\n\n```policy\ndynamic_pricing: false\n```\n")
    app = console()
    app.runtime.policy_files, app.runtime.policy_optional = [skills, team], False
    async with app.run_test(size=(120, 40)) as pilot:
        await open_policies(pilot)
        await edit_line(pilot, CAP_LINE, 4, "0.20")
        await pilot.press("escape", "right_square_bracket")
        await edit_line(pilot, 4, 5, "true")
        await settle(pilot)
        await pilot.press("escape", "q")
        await until(pilot, lambda: asking(app))
        text = screen_text(app)
        assert "Quit with 2 unsaved policy drafts?" in text
        assert "$SVC_CONSOLE_HOME/SKILLS.md" in text and "$SVC_CONSOLE_HOME/team.md" in text
        assert text.count("2 lines differ from the file on disk (1 added, 1 removed)") == 2
        await pilot.press("s")
    await until(pilot, lambda: skills.read_text() == EDITED)
    assert team.read_text() == "# Team\n\n```policy\ndynamic_pricing: true\n```\n"


async def test_a_hostile_file_name_is_shown_inert(console: Callable[..., ConsoleApp], paths: Paths):
    paths.home.mkdir(parents=True, exist_ok=True)
    hostile = paths.home / "x[@click=app.quit]y[b]\x1b[31m\u202e.md"
    hostile.write_text(GOOD)
    app = console()
    app.runtime.policy_files = [hostile]
    async with app.run_test(size=(160, 40)) as pilot:
        await open_policies(pilot)
        await edit_line(pilot, CAP_LINE, 4, "0.20")
        await settle(pilot)
        await pilot.press("escape", "q")
        await until(pilot, lambda: asking(app))
        text = screen_text(app)
        assert "$SVC_CONSOLE_HOME/x[@click=app.quit]y[b]<ESC>[31m<U+202E>.md" in text
        assert "\x1b" not in text and "\u202e" not in text
        await pilot.press("escape")
        await until(pilot, lambda: isinstance(app.screen, PoliciesScreen))
        assert app.is_running and hostile.read_text() == GOOD


# -- snapshots ------------------------------------------------------------------------------------


def test_snapshot_the_question(
    snap_compare: Any, console: Callable[..., ConsoleApp], skills: Path, sandbox: Any
):
    sandbox.state.accounts.skills_md = GOOD
    assert snap_compare(console(), terminal_size=(120, 40), run_before=draft_and_ask)


def test_snapshot_the_question_narrow(
    snap_compare: Any, console: Callable[..., ConsoleApp], skills: Path, sandbox: Any
):
    sandbox.state.accounts.skills_md = GOOD
    assert snap_compare(console(), terminal_size=(80, 24), run_before=draft_and_ask)


def test_snapshot_an_invalid_draft_narrow(
    snap_compare: Any, console: Callable[..., ConsoleApp], skills: Path, sandbox: Any
):
    """80x24, the longest question: why the draft cannot be saved, two answers left."""
    sandbox.state.accounts.skills_md = GOOD

    async def run_before(pilot: Pilot[Any]) -> None:
        await draft_and_ask(pilot, "two")

    assert snap_compare(console(), terminal_size=(80, 24), run_before=run_before)
