"""Agents the circuit breaker paused, on the approvals screen: the strip that names them, and `R`,
which resumes one. The breaker is tripped for real (a SKILLS.md that denies, five denials in a row
over the agents' socket) or, where only the screen is in question, the pause is written as the
broker writes it: a ledger row and the policy told."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from helpers import FakeClock, agent_token
from operator_support import PASSPHRASE, operator_knowing
from textual.pilot import Pilot
from tui_support import (
    build_console,
    clear_notices,
    listed_notices,
    notices,
    record_notifications,
    rows,
    screen_text,
    started,
    until,
)

from svc_console.agent import AsyncAgent
from svc_console.config.paths import Paths
from svc_console.core.states import State
from svc_console.ledger import pauses
from svc_console.runtime import Runtime
from svc_console.tui.app import ConsoleApp
from svc_console.tui.approvals.paused import SHOWN, PausedAgents, render, since
from svc_console.tui.approvals.screen import ApprovalsScreen
from svc_console.tui.colors import Palette

WHY = "5 requests in a row denied or failed within 15 minutes"
BREAKER = """# Policy

```policy
deny:
  endpoints: [ep_scrape_page]
circuit_breaker:
  failures: 5
  window: 15m
  then: pause_agent
```
"""
SEARCH = {"endpoint_id": "ep_websearch_basic", "purpose": "research"}
# Lower case: names are kept folded (core/names.py), so a paused name is already in that form.
HOSTILE = "\x1b[31mred\x07 [@click=app.quit]x[/] \u202eevil"


@pytest.fixture
def console(make_runtime: Callable[..., Runtime], clock: FakeClock) -> Callable[..., ConsoleApp]:
    return lambda **options: build_console(make_runtime, clock, **options)


@pytest.fixture
def breaker(paths: Paths) -> Path:
    """The console's SKILLS.md: scraping is denied, five failures in a row pause the agent."""
    paths.home.mkdir(parents=True, exist_ok=True)
    policy = paths.home / "SKILLS.md"
    policy.write_text(BREAKER)
    return policy


def strip(app: ConsoleApp) -> PausedAgents:
    return app.screen.query_one(PausedAgents)


def shown_paused(app: ConsoleApp) -> list[str]:
    """The agents the strip names, when it is on screen."""
    if not isinstance(app.screen, ApprovalsScreen):
        return []
    found = strip(app)
    return found.agents if found.display else []


def pause(app: ConsoleApp, agent: str, why: str = WHY) -> None:
    """Pause `agent` as the broker does when the breaker trips: the row, then the policy."""
    runtime = app.runtime
    pauses.pause(runtime.ledger, agent, why, "policy: circuit_breaker", runtime.broker.clock())
    runtime.policy.pause(agent, why)


async def trip_the_breaker(pilot: Pilot[Any], app: ConsoleApp, agent: str) -> None:
    """Five scrapes the policy denies, in a row: the breaker pauses `agent`."""
    async with AsyncAgent(
        agent, app.runtime.paths.socket, token=agent_token(app.runtime.paths, agent)
    ) as client:
        for n in range(5):
            ticket = await client.submit(
                endpoint_id="ep_scrape_page",
                inputs={"url": f"https://a.example/{n}"},
                purpose="read a page",
            )
            await until(pilot, partial(denied, app, ticket["request_id"]))
    await until(pilot, lambda: shown_paused(app) == [agent])


def denied(app: ConsoleApp, request_id: str) -> bool:
    return app.runtime.broker.get(request_id).state == State.denied


async def submit_search(pilot: Pilot[Any], app: ConsoleApp, agent: str, query: str) -> str:
    async with AsyncAgent(
        agent, app.runtime.paths.socket, token=agent_token(app.runtime.paths, agent)
    ) as client:
        ticket = await client.submit(**SEARCH, inputs={"query": query})
    request_id = ticket["request_id"]
    await until(pilot, lambda: app.runtime.broker.get(request_id).state == State.pending)
    await until(pilot, lambda: f"New request from {agent}" in notices(app))
    return request_id


def resumes(app: ConsoleApp) -> list[tuple[str, str]]:
    """(agent, who resumed) of every `agent_resumed` event in the ledger."""
    rows = app.runtime.ledger.db.execute(
        "SELECT json_extract(data, '$.agent'), json_extract(data, '$.resumed_by') FROM events"
        " WHERE type = 'agent_resumed' ORDER BY seq"
    )
    return [tuple(row) for row in rows]


# -- snapshot -----------------------------------------------------------------------------------


def test_snapshot_a_paused_agent(
    snap_compare: Any, console: Callable[..., ConsoleApp], breaker: Path
):
    """The breaker paused flaky-bot; its next search waits for the operator: the strip names the
    agent, why and since when; the footer offers `R`."""
    app = console()

    async def run_before(pilot: Pilot[Any]) -> None:
        await started(pilot)
        await trip_the_breaker(pilot, app, "flaky-bot")
        await submit_search(pilot, app, "flaky-bot", "solar")
        await rows(pilot, 1)
        await clear_notices(pilot)

    assert snap_compare(app, terminal_size=(120, 40), run_before=run_before)


# -- resuming -----------------------------------------------------------------------------------


async def test_r_resumes_the_paused_agent_and_its_rules_apply_again(
    console: Callable[..., ConsoleApp], breaker: Path
):
    app = console()
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        said = record_notifications(app)
        await started(pilot)
        await trip_the_breaker(pilot, app, "flaky-bot")
        assert "⏸ paused: flaky-bot's rules since " in screen_text(app)
        assert f"R resume — {WHY}" in screen_text(app)
        waiting = await submit_search(pilot, app, "flaky-bot", "solar")
        verdict = app.runtime.broker.get(waiting).verdict
        assert any(citation.rule == "circuit_breaker" for citation in verdict.citations)

        await pilot.press("R")
        await until(pilot, lambda: shown_paused(app) == [])
        assert "Agent flaky-bot resumed: its rules apply again" in said
        assert "⏸ paused" not in screen_text(app)
        assert pauses.paused(app.runtime.ledger) == []
        assert resumes(app) == [("flaky-bot", "tui")]
        # The policy no longer holds it: its next request is judged by the rules (no auto-approve
        # here, so it waits, but not because of a pause).
        again = await submit_search(pilot, app, "flaky-bot", "wind")
        verdict = app.runtime.broker.get(again).verdict
        assert all(citation.rule != "circuit_breaker" for citation in verdict.citations)
        assert "rules are paused" not in (verdict.summary or "")


async def test_r_with_several_paused_and_none_of_theirs_selected_names_them(
    console: Callable[..., ConsoleApp],
):
    app = console()
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        said = record_notifications(app)
        await started(pilot)
        pause(app, "flaky-bot")
        pause(app, "loop-bot", "6 failures in a row within 10 minutes")
        await until(pilot, lambda: shown_paused(app) == ["flaky-bot", "loop-bot"])
        await submit_search(pilot, app, "steady-bot", "solar")  # selected, and not paused
        await rows(pilot, 1)

        await pilot.press("R")
        expected = "Paused: flaky-bot, loop-bot. Select a request of the one to resume, press R."
        await until(pilot, lambda: expected in said)
        assert [p.agent for p in pauses.paused(app.runtime.ledger)] == ["flaky-bot", "loop-bot"]
        assert resumes(app) == []
        text = screen_text(app)
        assert "R resumes the selected request's agent" in text
        assert "loop-bot's rules since " in text and "— 6 failures in a row within 10" in text


async def test_r_resumes_the_agent_of_the_selected_request(console: Callable[..., ConsoleApp]):
    app = console()
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        said = record_notifications(app)
        await started(pilot)
        pause(app, "flaky-bot")
        pause(app, "loop-bot")
        await submit_search(pilot, app, "loop-bot", "solar")
        await rows(pilot, 1)
        await until(pilot, lambda: shown_paused(app) == ["flaky-bot", "loop-bot"])

        await pilot.press("R")
        await until(pilot, lambda: shown_paused(app) == ["flaky-bot"])
        assert "Agent loop-bot resumed: its rules apply again" in said
        assert resumes(app) == [("loop-bot", "tui")]
        # One left: R resumes it whatever is selected.
        await pilot.press("R")
        await until(pilot, lambda: shown_paused(app) == [])
        assert [agent for agent, _ in resumes(app)] == ["loop-bot", "flaky-bot"]


async def test_a_resume_from_the_command_line_shows_within_a_tick(
    console: Callable[..., ConsoleApp],
):
    """No broker listener hears of a resume over the operator socket: the screen's clock reads the
    pauses again, and `R` is no longer offered."""
    app = console()
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await started(pilot)
        pause(app, "flaky-bot")
        await until(pilot, lambda: shown_paused(app) == ["flaky-bot"])
        assert app.screen.check_action("resume_agent", ()) is True
        # Agents of this user are accepted: the resume over the socket needs the passphrase.
        app.runtime.passphrase.set(PASSPHRASE)
        async with operator_knowing(app.runtime) as cli:
            await cli.call("agents.resume", {"agent": "flaky-bot"})
        await until(pilot, lambda: shown_paused(app) == [])
        assert resumes(app) == [("flaky-bot", "cli")]
        assert app.screen.check_action("resume_agent", ()) is False


async def test_resuming_an_agent_resumed_meanwhile_is_a_notification(
    console: Callable[..., ConsoleApp],
):
    app = console()
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await started(pilot)
        pause(app, "flaky-bot")
        await until(pilot, lambda: shown_paused(app) == ["flaky-bot"])
        # Resumed behind the screen's back, between two ticks: the screen's clock is held, or
        # its next tick could read the pauses again before the key arrives.
        clock = next(t for t in app.screen._timers if t.name == "approvals-clock")
        clock.pause()
        app.runtime.broker.pauses.resume("flaky-bot", _elsewhere())
        await pilot.press("R")
        await until(pilot, lambda: "Could not resume" in screen_text(app))
        await until(pilot, lambda: "agent flaky-bot is not paused" in listed_notices(app))
        await until(pilot, lambda: shown_paused(app) == [])
        clock.resume()
        assert app.is_running and app.return_code is None


async def test_a_hostile_agent_name_is_shown_inert(console: Callable[..., ConsoleApp]):
    app = console()
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await started(pilot)
        pause(app, HOSTILE)
        await until(pilot, lambda: shown_paused(app) == [HOSTILE])
        # The strip's state is set before the screen is drawn again: wait for the drawing.
        line = "⏸ paused: <ESC>[31mred<BEL> [@click=app.quit]x[/] … ["
        await until(pilot, lambda: line in screen_text(app))
        text = screen_text(app)
        assert "\x1b" not in text and "\u202e" not in text
        await pilot.click("#paused")
        await pilot.press("R")
        await until(pilot, lambda: shown_paused(app) == [])
        assert app.is_running and app.return_code is None


def _elsewhere() -> Any:
    from svc_console.broker.deciders import Decider

    return Decider.on_operator_socket(None)


def test_since_names_the_day_of_a_pause_from_an_earlier_day(clock: FakeClock):
    at = clock()  # 2026-11-18 11:06:40 UTC
    assert since(at, at + 3600) == "since 11:06 UTC"
    assert since(at, at + 86_400) == "since 2026-11-18 11:06 UTC"


def test_more_paused_agents_than_lines_are_named_on_the_last_line(clock: FakeClock):
    paused = [pauses.Pause(f"bot-{n}", clock(), WHY, "policy: circuit_breaker") for n in range(5)]
    colours = Palette("bold", "dim", "red", "yellow", "blue", "green")
    lines = render(paused, clock(), colours).plain.splitlines()
    assert len(lines) == SHOWN == 3
    assert lines[0].startswith("⏸ paused: bot-0's rules since 11:06 UTC · R resumes")
    assert lines[0].endswith(f"— {WHY}")
    assert lines[2] == "⏸ rules of 3 more agents paused: bot-2, bot-3, bot-4"
