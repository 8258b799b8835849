"""The app shell: moving between screens, the command palette, F1 help, themes and the operator's
keymap, against the real runtime (sandbox over HTTP, socket, ledger file)."""

from __future__ import annotations

import stat
import sys
import tomllib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import FakeClock, seed_in_flight
from textual.actions import parse as parse_action
from textual.app import ComposeResult
from textual.command import CommandList, CommandPalette
from textual.pilot import Pilot
from textual.screen import Screen
from textual.widgets import Footer, Header, Static
from tui_support import (
    build_console,
    clear_notices,
    listed_notices,
    notices,
    rows,
    screen_text,
    started,
    type_text,
    until,
)

from svc_console.agent import AsyncAgent
from svc_console.core.states import State
from svc_console.runtime import Runtime
from svc_console.tui import bindings, navigation
from svc_console.tui.app import ConsoleApp
from svc_console.tui.approvals.screen import ApprovalsScreen
from svc_console.tui.commands import ConsoleCommands
from svc_console.tui.help import HelpScreen
from svc_console.tui.modals import DenyReasonModal
from svc_console.tui.notices import NoticesScreen
from svc_console.tui.preferences import check_keymap, load_preferences
from svc_console.tui.saved_theme import save_theme
from svc_console.tui.unsaved import QuitWithUnsavedWork

SEARCH = {
    "endpoint_id": "ep_websearch_basic",
    "inputs": {"query": "heat pumps"},
    "purpose": "market sizing",
}


class ProbeScreen(Screen[None]):
    """A screen of this test's own, registered like any screen module registers its screen."""

    def __init__(self, runtime: Runtime) -> None:
        super().__init__()
        self.runtime = runtime

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static("the probe screen", id="probe")
        yield Footer()


@pytest.fixture
def probe() -> Iterator[None]:
    navigation.add(
        navigation.ScreenEntry(
            "probe", "Probe", "9", 90, build=ProbeScreen, screen_type=ProbeScreen
        )
    )
    yield
    navigation.remove("probe")


@pytest.fixture
def console(make_runtime: Callable[..., Runtime], clock: FakeClock) -> Callable[..., ConsoleApp]:
    return lambda **options: build_console(make_runtime, clock, **options)


def settings(home: Path, text: str) -> Path:
    path = home / "settings.toml"
    path.write_text(text)
    return path


async def submit(app: ConsoleApp, pilot: Pilot[Any]) -> str:
    """One request, waited for until it is on screen and announced."""
    async with AsyncAgent("research-bot", app.runtime.paths.socket) as agent:
        request_id = (await agent.submit(**SEARCH))["request_id"]
    await until(pilot, lambda: "New request from research-bot" in notices(app))
    await rows(pilot, 1)
    return request_id


async def run_from_palette(pilot: Pilot[Any], query: str, expected: str) -> None:
    """Open the palette, type `query`, wait until `expected` is the first match and run it."""
    await pilot.press("ctrl+p")
    await until(pilot, lambda: isinstance(pilot.app.screen, CommandPalette))
    await type_text(pilot, query)

    def first_match() -> str:
        commands = pilot.app.screen.query_one(CommandList)
        return str(commands.get_option_at_index(0).prompt) if commands.option_count else ""

    await until(pilot, lambda: first_match().startswith(expected))
    await pilot.press("enter")
    await until(pilot, lambda: not isinstance(pilot.app.screen, CommandPalette))


def palette_titles(app: ConsoleApp) -> list[str]:
    return [title for title, _, _ in ConsoleCommands(app.screen).entries()]


# -- navigation ---------------------------------------------------------------------------------


async def test_screens_are_reached_by_key_and_palette_and_keep_their_state(
    console: Callable[..., ConsoleApp], probe: None
):
    app = console()
    rang: list[bool] = []
    app.bell = lambda: rang.append(True)  # type: ignore[method-assign]
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await started(pilot)
        approvals = app.screen
        assert navigation.entries()[0].name == "approvals"

        await pilot.press("9")
        await until(pilot, lambda: isinstance(app.screen, ProbeScreen))
        assert "the probe screen" in screen_text(app)
        # Away from the queue, a new request still rings and is announced.
        async with AsyncAgent("research-bot", app.runtime.paths.socket) as agent:
            await agent.submit(**SEARCH)
            await until(pilot, lambda: rang and "New request from" in screen_text(app))

        await pilot.press("1")
        await until(pilot, lambda: app.screen is approvals)
        await rows(pilot, 1)

        await run_from_palette(pilot, "go to probe", "Go to Probe")
        assert isinstance(app.screen, ProbeScreen)
        assert "Go to Approvals" in palette_titles(app) and "Go to Probe" not in palette_titles(app)
        await run_from_palette(pilot, "go to approvals", "Go to Approvals")
        assert app.screen is approvals


def test_screen_registry_refuses_a_taken_key():
    with pytest.raises(ValueError, match="already shows the Approvals screen"):
        navigation.add(
            navigation.ScreenEntry(
                "other", "Other", "1", 5, build=ProbeScreen, screen_type=ProbeScreen
            )
        )
    assert navigation.entry_for(object()) is None


async def test_a_screen_module_that_fails_to_import_is_reported(
    console: Callable[..., ConsoleApp], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    package = tmp_path / "half_built_screens"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "ledgerish").mkdir()
    (package / "ledgerish" / "__init__.py").write_text("")
    (package / "ledgerish" / "screen.py").write_text("raise RuntimeError('not finished yet')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(navigation, "SCREENS_PACKAGE", "half_built_screens")
    try:
        assert navigation.discover() == [
            "the ledgerish screen could not be loaded: RuntimeError: not finished yet"
        ]
        app = console()
        async with app.run_test(size=(120, 40), notifications=True) as pilot:
            await started(pilot)  # the other screens work
            await until(pilot, lambda: "Screen not loaded" in screen_text(app))
            assert "the ledgerish screen could not be loaded" in screen_text(app)
    finally:
        for name in ("half_built_screens", "half_built_screens.ledgerish"):
            sys.modules.pop(name, None)


# -- the command palette ------------------------------------------------------------------------


async def test_palette_runs_the_screen_actions_it_lists(console: Callable[..., ConsoleApp]):
    app = console()
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await started(pilot)
        request_id = await submit(app, pilot)
        titles = palette_titles(app)
        assert {"Approve", "Deny", "Filter", "Sort by amount", "History", "Help", "Quit"} <= set(
            titles
        )
        assert "Theme: console-light" in titles and "Theme: console-dark" not in titles
        assert "Sort by decision time" not in titles  # the pending list has no decisions

        await run_from_palette(pilot, "deny", "Deny")
        assert isinstance(app.screen, DenyReasonModal)
        await type_text(pilot, "from the palette")
        await pilot.press("enter")
        await until(pilot, lambda: app.runtime.broker.get(request_id).state == State.denied)

        await run_from_palette(pilot, "history", "History")
        await until(pilot, lambda: "p Pending" in screen_text(app))
        titles = palette_titles(app)
        # What the history tab cannot do is not offered.
        assert "Approve" not in titles and "Sort by time left" not in titles
        assert "Pending" in titles and "Sort by decision time" in titles


async def test_palette_switches_theme_and_the_next_start_keeps_it(
    console: Callable[..., ConsoleApp], home: Path
):
    app = console()
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await started(pilot)
        assert app.theme == "console-dark"
        await run_from_palette(pilot, "theme console-high", "Theme: console-high-contrast")
        assert app.theme == "console-high-contrast"
        await until(pilot, lambda: "saved in" in screen_text(app))
    path = home / "settings.toml"
    assert tomllib.loads(path.read_text()) == {"theme": "console-high-contrast"}
    assert stat.S_IMODE(path.stat().st_mode) == 0o600

    again = console()
    async with again.run_test(size=(120, 40), notifications=True) as pilot:
        await started(pilot)
        assert again.theme == "console-high-contrast"


SETTINGS_WITH_COMMENTS = """\
# My console.
theme = "console-dark"   # the default, for now

[keymap]
# Approve with y.
"approvals.approve" = "y"
"""


async def test_a_chosen_theme_changes_only_the_theme_line_of_the_settings(
    console: Callable[..., ConsoleApp], home: Path
):
    path = settings(home, SETTINGS_WITH_COMMENTS)
    path.chmod(0o644)
    app = console()
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await started(pilot)
        await run_from_palette(pilot, "theme console-light", "Theme: console-light")
        await until(pilot, lambda: "saved in" in screen_text(app))
    assert path.read_text() == SETTINGS_WITH_COMMENTS.replace(
        'theme = "console-dark"', 'theme = "console-light"'
    )
    assert stat.S_IMODE(path.stat().st_mode) == 0o600

    again = console()
    async with again.run_test(size=(120, 40), notifications=True) as pilot:
        await started(pilot)
        assert again.theme == "console-light" and again.keymap == {"approvals.approve": "y"}


@pytest.mark.parametrize(
    ("text", "name", "expected"),
    [
        ("", "console-light", 'theme = "console-light"\n'),
        ('[keymap]\n"a.b" = "y"\n', "x", 'theme = "x"\n[keymap]\n"a.b" = "y"\n'),
        ('"theme"=\'old\' # mine\r\nk = 1\n', "x", '"theme"="x" # mine\r\nk = 1\n'),
        ("theme = 3  # wrong\n", "console-light", 'theme = "console-light"\n'),
        ('[t]\ntheme = "a"\n', "b", 'theme = "b"\n[t]\ntheme = "a"\n'),
        ("k = 1\n", 'my "odd" \\ theme', 'theme = "my \\"odd\\" \\\\ theme"\nk = 1\n'),
        ('theme = """console-dark"""\n', "x", None),
    ],
    ids=["none", "tables-only", "quoted-key-comment-crlf", "not-a-string", "in-a-table",
         "escaped", "multi-line-string"],
)  # fmt: skip
def test_saving_a_theme_changes_only_the_theme(tmp_path: Path, text, name, expected):
    path = tmp_path / "settings.toml"
    path.write_bytes(text.encode())
    problem = save_theme(path, name)
    if expected is None:
        assert problem and "left as it is" in problem and path.read_bytes() == text.encode()
    else:
        assert problem is None and path.read_bytes() == expected.encode()
        assert tomllib.loads(expected)["theme"] == name


async def test_a_broken_settings_file_is_not_overwritten_by_a_chosen_theme(
    console: Callable[..., ConsoleApp], home: Path
):
    broken = 'theme = "console-light\n[keymap]\n"approvals.approve" = "y"\n'
    path = settings(home, broken)
    app = console()
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await started(pilot)
        await clear_notices(pilot)
        await run_from_palette(pilot, "theme console-high", "Theme: console-high-contrast")
        assert app.theme == "console-high-contrast"
        await until(pilot, lambda: "Theme not saved" in screen_text(app))
        await until(
            pilot,
            lambda: (
                "not valid TOML" in listed_notices(app)
                and "this session only" in listed_notices(app)
            ),
        )
    assert path.read_text() == broken


async def test_calls_left_in_flight_by_a_crash_are_announced_at_start_up(
    console: Callable[..., ConsoleApp], paths: Path
):
    seed_in_flight(paths, "req_crash1", endpoint_id="ep_websearch_basic", ceiling="0.02")
    app = console()
    async with app.run_test(size=(160, 50), notifications=True) as pilot:
        await started(pilot)
        await until(pilot, lambda: "1 call to reconcile" in screen_text(app))
        text = notices(app)
        assert "request req_crash1 (ep_websearch_basic, approved ceiling 0.02 USDC)" in text
        assert "may have been charged" in text and "usage history" in text
        assert "Usage screen" in text and "svc-console usage export" in text
        assert app.runtime.broker.get("req_crash1").state == State.unknown


# -- F1 help ------------------------------------------------------------------------------------


async def test_f1_lists_the_keys_of_the_screen_and_closes(console: Callable[..., ConsoleApp]):
    app = console()
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await started(pilot)
        await pilot.press("f1")
        await until(pilot, lambda: isinstance(app.screen, HelpScreen))
        text = screen_text(app)
        assert "Keys: Approvals" in text
        # More keys than a 40-line terminal shows at once: the rest is read half a page at a
        # time (the dialog's frame hides a line or two of what the body counts as its height).
        body = app.screen.query_one("#help-body")
        step = max(1, body.size.height // 2)
        for top in range(0, body.max_scroll_y + step, step):
            body.scroll_to(y=top, animate=False)
            await until(pilot, lambda top=top: body.scroll_y == min(top, body.max_scroll_y))
            text += screen_text(app)
        assert "Everywhere" in text
        for command in bindings.commands("approvals"):
            if command.keys:
                assert command.id in text
        assert "approvals.approve" in text and "Sort by amount" in text  # palette-only, named
        await pilot.press("escape")
        await until(pilot, lambda: isinstance(app.screen, ApprovalsScreen))
        await pilot.press("f1")
        await until(pilot, lambda: isinstance(app.screen, HelpScreen))
        await pilot.press("f1")
        await until(pilot, lambda: isinstance(app.screen, ApprovalsScreen))


# -- keymaps ------------------------------------------------------------------------------------


async def test_keymap_from_settings_moves_keys_everywhere(
    console: Callable[..., ConsoleApp], home: Path, probe: None
):
    settings(
        home,
        "[keymap]\n"
        '"approvals.approve" = "y"\n'
        '"screens.probe" = "f5"\n'
        '"app.help" = "question_mark"\n',
    )
    app = console()
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await started(pilot)
        request_id = await submit(app, pilot)
        assert "y Approve" in screen_text(app) and "a Approve" not in screen_text(app)
        broker = app.runtime.broker

        await pilot.press("a")  # no longer approves
        await pilot.pause()
        assert broker.get(request_id).state == State.pending

        await pilot.press("question_mark")
        await until(pilot, lambda: isinstance(app.screen, HelpScreen))
        line = next(t for t in screen_text(app).splitlines() if "Approve the selected" in t)
        assert line.split()[1:3] == ["y", "Approve"]
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, HelpScreen))
        approve = next(t for t in ConsoleCommands(app.screen).entries() if t[0] == "Approve")
        assert approve[1].endswith("· y")

        await pilot.press("9")  # the probe's default key is gone too
        await pilot.pause()
        assert isinstance(app.screen, ApprovalsScreen)
        await pilot.press("f5")
        await until(pilot, lambda: isinstance(app.screen, ProbeScreen))
        await pilot.press("1")
        await until(pilot, lambda: isinstance(app.screen, ApprovalsScreen))

        await pilot.press("y")
        await until(pilot, lambda: broker.get(request_id).state == State.succeeded)


async def test_bad_keymap_entries_are_named_once_and_the_rest_applies(
    console: Callable[..., ConsoleApp], home: Path
):
    settings(
        home,
        "[keymap]\n"
        '"approvals.aprove" = "y"\n'
        '"approvals.deny" = "a"\n'
        '"approvals.sort" = "ctrl+banana"\n'
        '"approvals.filter" = 3\n'
        '"approvals.history" = "H"\n',
    )
    app = console()
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await started(pilot)
        await until(pilot, lambda: "Settings not applied" in screen_text(app))
        text = notices(app)
        assert "'approvals.aprove': no binding has this id" in text
        assert "'a' is already the key of approvals.approve" in text
        assert "unknown key 'banana'" in text
        assert "must be a string" in text
        assert text.count("Settings not applied") == 1
        await clear_notices(pilot)
        await until(pilot, lambda: "H History" in screen_text(app) and "d Deny" in screen_text(app))


async def test_broken_settings_file_keeps_the_defaults(
    console: Callable[..., ConsoleApp], home: Path
):
    settings(home, 'theme = "console-light\n')
    app = console()
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await started(pilot)
        await until(pilot, lambda: "Settings not applied" in screen_text(app))
        await until(pilot, lambda: "not valid TOML" in listed_notices(app))
        assert app.theme == "console-dark"
        await until(pilot, lambda: "a Approve" in screen_text(app))  # the footer, once refreshed


def test_keymap_checks(tmp_path: Path):
    keymap, problems = check_keymap(
        {
            "approvals.approve": "!",
            "approvals.deny": "ctrl+shift+d, f4",
            "approvals.sort_amount": "m",
            "modal.cancel": "q",
            "help.close": "enter",
            "approvals.pending": "alt+",
            "approvals.history": "hyper+meta+h",
        },
        "settings.toml",
    )
    assert keymap == {
        "approvals.approve": "exclamation_mark",
        "approvals.deny": "ctrl+shift+d,f4",
        "modal.cancel": "q",  # a dialog's keys live apart from the screen's
        "help.close": "enter",
        "approvals.history": "hyper+meta+h",
    }
    assert problems == [
        "settings.toml: keymap 'approvals.sort_amount': this command has no key to move; use"
        " the command palette; not applied",
        "settings.toml: keymap 'approvals.pending': an empty key; not applied",
    ]
    # Swapping two keys is no clash: each remapped key is free once the other moves.
    swapped, problems = check_keymap({"approvals.approve": "d", "approvals.deny": "a"}, "s")
    assert swapped == {"approvals.approve": "d", "approvals.deny": "a"} and problems == []
    # A key already taken app-wide cannot be given to a screen's command.
    _, problems = check_keymap({"approvals.approve": "q"}, "s")
    assert problems == [
        "s: keymap 'approvals.approve': 'q' is already the key of app.quit; not applied"
    ]
    assert load_preferences(tmp_path / "absent.toml").problems == []


def test_every_command_names_an_action_that_exists():
    """A typo in the registry would be a key that silently does nothing."""
    assert navigation.discover() == []
    owners: dict[str, type[object]] = {
        "app": ConsoleApp,
        bindings.SCREENS_SCOPE: ConsoleApp,
        "help": HelpScreen,
        "notices": NoticesScreen,
        "modal": DenyReasonModal,
        "unsaved": QuitWithUnsavedWork,
    }
    owners.update({entry.name: entry.screen_type for entry in navigation.entries()})
    ids = [command.id for _, command in bindings.all_commands()]
    assert len(ids) == len(set(ids))
    for scope, command in bindings.all_commands():
        _, name, _ = parse_action(command.action)
        assert hasattr(owners[scope], f"action_{name}"), command.id


# -- themes -------------------------------------------------------------------------------------


async def test_theme_from_settings_and_fallback_when_it_is_broken(
    console: Callable[..., ConsoleApp], home: Path
):
    settings(home, 'theme = "console-light"\n')
    app = console()
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await started(pilot)
        assert app.theme == "console-light"

    (home / "themes").mkdir()
    (home / "themes" / "mine.toml").write_text('name = "mine"\nprimary = "#12345"\n')
    settings(home, 'theme = "mine"\n')
    app = console()
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await started(pilot)
        await until(pilot, lambda: "Theme not loaded" in screen_text(app))
        text = notices(app)
        assert "mine.toml: 'primary' is not a colour" in text
        assert "theme 'mine' is not available" in text
        assert "The theme in use is 'console-dark'" in text
        assert app.theme == "console-dark"


async def test_user_theme_folder_adds_themes(console: Callable[..., ConsoleApp], home: Path):
    (home / "themes").mkdir()
    (home / "themes" / "night.toml").write_text(
        'name = "night"\nprimary = "#FF8800"\nbackground = "#000010"\n'
    )
    app = console(theme="night")
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await started(pilot)
        assert app.theme == "night" and "Theme: console-dark" in palette_titles(app)


def test_snapshot_high_contrast_narrow(snap_compare: Any, console: Callable[..., ConsoleApp]):
    """The high-contrast theme at 80x24 with a request waiting."""
    app = console(theme="console-high-contrast")

    async def run_before(pilot: Pilot[Any]) -> None:
        await started(pilot)
        await submit(app, pilot)
        await clear_notices(pilot)

    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)


def test_snapshot_light(snap_compare: Any, console: Callable[..., ConsoleApp]):
    """The light theme at 120x40 with a request waiting."""
    app = console(theme="console-light")

    async def run_before(pilot: Pilot[Any]) -> None:
        await started(pilot)
        await submit(app, pilot)
        await clear_notices(pilot)

    assert snap_compare(app, terminal_size=(120, 40), run_before=run_before)


async def test_question_mark_opens_help_as_f1_does_but_types_in_a_text_field(console):
    from svc_console.tui.help import HelpScreen

    app = console()
    async with app.run_test() as pilot:
        await started(pilot)
        await pilot.press("question_mark")
        await until(pilot, lambda: isinstance(app.screen, HelpScreen))
        await pilot.press("question_mark")
        await until(pilot, lambda: not isinstance(app.screen, HelpScreen))
        await pilot.press("slash")  # the filter field of the approvals screen
        await pilot.press("a", "question_mark")
        await until(
            pilot,
            lambda: (
                not isinstance(app.screen, HelpScreen)
                and getattr(app.focused, "value", None) == "a?"
            ),
        )
