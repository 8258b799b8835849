"""The policies screen against the real thing: SKILLS.md files in a temporary SVC_CONSOLE_HOME,
the broker's live policy and its watcher, the sandbox's `GET /api/agent/policies` over HTTP and
the SQLite ledger the simulation replays. The author is a Textual pilot pressing keys."""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from helpers import FakeClock
from textual.pilot import Pilot
from tui_support import (
    build_console,
    clear_notices,
    notices,
    screen_text,
    seed_pending,
    started,
    type_text,
    until,
)

from svc_console.broker.params import SubmitParams
from svc_console.config.paths import Paths
from svc_console.core.states import State
from svc_console.policy import ManualReview
from svc_console.policy.drafts import TEMPLATE, check, read_saved
from svc_console.policy.drift import Difference, Drift
from svc_console.runtime import Runtime
from svc_console.tui import bindings
from svc_console.tui.app import ConsoleApp
from svc_console.tui.colors import Palette
from svc_console.tui.policies.dialogs import ConfirmPolicyChange
from svc_console.tui.policies.diff import diff_text
from svc_console.tui.policies.drift import DriftShown, rules_text, summary_text
from svc_console.tui.policies.editor import PolicyEditor, highlights
from svc_console.tui.policies.errors import PolicyErrorList
from svc_console.tui.policies.screen import PoliciesScreen

GOOD = (
    "# SKILLS.md\n"
    "\n"
    "Web searches only; nothing above a quarter a call.\n"
    "\n"
    "```policy\n"
    "per_call_max_usdc: 0.25\n"  # line 6
    "budgets:\n"
    "  - {name: daily, per: agent, window: day, max_usdc: 5}\n"
    "```\n"
)
CAP_LINE = 6
SEARCH = {
    "kind": "market_call",
    "endpoint_id": "ep_websearch_basic",  # 0.01 USDC, fixed
    "inputs": {"query": "solar panel prices 2026"},
    "purpose": "background for the weekly energy note",
}
SIMULATED = GOOD.replace("per_call_max_usdc: 0.25", "per_call_max_usdc: 0.05") + (
    "\nSmall searches go through on their own.\n\n```policy\nauto_approve:\n"
    "  - name: tiny\n    when: {max_usdc: 0.03}\n```\n"
)


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


@pytest.fixture(autouse=True)
def saved_by_alice(monkeypatch: pytest.MonkeyPatch) -> None:
    """Who saved a file is its owner's login: fixed, so screenshots do not name the machine's."""
    for module in ("svc_console.broker.policy_link", "svc_console.policy.watch"):
        monkeypatch.setattr(f"{module}.owner_of", lambda path: "alice")


@pytest.fixture
def skills(paths: Paths) -> Path:
    paths.home.mkdir(parents=True, exist_ok=True)
    return paths.home / "SKILLS.md"


@pytest.fixture
def console(make_runtime: Callable[..., Runtime], clock: FakeClock) -> Callable[..., ConsoleApp]:
    return lambda **options: build_console(make_runtime, clock, **options)


def screen(app: ConsoleApp) -> PoliciesScreen:
    assert isinstance(app.screen, PoliciesScreen)
    return app.screen


def editor(app: ConsoleApp) -> PolicyEditor:
    return screen(app).query_one(PolicyEditor)


async def settle(pilot: Pilot[Any]) -> PoliciesScreen:
    """Wait until the draft is checked and the service has answered."""
    await until(pilot, lambda: isinstance(pilot.app.screen, PoliciesScreen))
    page = screen(pilot.app)
    await until(pilot, lambda: page.settled)
    await pilot.pause()  # and drawn
    return page


async def open_policies(pilot: Pilot[Any]) -> PoliciesScreen:
    await started(pilot)
    await pilot.press("4")
    return await settle(pilot)


async def edit_line(pilot: Pilot[Any], line: int, erase: int, text: str) -> None:
    """In the editor: go to the end of `line`, erase `erase` characters, type `text`."""
    page = screen(pilot.app)
    if page.focused is not editor(pilot.app):
        await pilot.press("e")
    row, _ = editor(pilot.app).cursor_location
    step = "down" if line - 1 > row else "up"
    await pilot.press(*([step] * abs(line - 1 - row)), "end", *(["backspace"] * erase))
    await type_text(pilot, text)


def in_force(app: ConsoleApp) -> str | None:
    return app.runtime.policy.status.sha256


# -- snapshots ------------------------------------------------------------------------------------


def test_snapshot_no_policy_file(snap_compare: Any, console: Callable[..., ConsoleApp], skills):
    """No SKILLS.md: the operator decides everything; the editor offers a template to save."""
    app = console()
    assert snap_compare(app, terminal_size=(120, 40), run_before=open_policies)


def test_snapshot_a_valid_policy_in_sync(
    snap_compare: Any, console: Callable[..., ConsoleApp], skills: Path, sandbox: Any
):
    """A valid file in force, saved by alice, the service running the same SKILLS.md."""
    skills.write_text(GOOD)
    sandbox.state.accounts.skills_md = GOOD
    app = console()
    assert snap_compare(app, terminal_size=(120, 40), run_before=open_policies)


async def _break_the_cap(pilot: Pilot[Any]) -> None:
    await open_policies(pilot)
    await edit_line(pilot, CAP_LINE, 4, "two")
    await settle(pilot)


def test_snapshot_an_invalid_draft_with_the_error_at_its_line(
    snap_compare: Any, console: Callable[..., ConsoleApp], skills: Path, sandbox: Any
):
    """The draft says `two` for a cap: the line is marked in the gutter, the error listed as the
    CLI prints it, the file as saved still valid and in force."""
    skills.write_text(GOOD)
    sandbox.state.accounts.skills_md = GOOD
    app = console()
    assert snap_compare(app, terminal_size=(120, 40), run_before=_break_the_cap)


def test_snapshot_the_diff(
    snap_compare: Any, console: Callable[..., ConsoleApp], skills: Path, sandbox: Any
):
    skills.write_text(GOOD)
    sandbox.state.accounts.skills_md = GOOD

    async def run_before(pilot: Pilot[Any]) -> None:
        await open_policies(pilot)
        await edit_line(pilot, CAP_LINE, 4, "0.10")
        await settle(pilot)
        await pilot.press("escape", "v")

    assert snap_compare(console(), terminal_size=(120, 40), run_before=run_before)


def test_snapshot_simulation_results(
    snap_compare: Any,
    console: Callable[..., ConsoleApp],
    skills: Path,
    sandbox: Any,
    paths: Paths,
    clock: FakeClock,
):
    """Past requests (0.01 to 0.13 USDC) replayed against a draft with a 0.05 cap and an
    auto-approve rule up to 0.03: some newly denied, some newly approved automatically."""
    seed_pending(paths, 8, clock.now)
    skills.write_text(SIMULATED)
    sandbox.state.accounts.skills_md = SIMULATED

    async def run_before(pilot: Pilot[Any]) -> None:
        page = await open_policies(pilot)
        await pilot.press("t")
        await until(pilot, lambda: page.simulation.lines)

    assert snap_compare(console(), terminal_size=(120, 40), run_before=run_before)


def test_snapshot_drift_flagged(
    snap_compare: Any, console: Callable[..., ConsoleApp], skills: Path, sandbox: Any
):
    """The service runs a SKILLS.md with another cap: drift, the rule that differs, both sides."""
    skills.write_text(GOOD)
    sandbox.state.accounts.skills_md = GOOD.replace("0.25", '"2.00"')

    async def run_before(pilot: Pilot[Any]) -> None:
        await open_policies(pilot)
        await pilot.press("c")
        await settle(pilot)

    assert snap_compare(console(), terminal_size=(120, 40), run_before=run_before)


def test_snapshot_narrow(
    snap_compare: Any, console: Callable[..., ConsoleApp], skills: Path, sandbox: Any
):
    """80x24: the invalid draft, its marked line and its error all on screen."""
    skills.write_text(GOOD)
    sandbox.state.accounts.skills_md = GOOD
    assert snap_compare(console(), terminal_size=(80, 24), run_before=_break_the_cap)


# -- the author's path ----------------------------------------------------------------------------


async def test_edit_into_an_error_see_it_at_its_line_fix_save_and_the_broker_follows(
    console: Callable[..., ConsoleApp], skills: Path
):
    skills.write_text(GOOD)
    app = console()
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        page = await open_policies(pilot)
        broker = app.runtime.broker
        assert in_force(app) == sha(GOOD)
        before = await broker.submit(SubmitParams(agent="research-bot", **SEARCH))
        await until(pilot, lambda: broker.get(before.id).state == State.pending)
        assert broker.get(before.id).verdict.outcome == "ask"
        await until(pilot, lambda: "New request from" in notices(app))
        await clear_notices(pilot)  # "New request from ..." would cover the error list

        # An invalid draft: the error at its line, in the gutter and in the list.
        await edit_line(pilot, CAP_LINE, 4, "two")
        await settle(pilot)
        error = f'SKILLS.md:{CAP_LINE}:1: per_call_max_usdc must be a number of USDC, got "two"'
        assert editor(app).error_lines == [CAP_LINE]
        assert error in screen_text(app)
        assert f"{CAP_LINE}● per_call_max_usdc: two" in screen_text(app)
        assert "1 error, first at SKILLS.md:6:1" in screen_text(app)

        # Saving it is refused: the file and the policy in force stay as they were.
        await pilot.press("ctrl+s")
        await until(pilot, lambda: "was not saved" in notices(app))
        assert skills.read_text() == GOOD and in_force(app) == sha(GOOD)
        assert app.runtime.policy.status.state == "active"

        # f8 goes to the error; fixing the value clears it.
        await pilot.press("home", "up", "up", "f8")
        await until(pilot, lambda: editor(app).cursor_location == (CAP_LINE - 1, 0))
        await edit_line(pilot, CAP_LINE, 3, "0.005")
        await settle(pilot)
        assert editor(app).error_lines == [] and "first at" not in screen_text(app)
        assert not page.query_one(PolicyErrorList).display

        # Saved: atomically, owner-only, in force within a second, shown as such.
        await pilot.press("ctrl+s")
        fixed = GOOD.replace("0.25", "0.005")
        await until(pilot, lambda: skills.read_text() == fixed)
        assert stat.S_IMODE(skills.stat().st_mode) == 0o600
        await until(pilot, lambda: in_force(app) == sha(fixed))
        await until(pilot, lambda: f"saved as {sha(fixed)[:12]} · in force" in screen_text(app))
        assert f"SKILLS.md  valid · {sha(fixed)[:12]} · in force" in screen_text(app)
        assert "saved 0s ago by alice" in screen_text(app)
        await until(pilot, lambda: "is in force" in notices(app))

        # The broker now judges by the saved policy: the same request is denied by the cap.
        after = await broker.submit(SubmitParams(agent="research-bot", **SEARCH))
        await until(pilot, lambda: broker.get(after.id).state == State.denied)
        verdict = broker.get(after.id).verdict
        assert verdict.outcome == "deny" and "per_call_max_usdc" in " ".join(verdict.rules)


async def test_a_new_file_is_created_from_the_template_and_put_in_force(
    console: Callable[..., ConsoleApp], skills: Path
):
    app = console()
    async with app.run_test(size=(120, 40)) as pilot:
        await open_policies(pilot)
        assert app.runtime.policy.status.state == "none"
        assert editor(app).text == TEMPLATE
        assert "No policy in force" in screen_text(app)
        assert "new file, ctrl+s creates it" in screen_text(app)
        await pilot.press("ctrl+s")
        await until(pilot, lambda: skills.exists() and skills.read_text() == TEMPLATE)
        await until(pilot, lambda: in_force(app) == sha(TEMPLATE))
        await until(pilot, lambda: "In force: version" in screen_text(app))


# -- every key ------------------------------------------------------------------------------------


async def test_e_escape_v_t_c_and_the_views(
    console: Callable[..., ConsoleApp], skills: Path, sandbox: Any
):
    skills.write_text(GOOD)
    sandbox.state.accounts.skills_md = GOOD
    app = console()
    async with app.run_test(size=(120, 40)) as pilot:
        page = await open_policies(pilot)
        assert page.focused is None  # number keys still change screens

        await pilot.press("e")
        await until(pilot, lambda: page.focused is editor(app))
        await pilot.press("x")  # typed, not a command
        await until(pilot, lambda: editor(app).text == "x" + GOOD)
        await pilot.press("escape")
        await until(pilot, lambda: page.focused is None)

        await pilot.press("v")
        await until(pilot, lambda: page.view == "diff" and "+x# SKILLS.md" in screen_text(app))
        await pilot.press("escape")
        await until(pilot, lambda: page.view == "editor")

        await pilot.press("t")
        await until(pilot, lambda: "replayed 0 requests of the last 30d" in screen_text(app))
        assert page.view == "simulation"

        await pilot.press("c")
        await until(pilot, lambda: page.view == "service")
        await until(
            pilot, lambda: "In sync: the service runs the same SKILLS.md" in screen_text(app)
        )

        await pilot.press("e")
        await until(pilot, lambda: page.view == "editor" and page.focused is editor(app))


async def test_enter_on_an_error_and_f8_jump_to_its_line(
    console: Callable[..., ConsoleApp], skills: Path
):
    skills.write_text(GOOD.replace("window: day", "window: fortnight"))
    app = console()
    async with app.run_test(size=(120, 40)) as pilot:
        page = await open_policies(pilot)
        errors = page.query_one(PolicyErrorList)
        assert errors.display and len(errors.errors) == 1
        assert str(errors.errors[0]).startswith("SKILLS.md:8:")
        await pilot.press("e", "escape")  # leaving the editor goes to the errors
        await until(pilot, lambda: page.focused is errors)
        await pilot.press("enter")
        await until(pilot, lambda: page.focused is editor(app))
        assert editor(app).cursor_location[0] == 7
        await pilot.press("up", "up", "up", "f8")
        await until(pilot, lambda: editor(app).cursor_location[0] == 7)


async def test_f8_with_no_errors_says_so(console: Callable[..., ConsoleApp], skills: Path):
    skills.write_text(GOOD)
    app = console()
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await open_policies(pilot)
        await pilot.press("f8")
        await until(pilot, lambda: "The draft has no errors" in notices(app))


async def test_r_reverts_only_when_confirmed(console: Callable[..., ConsoleApp], skills: Path):
    skills.write_text(GOOD)
    app = console()
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        page = await open_policies(pilot)
        await pilot.press("r")
        await until(pilot, lambda: "Nothing to revert" in notices(app))

        await edit_line(pilot, CAP_LINE, 4, "0.5")
        await pilot.press("escape", "r")
        await until(pilot, lambda: isinstance(app.screen, ConfirmPolicyChange))
        await pilot.press("enter")  # the focused answer keeps the draft
        await until(pilot, lambda: app.screen is page)
        assert "0.5" in editor(app).text and "0.25" not in editor(app).text

        await pilot.press("r")
        await until(pilot, lambda: isinstance(app.screen, ConfirmPolicyChange))
        await pilot.press("escape")  # so does escape
        await until(pilot, lambda: app.screen is page)
        assert "0.25" not in editor(app).text

        await pilot.press("r")
        await until(pilot, lambda: isinstance(app.screen, ConfirmPolicyChange))
        await pilot.press("shift+tab", "enter")
        await until(pilot, lambda: app.screen is page)
        assert editor(app).text == GOOD
        await settle(pilot)
        assert "same as saved" in screen_text(app)


async def test_brackets_switch_between_policy_files(
    console: Callable[..., ConsoleApp], skills: Path, paths: Paths
):
    team = paths.home / "team.md"
    skills.write_text(GOOD)
    # A second file setting the cap again: an error only the two files together have.
    team.write_text("# Team\n\n```policy\nper_call_max_usdc: 0.10\n```\n")
    app = console()
    app.runtime.policy_files, app.runtime.policy_optional = [skills, team], False
    async with app.run_test(size=(120, 40)) as pilot:
        page = await open_policies(pilot)
        assert app.runtime.policy.status.state == "invalid"
        assert "▸ SKILLS.md" in screen_text(app) and "  team.md  error at line 4" in screen_text(
            app
        )
        assert editor(app).error_lines == []

        await pilot.press("right_square_bracket")
        await until(
            pilot, lambda: page.file.name == "team.md" and editor(app).text.startswith("# Team")
        )
        await settle(pilot)
        assert editor(app).error_lines == [4]
        assert "team.md:4:1: per_call_max_usdc is already set at SKILLS.md:6:1" in screen_text(app)

        # Another rule instead of the second cap fixes the pair; saving puts both in force.
        await pilot.press("e", "down", "down", "down", "end", "ctrl+u")
        await type_text(pilot, "dynamic_pricing: false")
        await settle(pilot)
        assert editor(app).error_lines == []
        await pilot.press("ctrl+s")
        await until(pilot, lambda: app.runtime.policy.status.state == "active")

        await pilot.press("escape", "left_square_bracket")
        await until(pilot, lambda: page.file.name == "SKILLS.md" and editor(app).text == GOOD)


async def test_a_file_changed_on_disk_is_overwritten_only_when_confirmed(
    console: Callable[..., ConsoleApp], skills: Path
):
    skills.write_text(GOOD)
    app = console()
    async with app.run_test(size=(120, 40)) as pilot:
        page = await open_policies(pilot)
        await edit_line(pilot, CAP_LINE, 4, "0.20")
        elsewhere = GOOD.replace("max_usdc: 5", "max_usdc: 6")
        skills.write_text(elsewhere)  # saved by someone else meanwhile
        await until(pilot, lambda: in_force(app) == sha(elsewhere))
        assert "0.20" in editor(app).text  # an edited draft is kept

        await pilot.press("ctrl+s")
        await until(pilot, lambda: isinstance(app.screen, ConfirmPolicyChange))
        assert "was changed on disk since this draft began" in screen_text(app)
        await pilot.press("enter")  # Cancel has the focus
        await until(pilot, lambda: app.screen is page)
        assert skills.read_text() == elsewhere

        await pilot.press("ctrl+s")
        await until(pilot, lambda: isinstance(app.screen, ConfirmPolicyChange))
        await pilot.press("shift+tab", "enter")
        await until(pilot, lambda: app.screen is page)
        assert skills.read_text() == GOOD.replace("0.25", "0.20")


async def test_an_unedited_draft_follows_a_file_saved_elsewhere(
    console: Callable[..., ConsoleApp], skills: Path
):
    skills.write_text(GOOD)
    app = console()
    async with app.run_test(size=(120, 40)) as pilot:
        await open_policies(pilot)
        broken = GOOD.replace("max_usdc: 5", "max_usdc: lots")
        skills.write_text(broken)
        await until(pilot, lambda: editor(app).text == broken)
        await settle(pilot)
        # The broker keeps the last valid version; the screen says so and marks the line.
        assert app.runtime.policy.status.state == "invalid"
        text = screen_text(app)
        assert f"version {sha(GOOD)[:12]} stays in force" in text
        assert "auto-approval suspended" in text and "error at line 8" in text
        assert editor(app).error_lines == [8]


async def test_ctrl_s_with_nothing_changed_saves_nothing(
    console: Callable[..., ConsoleApp], skills: Path
):
    skills.write_text(GOOD)
    os.utime(skills, (1, 1))
    app = console()
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await open_policies(pilot)
        await pilot.press("ctrl+s")
        await until(pilot, lambda: "Nothing to save" in notices(app))
        assert skills.stat().st_mtime == 1


async def test_a_broker_with_an_engine_of_its_own_saves_nothing(
    console: Callable[..., ConsoleApp], skills: Path
):
    app = console()
    app.runtime.broker_options["policy"] = ManualReview()
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await open_policies(pilot)
        assert "runs a policy engine of its own" in screen_text(app)
        await pilot.press("ctrl+s")
        await until(pilot, lambda: "nothing saved here would be in force" in notices(app))
        assert not skills.exists()


async def test_text_from_files_and_the_service_is_shown_inert(
    console: Callable[..., ConsoleApp], skills: Path, sandbox: Any
):
    hostile = "\x1b]8;;https://evil.example\x1b\\x [@click=app.quit]y[/] \u202e"
    skills.write_text(GOOD.replace("Web searches only", hostile))
    # The service's YAML spells the same characters with escapes ("\e" is ESC).
    escaped = '"\\e]8;;https://evil.example\\e\\\\x [@click=app.quit]y[/] \\u202e"'
    sandbox.state.accounts.skills_md = f"```policy\ndeny:\n  providers: [{escaped}]\n```\n"
    app = console()
    async with app.run_test(size=(160, 50)) as pilot:
        await open_policies(pilot)
        # In the editor, as visible characters; the text itself is kept.
        assert "␛]8;;https://evil.example␛\\x [@click=app.quit]y[/] �" in screen_text(app)
        await edit_line(pilot, 3, 0, "z")
        assert hostile in editor(app).text
        await settle(pilot)
        await pilot.press("escape", "v")
        await until(pilot, lambda: screen(app).view == "diff")
        diff = screen_text(app)
        assert "<ESC>]8;;https://evil.example<ESC>" in diff and "<U+202E>" in diff
        await pilot.press("c")
        await until(pilot, lambda: "Drift:" in screen_text(app))
        service = screen_text(app)
        # JSON and YAML spell ESC as an escape; the bidi override is made visible.
        assert "\\e]8;;https://evil.example\\e" in service and "<U+202E>" in service
        assert "\x1b" not in service and "\u202e" not in service
        assert app.is_running  # the [@click=app.quit] stayed text


def test_the_keys_are_registered_with_ids():
    ids = {command.id for command in bindings.commands("policies")}
    assert {
        "policies.edit",
        "policies.save",
        "policies.next_error",
        "policies.diff",
        "policies.simulate",
        "policies.service",
        "policies.revert",
        "policies.leave",
        "policies.next_file",
        "policies.previous_file",
    } == ids


def test_the_drift_view_and_the_diff_never_pass_a_control_character():
    hostile = "\x1b]0;title\x07 \u202e \x9b31m"
    colours = Palette(heading="bold", label="dim", high="red", warn="yellow", info="b", good="g")
    drift = Drift("a" * 64, hostile, False, (Difference(hostile, hostile, [hostile]),), (hostile,))
    shown = DriftShown(drift=drift, local={hostile: hostile}, service={"k": [hostile]})
    texts = [
        summary_text(shown, colours),
        rules_text(shown.local, "", colours),
        rules_text(shown.service, "", colours),
        diff_text([f"+{hostile}", f"-{hostile}", hostile], colours),
    ]
    for text in texts:
        assert not any(ch in text.plain for ch in "\x1b\x07\u202e\x9b"), text.plain


# -- the pieces -----------------------------------------------------------------------------------


def test_a_draft_is_checked_with_the_other_files(tmp_path: Path):
    first, second = tmp_path / "a.md", tmp_path / "b.md"
    first.write_text(GOOD)
    second.write_text("```policy\nper_call_max_usdc: 1\n```\n")
    files = [read_saved(first, "a.md"), read_saved(second, "b.md")]
    together = check([(files[0], None), (files[1], None)])
    assert not together.valid
    assert [str(e) for e in together.errors] == [
        f"b.md:2:1: per_call_max_usdc is already set at a.md:{CAP_LINE}:1"
    ]
    fixed = check([(files[0], None), (files[1], "```policy\ndeny:\n  chains: [solana]\n```\n")])
    assert fixed.valid and fixed.loaded is not None and len(fixed.loaded.files) == 2
    missing = check([(read_saved(tmp_path / "gone.md", "gone.md"), None)])
    assert [str(e) for e in missing.errors] == ["gone.md:1:1: no such file"]


def test_highlights_follow_markdown_and_the_yaml_of_policy_blocks():
    lines = [
        "# Title",
        "Prose with `code` and a: colon",
        "```policy",
        "per_call_max_usdc: 0.25  # a quarter",
        '  - {name: "é daily", max_usdc: 5, verified: true}',
        "```",
        "```yaml",
        "not_policy: 1",
        "```",
    ]
    marks = highlights(lines)
    assert marks[0] == [(0, None, "heading")]
    assert marks[1] == [(11, 17, "inline_code")]
    assert (0, 17, "yaml.field") in marks[3] and (19, 23, "number") in marks[3]
    assert (25, None, "comment") in marks[3]
    line = lines[4]
    # Byte offsets: the é before "daily" is two bytes.
    start = len(line[: line.index('"é')].encode())
    assert (start, start + len('"é daily"'.encode()), "string") in marks[4]
    assert any(name == "boolean" for _, _, name in marks[4])
    assert all(name != "yaml.field" for _, _, name in marks.get(7, []))
