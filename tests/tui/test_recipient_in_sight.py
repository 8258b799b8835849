"""The recipient in sight: where approving sends the money is one of the console's own facts, in
the detail's fixed block before anything an agent wrote, and in the typed-confirmation dialog:
the address the quote pinned, shortened, with the provider's name; for a market call, that the
wallet proxy pays the provider itself and the quote names no recipient."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from helpers import FakeClock
from textual.pilot import Pilot
from tui_support import build_console, clear_notices, rows, screen_text, started, until

from svc_console.agent import AsyncAgent
from svc_console.runtime import Runtime
from svc_console.tui.app import ConsoleApp
from svc_console.tui.approvals.detail import RequestDetail
from svc_console.tui.modals import ConfirmAmountModal

BREED = {"kind": "breed_agent", "inputs": {"target_task": "summarization"}}
DATASET = {"kind": "dataset", "dataset_id": "ds_news_headlines_2024", "inputs": {}}
SEARCH = {"kind": "market_call", "endpoint_id": "ep_websearch_basic", "inputs": {"query": "q"}}
SANDBOX_RECIPIENT = "0x5A9d…A9D0"  # the sandbox's own paid tools' payTo, shortened


@pytest.fixture
def console(make_runtime: Callable[..., Runtime], clock: FakeClock) -> Callable[..., ConsoleApp]:
    return lambda **options: build_console(make_runtime, clock, **options)


async def pending(pilot: Pilot[Any], app: ConsoleApp, request: dict[str, Any]) -> list[str]:
    """Submit `request` and return the detail's lines once it is priced and pending."""
    async with AsyncAgent("buyer", app.runtime.paths.socket) as agent:
        request_id = (await agent.submit(purpose="Pays to 0xdEaD…beef (trust me)", **request))[
            "request_id"
        ]
    await rows(pilot, 1)
    detail = app.screen.query_one(RequestDetail)
    await until(pilot, lambda: detail.shown_id == request_id and "ask the operator" in detail.text)
    return detail.text.splitlines()


def fact(lines: list[str], label: str) -> str:
    """A fact's value, its wrapped lines joined; checked to come before the agent's frame."""
    frame = next(i for i, line in enumerate(lines) if "What the agent wrote" in line)
    at = next(i for i, line in enumerate(lines) if line.startswith(label))
    assert at < frame
    value = [lines[at][len(label) :]]
    value += [line for line in lines[at + 1 : frame] if line.startswith(" " * 9)][:1]
    return " ".join(" ".join(value).split())


@pytest.mark.parametrize(
    ("request_", "shown"),
    [
        (DATASET, f"{SANDBOX_RECIPIENT} (Everfield Labs)"),
        (BREED, f"{SANDBOX_RECIPIENT} (Agent Data and API Marketplace)"),
        (SEARCH, "none in the quote: the wallet proxy pays Searchly itself"),
    ],
    ids=["dataset", "compute tool", "market call"],
)
async def test_the_detail_names_the_recipient_among_the_consoles_facts(
    console: Callable[..., ConsoleApp], request_: dict[str, Any], shown: str
):
    app = console()
    async with app.run_test(size=(120, 40)) as pilot:
        await started(pilot)
        lines = await pending(pilot, app, request_)
        assert fact(lines, "pays to").startswith(shown)


async def test_the_typed_confirmation_names_the_recipient(console: Callable[..., ConsoleApp]):
    app = console()
    async with app.run_test(size=(120, 40)) as pilot:
        await started(pilot)
        await pending(pilot, app, BREED)
        await pilot.press("a")
        await until(pilot, lambda: isinstance(app.screen, ConfirmAmountModal))
        dialog = " ".join(screen_text(app).split("Approve: type the amount", 1)[1].split())
        assert f"Pays to: {SANDBOX_RECIPIENT} (Agent Data and API Marketplace)." in dialog
        assert "0xdEaD" not in dialog  # the agent's words never reach the dialog


def test_snapshot_the_typed_confirmation_of_a_compute_tool(
    snap_compare: Any, console: Callable[..., ConsoleApp]
):
    """10 USDC to breed an agent: the dialog and the detail behind it name the recipient."""
    app = console()

    async def run_before(pilot: Pilot[Any]) -> None:
        await started(pilot)
        await pending(pilot, app, BREED)
        await clear_notices(pilot)
        await pilot.press("a")
        await until(pilot, lambda: isinstance(app.screen, ConfirmAmountModal))

    assert snap_compare(app, terminal_size=(120, 40), run_before=run_before)
