"""A fresh console against the embedded sandbox: the service's policy is read in the console's
vocabulary, so saving the sandbox's rules (its text, or the template a new file starts from)
shows the policies in sync, never drift."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from test_tui_policies import console, open_policies, saved_by_alice, settle, sha, skills
from tui_support import screen_text, until

from svc_console.policy.drafts import TEMPLATE
from svc_console.sandbox.skills import DEFAULT_SKILLS_MD
from svc_console.tui.app import ConsoleApp

__all__ = ["console", "saved_by_alice", "skills"]  # fixtures, shared with the policies tests


async def test_the_sandbox_policy_saved_locally_is_in_sync(
    console: Callable[..., ConsoleApp], skills: Path
):
    skills.write_text(DEFAULT_SKILLS_MD)
    app = console()
    async with app.run_test(size=(120, 40)) as pilot:
        await open_policies(pilot)
        await pilot.press("c")
        await settle(pilot)
        shown = screen_text(app)
        assert "In sync: the service runs the same SKILLS.md" in shown
        assert "Drift" not in shown and "drift:" not in shown


async def test_the_first_save_of_a_fresh_console_is_in_sync(
    console: Callable[..., ConsoleApp], skills: Path
):
    """No SKILLS.md yet: the template is saved as it is offered, and the service agrees."""
    app = console()
    async with app.run_test(size=(120, 40)) as pilot:
        await open_policies(pilot)
        await pilot.press("ctrl+s")
        await until(pilot, lambda: app.runtime.policy.status.sha256 == sha(TEMPLATE))
        await pilot.press("c")
        await settle(pilot)
        await until(pilot, lambda: "In sync: the same rules" in screen_text(app))
        assert "Drift" not in screen_text(app)
