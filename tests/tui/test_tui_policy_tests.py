"""The policies screen runs the draft's `policy-test` blocks as the author types: the draft's
status counts them, a failing one is listed as `svc-console policy test` prints it, and choosing
it shows its line in the editor."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from helpers import FakeClock
from test_tui_policies import CAP_LINE, GOOD, edit_line, open_policies, saved_by_alice, settle
from textual.pilot import Pilot
from tui_support import build_console, screen_text, until

from svc_console.config.paths import Paths
from svc_console.runtime import Runtime
from svc_console.tui.app import ConsoleApp
from svc_console.tui.policies.errors import PolicyErrorList

__all__ = ["saved_by_alice"]  # the autouse fixture: who saved a file is fixed in screenshots

TESTED = GOOD + (
    "\n"
    "```policy-test\n"
    "- name: a quarter waits for the operator\n"
    "  agent: research-bot\n"
    "  amount_usdc: 0.25\n"
    "  expect: ask\n"
    "- name: above a quarter is refused\n"  # line 16
    "  agent: research-bot\n"
    "  amount_usdc: 0.30\n"
    "  expect: deny\n"
    "  rule: per_call_max_usdc\n"
    "```\n"
)
REFUSED_LINE = 16
FAILS = (
    "SKILLS.md:16:3: policy test 'above a quarter is refused': expected deny by"
    " 'per_call_max_usdc', got ask (no rule decides it)"
)


def console_with_tests(
    paths: Paths, make_runtime: Callable[..., Runtime], clock: FakeClock, sandbox: Any
) -> ConsoleApp:
    paths.home.mkdir(parents=True, exist_ok=True)
    (paths.home / "SKILLS.md").write_text(TESTED)
    sandbox.state.accounts.skills_md = TESTED  # the service runs the same: no drift
    return build_console(make_runtime, clock)


async def _widen_the_cap(pilot: Pilot[Any]) -> None:
    await open_policies(pilot)
    await edit_line(pilot, 6, 4, "0.50")
    await settle(pilot)


def test_snapshot_a_widened_cap_fails_its_test(
    snap_compare: Any,
    paths: Paths,
    make_runtime: Callable[..., Runtime],
    clock: FakeClock,
    sandbox: Any,
):
    """The cap widened from 0.25 to 0.50 in the draft: the status says one of two policy tests
    fails, and the test is listed with what decided instead."""
    app = console_with_tests(paths, make_runtime, clock, sandbox)
    assert snap_compare(app, terminal_size=(120, 40), run_before=_widen_the_cap)


async def test_tests_run_as_the_author_types_and_a_failing_one_jumps_to_its_line(
    paths: Paths, make_runtime: Callable[..., Runtime], clock: FakeClock, sandbox: Any
):
    app = console_with_tests(paths, make_runtime, clock, sandbox)
    async with app.run_test(size=(120, 40)) as pilot:
        page = await open_policies(pilot)
        listed = page.query_one(PolicyErrorList)
        assert "valid · 2 policy tests pass" in screen_text(app)
        assert not listed.display

        await edit_line(pilot, CAP_LINE, 4, "0.50")
        await settle(pilot)
        assert "1 of 2 policy tests fail" in screen_text(app)
        assert [str(error) for error in listed.errors] == [FAILS]

        listed.focus()
        await pilot.press("enter")
        await until(pilot, lambda: page.editor.cursor_location[0] == REFUSED_LINE - 1)

        await edit_line(pilot, CAP_LINE, 4, "0.25")
        await settle(pilot)
        assert "2 policy tests pass" in screen_text(app)
        await until(pilot, lambda: not listed.display)


def test_a_saved_file_whose_tests_fail_is_checked_as_such(tmp_path: Path):
    """The check the screen runs on opening: a file whose tests already fail, before anything
    is typed."""
    from svc_console.policy.drafts import check, read_saved

    skills = tmp_path / "SKILLS.md"
    skills.write_text(TESTED.replace("0.25\nbudgets", "0.50\nbudgets"))
    result = check([(read_saved(skills, "SKILLS.md"), None)])
    assert result.valid and result.tests == 2
    assert [str(error) for error in result.failing] == [FAILS]
