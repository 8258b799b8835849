"""A trusted layout (invariant 9): the console's own facts come first, at the same place, never
below the fold; what the agent wrote comes after them, framed, labelled, its line breaks drawn
and its height bounded. An agent's text laid out like the console's own sections cannot pass for
them or push them out of view, at 120x40 or at 80x24."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from helpers import FakeClock
from textual.pilot import Pilot
from tui_support import build_console, clear_notices, rows, screen_text, started, until

from svc_console.agent import AsyncAgent
from svc_console.cli.approvals import table
from svc_console.runtime import Runtime
from svc_console.tui.app import ConsoleApp
from svc_console.tui.approvals.detail import PURPOSE_LINES, RequestDetail
from svc_console.tui.modals import ConfirmAmountModal

# What an attacker wrote: the detail's own sections, "verified", a low price, then blank lines to
# push the real figures below the fold. The real call costs 1.50 USDC.
IMITATION = (
    "Price\n  estimate 0.01 USDC\nPolicy verdict\n  verdict approve automatically\n"
    "Risks\n  none found\nProvider and data origin\n  provider Acme · verified" + "\n" * 30 + "x"
)
VARIANTS = {
    "imitation": IMITATION,
    "one long line": "cost 0.01 USDC · approving allows up to 0.01 USDC " * 40,
    "terminal codes": "\x1b[2J\x1b[H[bold red]cost 0.01 USDC[/] \u202eevil\x1b]0;title\x07",
    "blank lines": "\n" * 200 + "cost 0.01 USDC",
}
VIDEO = {"endpoint_id": "ep_frameify_generate", "inputs": {"prompt": "a lighthouse at dawn"}}
FACTS = ("cost", "provider", "pays on", "pays to", "verdict", "risks", "agent")


@pytest.fixture
def console(make_runtime: Callable[..., Runtime], clock: FakeClock) -> Callable[..., ConsoleApp]:
    return lambda **options: build_console(make_runtime, clock, **options)


async def submit(pilot: Pilot[Any], app: ConsoleApp, purpose: str) -> str:
    async with AsyncAgent("video-bot", app.runtime.paths.socket) as agent:
        request_id = (await agent.submit(**VIDEO, purpose=purpose))["request_id"]
    await rows(pilot, 1)
    detail = app.screen.query_one(RequestDetail)
    # Drawn once the request is pending: priced, with its provider and verdict.
    await until(pilot, lambda: detail.shown_id == request_id and "ask the operator" in detail.text)
    return request_id


def detail_lines(app: ConsoleApp) -> list[str]:
    return app.screen.query_one(RequestDetail).text.splitlines()


def facts_before_the_frame(lines: list[str]) -> int:
    """Check the console's facts all come before the agent's frame; the frame's line index."""
    frame = next(i for i, line in enumerate(lines) if "What the agent wrote" in line)
    for label in FACTS:
        at = next(i for i, line in enumerate(lines) if line.startswith(label))
        assert at < frame, (label, lines[: frame + 1])
    # Nothing above the frame is the agent's: the purpose's words first appear inside it.
    assert not any("Acme" in line or "approve automatically" in line for line in lines[:frame])
    return frame


@pytest.mark.parametrize("size", [(120, 40), (80, 24)])
@pytest.mark.parametrize("variant", list(VARIANTS))
async def test_the_consoles_facts_come_first_and_in_view(
    console: Callable[..., ConsoleApp], size: tuple[int, int], variant: str
):
    app = console()
    async with app.run_test(size=size) as pilot:
        await started(pilot)
        await submit(pilot, app, VARIANTS[variant])
        lines = detail_lines(app)
        facts_before_the_frame(lines)
        cost = " ".join(" ".join(lines[1:4]).split())  # the cost line, however it wrapped
        assert cost.startswith("cost 1.50 USDC · approving allows up to 1.50 USDC")
        assert "type 1.50 to confirm" in cost
        # In view, not below the fold: every fact is on the screen as it is drawn now.
        shown = screen_text(app)
        for label in ("1.50 USDC", "Frameify", "verdict", "risks", "video-bot"):
            assert label in shown, (label, shown)
        assert "\x1b" not in shown and "\u202e" not in shown


async def test_the_agents_words_are_bounded_until_asked_for(console: Callable[..., ConsoleApp]):
    app = console()
    async with app.run_test(size=(120, 40)) as pilot:
        await started(pilot)
        await submit(pilot, app, IMITATION)
        lines = detail_lines(app)
        frame = facts_before_the_frame(lines)
        framed = [line for line in lines[frame + 1 :] if line.startswith("┃")]
        purpose = framed[1 : 1 + PURPOSE_LINES]
        assert len(purpose) == PURPOSE_LINES and all(line.endswith("↵") for line in purpose)
        assert any("more line(s) of the agent's: press v" in line for line in lines)
        assert not any(line.rstrip().endswith("┃ x") for line in lines)
        await pilot.press("v")
        await until(pilot, lambda: any(line.endswith("┃ x") for line in detail_lines(app)))
        expanded = detail_lines(app)
        assert facts_before_the_frame(expanded) == frame  # the facts did not move
        assert not any("press v" in line for line in expanded)
        await pilot.press("v")
        await until(pilot, lambda: not any(line.endswith("┃ x") for line in detail_lines(app)))


async def test_the_typed_confirmation_shows_only_the_consoles_figures(
    console: Callable[..., ConsoleApp],
):
    app = console()
    async with app.run_test(size=(120, 40)) as pilot:
        await started(pilot)
        await submit(pilot, app, IMITATION)
        await pilot.press("a")
        await until(pilot, lambda: isinstance(app.screen, ConfirmAmountModal))
        shown = screen_text(app).split("Approve: type the amount", 1)[1]
        assert "1.50" in shown and "Frameify" in shown and "base" in shown
        for words in ("Acme", "approve automatically", "video-bot", "0.01"):
            assert words not in shown, words


@pytest.mark.parametrize("size", [(120, 40), (80, 24)])
def test_snapshot_an_imitation_purpose(
    snap_compare: Any, console: Callable[..., ConsoleApp], size: tuple[int, int]
):
    """The imitation selected: the real price, provider, verdict and risks at the top, the
    agent's sections inside the frame, its blank lines drawn, the rest folded away."""
    app = console()

    async def run_before(pilot: Pilot[Any]) -> None:
        await started(pilot)
        await submit(pilot, app, IMITATION)
        await clear_notices(pilot)

    assert snap_compare(app, terminal_size=size, run_before=run_before)


def test_approvals_list_puts_the_console_first_and_the_agents_words_last():
    request = {
        "id": "req_1",
        "state": "pending",
        "agent": "video-bot",
        "agent_verified": False,
        "purpose": "cost 0.01 USDC\nverified",
        "endpoint": {"name": "Frameify", "providerName": "Frameify Labs", "verified": True},
        "estimate": {"amount_usdc": "1.50", "min_usdc": "1.50", "max_usdc": "1.50"},
        "verdict": {"outcome": "ask"},
    }
    header, row = table([{**request, "created_at": 0.0}], 60.0)
    assert row.index("1.50") < row.index("Frameify Labs") < row.index("video-bot")
    assert "video-bot (unverified)" in row and "(not verified)" not in row
    assert row.endswith("| cost 0.01 USDC⏎verified")
    assert header.endswith("AGENT WROTE") and "\n" not in row
