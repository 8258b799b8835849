"""The operator sees a broken policy: the POLICY ERROR banner on the approvals screen appears
with the first error at its line when a save is invalid, and goes when the file is fixed; the
detail of a request shows the rules that decided it and the budget impact."""

from __future__ import annotations

import os
from pathlib import Path

from helpers import agent_token
from tui_support import build_console, screen_text, started, until

from svc_console.agent import AsyncAgent
from svc_console.tui.approvals.detail import RequestDetail
from svc_console.tui.widgets.banner import PolicyBanner

GOOD = (
    "# SKILLS.md\n\n```policy\nbudgets:\n"
    "  - {name: daily, per: agent, window: day, max_usdc: 5}\n```\n"
)


def save(path: Path, text: str) -> None:
    temporary = path.with_name(f".{path.name}.swp")
    temporary.write_text(text)
    os.replace(temporary, path)


async def test_the_banner_shows_a_broken_policy_until_it_is_fixed(make_runtime, clock, paths):
    skills = paths.home / "SKILLS.md"
    paths.home.mkdir(parents=True, exist_ok=True)
    save(skills, GOOD)
    app = build_console(make_runtime, clock)
    async with app.run_test(size=(120, 40)) as pilot:
        await started(pilot)
        banner = app.screen.query_one(PolicyBanner)
        assert not banner.display

        save(skills, GOOD.replace("max_usdc: 5", "max_usdc: five"))
        await until(pilot, lambda: banner.display)
        text = str(banner.render())
        assert text.startswith(f"POLICY ERROR {skills}:5:")
        assert "must be a number of USDC" in text and "auto-approval suspended" in text

        save(skills, GOOD)
        await until(pilot, lambda: not banner.display)


async def test_the_detail_shows_the_deciding_rules_and_the_budget_impact(
    make_runtime, clock, paths
):
    paths.home.mkdir(parents=True, exist_ok=True)
    save(paths.home / "SKILLS.md", GOOD)
    app = build_console(make_runtime, clock)
    async with app.run_test(size=(120, 40)) as pilot:
        await started(pilot)
        async with AsyncAgent(
            "bot", app.runtime.paths.socket, token=agent_token(app.runtime.paths, "bot")
        ) as agent:
            ticket = await agent.submit(
                endpoint_id="ep_websearch_basic", inputs={"query": "x"}, purpose="p"
            )
        broker = app.runtime.broker
        await until(pilot, lambda: broker.get(ticket["request_id"]).verdict is not None)
        budget = broker.get(ticket["request_id"]).verdict.budgets[0]
        assert (budget.budget, budget.line) == ("daily: bot", 5)
        # The approvals screen's detail of the (only, selected) request shows the impact, below
        # the budgets as they stand now (tests/tui/test_tui_budgets.py): read the whole detail.
        detail = app.screen.query_one(RequestDetail)
        await until(pilot, lambda: "daily: bot" in screen_text(app))
        await until(pilot, lambda: "Budget impact" in detail.text)
        shown = detail.text
        assert "0.00 → 0.01" in shown and "SKILLS.md:5" in shown
