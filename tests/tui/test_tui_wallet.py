"""The wallet screen against the real thing: the sandbox over HTTP (its wallets route, its funding
checkout and funding page), the broker and its SQLite ledger. A request is left `awaiting_funds`
by a sandbox wallet set to zero; the operator is a Textual pilot pressing keys; the test plays the
operator's browser by posting the sandbox's funding form with httpx."""

from __future__ import annotations

import re
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import base58
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from eth_account import Account as EthAccount
from helpers import FakeClock, fund_like_a_browser
from rich.console import Console
from textual.pilot import Pilot
from tui_support import (
    PINNED_SANDBOX,
    build_console,
    clear_notices,
    record_notifications,
    screen_text,
    started,
    until,
)

from svc_console.agent import AsyncAgent
from svc_console.broker.params import ApproveParams, SubmitParams
from svc_console.config.paths import Paths
from svc_console.config.service import ServiceConfig
from svc_console.core.funding import FundingFlow, Stage, safe_link
from svc_console.core.models import FundingCheckout
from svc_console.core.states import State
from svc_console.runtime import Runtime
from svc_console.sandbox.wallet_keys import WalletKeys
from svc_console.services.qr import qr_lines
from svc_console.tui import bindings
from svc_console.tui.app import ConsoleApp
from svc_console.tui.colors import Palette
from svc_console.tui.wallet import screen as wallet
from svc_console.tui.wallet.awaiting import AwaitingFunds
from svc_console.tui.wallet.funding import link_text, render_flow
from svc_console.tui.wallet.qr import QrCode
from svc_console.tui.wallet.screen import WalletScreen

SEARCH = {
    "kind": "market_call",
    "endpoint_id": "ep_websearch_basic",
    "inputs": {"query": "solar panel prices 2026"},
    "purpose": "background for the weekly energy note",
}
HOSTILE = "\x1b]8;;https://evil.example\x1b\\click\x1b]8;;\x1b\\ [@click=app.quit]x[/] \u202eevil"
PLAIN = Palette(heading="bold", label="dim", high="red", warn="yellow", info="blue", good="green")


def fixed_wallet_keys() -> WalletKeys:
    """The sandbox's wallet keys made from fixed seeds, so addresses are the same in every run."""
    evm = EthAccount.from_key("0x" + "11" * 32)
    ed = Ed25519PrivateKey.from_private_bytes(bytes(range(32)))
    seed = ed.private_bytes(
        serialization.Encoding.Raw, serialization.PrivateFormat.Raw, serialization.NoEncryption()
    )
    public = ed.public_key().public_bytes(
        serialization.Encoding.Raw, serialization.PublicFormat.Raw
    )
    return WalletKeys(
        evm_address=evm.address,
        solana_address=base58.b58encode(public).decode("ascii"),
        evm_private_key="0x" + "11" * 32,
        solana_private_key=base58.b58encode(seed + public).decode("ascii"),
    )


@pytest.fixture
def console(make_runtime: Callable[..., Runtime], clock: FakeClock) -> Callable[..., ConsoleApp]:
    return lambda **options: build_console(make_runtime, clock, **options)


@pytest.fixture
def pinned(monkeypatch: pytest.MonkeyPatch, sandbox: Any) -> Callable[[ConsoleApp], ConsoleApp]:
    """For screenshots: fixed wallet addresses, a long poll (nothing changes while the picture
    is taken), and the sandbox writing the pinned address into its funding links."""
    monkeypatch.setattr(WalletKeys, "create", classmethod(lambda cls: KEYS))
    monkeypatch.setattr(wallet, "POLL_S", 3600.0)

    def pin(app: ConsoleApp) -> ConsoleApp:
        start = app.runtime.start

        async def start_pinned() -> Any:
            broker = await start()
            broker.market.wallet_api_base = PINNED_SANDBOX
            # Only the links it writes: the clients already hold the real address.
            sandbox.state.base_url = PINNED_SANDBOX
            return broker

        app.runtime.start = start_pinned  # type: ignore[method-assign]
        return app

    return pin


@pytest.fixture
def fast_poll(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(wallet, "POLL_S", 0.05)


KEYS = fixed_wallet_keys()


def screen(app: ConsoleApp) -> WalletScreen:
    assert isinstance(app.screen, WalletScreen)
    return app.screen


async def awaiting_funds(pilot: Pilot[Any], sandbox: Any, agent: str = "research-bot") -> str:
    """A request approved while the sandbox wallet is empty: it ends `awaiting_funds`."""
    broker = pilot.app.runtime.broker
    sandbox.state.set_balance("0")
    request = await broker.submit(SubmitParams(agent=agent, **SEARCH))
    await until(pilot, lambda: broker.get(request.id).state == State.pending)
    await broker.approve(ApproveParams(request_id=request.id))
    await until(pilot, lambda: broker.get(request.id).state == State.awaiting_funds)
    return request.id


async def open_wallet(pilot: Pilot[Any]) -> WalletScreen:
    await pilot.press("5")
    await until(pilot, lambda: isinstance(pilot.app.screen, WalletScreen))
    await until(pilot, lambda: screen(pilot.app).balance is not None)
    return screen(pilot.app)


def watching_for_funds(app: ConsoleApp) -> bool:
    """A funding flow's worker still runs: funds arriving now would be seen, and retried."""
    return any(worker.group == "funding" and not worker.is_finished for worker in app.workers)


async def checkout_started(pilot: Pilot[Any]) -> FundingFlow:
    await until(pilot, lambda: (flow := screen(pilot.app).flow) and flow.stage == Stage.waiting)
    flow = screen(pilot.app).flow
    assert flow is not None and flow.checkout is not None
    return flow


# -- snapshots ------------------------------------------------------------------------------------


def test_snapshot_nothing_waiting(snap_compare: Any, console: Callable[..., ConsoleApp], pinned):
    """The wallet on every chain and its balance; no request waits for funds."""
    app = pinned(console())

    async def run_before(pilot: Pilot[Any]) -> None:
        await started(pilot)
        await open_wallet(pilot)

    assert snap_compare(app, terminal_size=(120, 40), run_before=run_before)


def test_snapshot_two_requests_waiting(
    snap_compare: Any, console: Callable[..., ConsoleApp], pinned, sandbox
):
    """Two requests waiting: what each was approved for and what the wallet lacks."""
    app = pinned(console())

    async def run_before(pilot: Pilot[Any]) -> None:
        await started(pilot)
        await awaiting_funds(pilot, sandbox)
        await awaiting_funds(pilot, sandbox, agent="pricing-bot")
        await open_wallet(pilot)
        await clear_notices(pilot)

    assert snap_compare(app, terminal_size=(120, 40), run_before=run_before)


def test_snapshot_checkout_with_qr(
    snap_compare: Any, console: Callable[..., ConsoleApp], pinned, sandbox
):
    """Funding started: the checkout's link and QR code, the wallet being watched."""
    app = pinned(console())

    async def run_before(pilot: Pilot[Any]) -> None:
        await started(pilot)
        await awaiting_funds(pilot, sandbox)
        await open_wallet(pilot)
        await pilot.press("f")
        await checkout_started(pilot)
        await clear_notices(pilot)

    assert snap_compare(app, terminal_size=(120, 40), run_before=run_before)


def test_snapshot_checkout_narrow(
    snap_compare: Any, console: Callable[..., ConsoleApp], pinned, sandbox
):
    """The same at 80x24: the addresses give way so the steps and the whole code fit."""
    app = pinned(console())

    async def run_before(pilot: Pilot[Any]) -> None:
        await started(pilot)
        await awaiting_funds(pilot, sandbox)
        await open_wallet(pilot)
        await pilot.press("f")
        await checkout_started(pilot)
        await clear_notices(pilot)

    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)


def test_snapshot_funded_and_retried(
    snap_compare: Any, console: Callable[..., ConsoleApp], pinned, sandbox
):
    """Every step done: funded, retried once, succeeded with the amount charged."""
    app = pinned(console())

    async def run_before(pilot: Pilot[Any]) -> None:
        await started(pilot)
        request_id = await awaiting_funds(pilot, sandbox)
        await open_wallet(pilot)
        sandbox.state.set_balance("1")  # funded elsewhere: no checkout is needed
        await pilot.press("f")
        broker = app.runtime.broker
        await until(pilot, lambda: broker.get(request_id).state == State.succeeded)
        await until(pilot, lambda: screen(app).flow.stage == Stage.done)
        await until(pilot, lambda: "0.99 USDC" in screen_text(app))
        await clear_notices(pilot)

    assert snap_compare(app, terminal_size=(120, 40), run_before=run_before)


def test_snapshot_service_error_narrow(
    snap_compare: Any, console: Callable[..., ConsoleApp], pinned, sandbox
):
    """The wallet cannot be read (the service answers 503): said plainly, with how to retry."""
    app = pinned(console())

    async def run_before(pilot: Pilot[Any]) -> None:
        await started(pilot)
        await awaiting_funds(pilot, sandbox)
        sandbox.state.faults.add("error", routes=["/api/agent/wallets"], status=503)
        await pilot.press("5")
        await until(pilot, lambda: "could not be read" in screen_text(app))
        await clear_notices(pilot)

    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)


# -- the operator's path --------------------------------------------------------------------------


async def test_fund_then_retry_over_real_http(
    console: Callable[..., ConsoleApp], sandbox, fast_poll, paths: Paths
):
    """The whole path: an agent's request is approved, finds the wallet empty and waits; from the
    wallet screen the operator starts a checkout; the funding page is submitted like a browser
    would; the screen sees the balance cover the request, retries it once, and it succeeds."""
    app = console()
    async with app.run_test(size=(120, 40)) as pilot:
        await started(pilot)
        broker = app.runtime.broker
        seen = record_notifications(app)
        sandbox.state.set_balance("0.004")
        async with AsyncAgent("research-bot", paths.socket) as agent:
            submitted = await agent.submit(**SEARCH)
            request_id = submitted["request_id"]
            await until(pilot, lambda: broker.get(request_id).state == State.pending)
            await pilot.press("a")  # on the approvals screen
            await until(pilot, lambda: broker.get(request_id).state == State.awaiting_funds)

            # Said once that it waits for funds; from here the wallet screen speaks of it.
            await until(pilot, lambda: any("waits for funds" in notice for notice in seen))
            page = await open_wallet(pilot)
            assert page.balance == Decimal("0.004")
            text = screen_text(app)
            assert request_id in text and "0.006" in text  # short by: 0.01 needed, 0.004 held
            await pilot.press("f")
            flow = await checkout_started(pilot)
            # The checkout asks for exactly what is missing, and its address is on screen.
            assert flow.amount == Decimal("0.006")
            assert flow.checkout.checkout_url in screen_text(app).replace("\n", "")
            assert app.screen.query_one(QrCode).data == flow.checkout.checkout_url
            assert "waiting for funds" in screen_text(app)
            assert broker.get(request_id).state == State.awaiting_funds  # nothing retried yet

            assert await fund_like_a_browser(flow.checkout.checkout_url) == Decimal("0.006")
            await until(pilot, lambda: broker.get(request_id).state == State.succeeded)
            await until(pilot, lambda: page.flow is not None and page.flow.stage == Stage.done)
            outcome = await agent.wait(request_id, timeout_s=5)

        assert outcome["state"] == "succeeded"
        text = screen_text(app)
        assert "succeeded: charged 0.01 USDC" in text
        assert "retried once" in text
        # One notice for the success, the wallet's: the approvals screen does not say it again.
        assert [n for n in seen if request_id in n and "succeeded" in n] == [
            f"{request_id}: succeeded: charged 0.01 USDC on base"
        ]
        assert sandbox.state.balance == Decimal(0)  # 0.004 + 0.006 funded - 0.01 charged
        # One approval, one first attempt, one retry: never a third.
        assert app.runtime.ledger.attempts(request_id) == 2
        assert not app.screen.query_one(QrCode).display
        assert "No request is waiting for funds" in text


async def test_f_skips_the_checkout_when_the_balance_already_covers(
    console: Callable[..., ConsoleApp], sandbox, fast_poll
):
    app = console()
    async with app.run_test(size=(120, 40)) as pilot:
        await started(pilot)
        request_id = await awaiting_funds(pilot, sandbox)
        page = await open_wallet(pilot)
        sandbox.state.set_balance("5")
        await pilot.press("f")
        await until(pilot, lambda: page.flow is not None and page.flow.stage == Stage.done)
        assert page.flow.checkout_skipped and page.flow.checkout is None
        assert app.runtime.broker.get(request_id).state == State.succeeded
        assert "no checkout needed" in screen_text(app)


async def test_a_refused_retry_ends_failed_and_is_never_tried_again(
    console: Callable[..., ConsoleApp], sandbox, fast_poll
):
    """Funded, but the service refuses the retry: the request ends failed with the reason, and
    the one retry the spec allows has been used."""
    app = console()
    async with app.run_test(size=(120, 40)) as pilot:
        await started(pilot)
        request_id = await awaiting_funds(pilot, sandbox)
        page = await open_wallet(pilot)
        await pilot.press("f")
        flow = await checkout_started(pilot)
        sandbox.state.faults.add("error", routes=["proxy"], status=503, count=1)
        await fund_like_a_browser(flow.checkout.checkout_url)
        await until(pilot, lambda: page.flow is not None and page.flow.stage == Stage.done)
        assert app.runtime.broker.get(request_id).state == State.failed
        assert "failed:" in screen_text(app) and "503" in screen_text(app)
        assert app.runtime.ledger.attempts(request_id) == 2
        # Nothing is left to fund or retry.
        await pilot.press("f")
        await until(pilot, lambda: app.runtime.ledger.attempts(request_id) == 2)


async def test_escape_stops_waiting_and_f_starts_again(
    console: Callable[..., ConsoleApp], sandbox, fast_poll
):
    app = console()
    async with app.run_test(size=(120, 40)) as pilot:
        await started(pilot)
        request_id = await awaiting_funds(pilot, sandbox)
        page = await open_wallet(pilot)
        await pilot.press("f")
        await checkout_started(pilot)
        await pilot.press("escape")
        await until(pilot, lambda: page.flow.stopped and not page.flow.running)
        await until(pilot, lambda: "stopped waiting" in screen_text(app))
        # Funds arriving now retry nothing: the operator stopped watching.
        sandbox.state.set_balance("1")
        await until(pilot, lambda: not watching_for_funds(app))
        assert app.runtime.broker.get(request_id).state == State.awaiting_funds
        await pilot.press("f")
        await until(pilot, lambda: app.runtime.broker.get(request_id).state == State.succeeded)


async def test_a_failed_checkout_is_shown_and_changes_nothing(
    console: Callable[..., ConsoleApp], sandbox, fast_poll
):
    app = console()
    async with app.run_test(size=(120, 40)) as pilot:
        await started(pilot)
        request_id = await awaiting_funds(pilot, sandbox)
        page = await open_wallet(pilot)
        sandbox.state.faults.add("error", routes=["funding"], status=503, count=1)
        await pilot.press("f")
        await until(pilot, lambda: page.flow is not None and page.flow.problem is not None)
        assert "the checkout failed" in screen_text(app)
        assert not page.flow.running
        assert app.runtime.broker.get(request_id).state == State.awaiting_funds
        assert app.runtime.ledger.attempts(request_id) == 1


async def test_a_failed_balance_check_is_noted_and_tried_again(
    console: Callable[..., ConsoleApp], sandbox, fast_poll
):
    app = console()
    async with app.run_test(size=(120, 40)) as pilot:
        await started(pilot)
        request_id = await awaiting_funds(pilot, sandbox)
        page = await open_wallet(pilot)
        await pilot.press("f")
        flow = await checkout_started(pilot)
        sandbox.state.faults.add("error", routes=["/api/agent/wallets"], status=503)
        await until(pilot, lambda: page.flow.note is not None)
        assert "could not be read" in page.flow.note and "trying again" in page.flow.note
        assert "trying again" in screen_text(app) and page.flow.running
        sandbox.state.faults.clear()
        await fund_like_a_browser(flow.checkout.checkout_url)
        await until(pilot, lambda: app.runtime.broker.get(request_id).state == State.succeeded)


async def test_a_request_cancelled_while_waiting_ends_the_flow(
    console: Callable[..., ConsoleApp], sandbox, fast_poll
):
    app = console()
    async with app.run_test(size=(120, 40)) as pilot:
        await started(pilot)
        request_id = await awaiting_funds(pilot, sandbox)
        page = await open_wallet(pilot)
        await pilot.press("f")
        await checkout_started(pilot)
        await app.runtime.broker.cancel(request_id)
        await until(pilot, lambda: page.flow.problem is not None)
        assert "no longer waits for funds" in page.flow.problem
        sandbox.state.set_balance("1")
        await until(pilot, lambda: not watching_for_funds(app))
        assert app.runtime.broker.get(request_id).state == State.cancelled


# -- every key ------------------------------------------------------------------------------------


async def test_o_opens_the_checkout_in_the_browser(
    console: Callable[..., ConsoleApp], sandbox, fast_poll
):
    app = console()
    opened: list[str] = []
    async with app.run_test(size=(120, 40)) as pilot:
        await started(pilot)
        app.open_url = lambda url, **_: opened.append(url)  # type: ignore[method-assign]
        seen = record_notifications(app)
        await awaiting_funds(pilot, sandbox)
        await open_wallet(pilot)
        await pilot.press("o")  # no checkout yet: nothing to open
        await until(pilot, lambda: opened == [])
        await pilot.press("f")
        flow = await checkout_started(pilot)
        await pilot.press("o")
        await until(pilot, lambda: opened == [flow.checkout.checkout_url])
        assert "Checkout opened in the browser." in seen


async def test_r_reads_the_balance_again(console: Callable[..., ConsoleApp], sandbox):
    app = console()
    async with app.run_test(size=(120, 40)) as pilot:
        await started(pilot)
        page = await open_wallet(pilot)
        assert "balance 25.00 USDC" in screen_text(app)
        sandbox.state.set_balance("7.5")
        await pilot.press("r")
        await until(pilot, lambda: page.balance == Decimal("7.5"))
        assert "balance 7.50 USDC" in screen_text(app)


async def test_j_and_k_move_between_waiting_requests(console: Callable[..., ConsoleApp], sandbox):
    app = console()
    async with app.run_test(size=(120, 40)) as pilot:
        await started(pilot)
        first = await awaiting_funds(pilot, sandbox)
        second = await awaiting_funds(pilot, sandbox, agent="pricing-bot")
        await open_wallet(pilot)
        table = app.screen.query_one(AwaitingFunds)
        assert table.selected_id == first
        await pilot.press("j")
        await until(pilot, lambda: table.selected_id == second)
        await pilot.press("j")  # the last row: stays
        await until(pilot, lambda: table.selected_id == second)
        await pilot.press("k")
        await until(pilot, lambda: table.selected_id == first)


async def test_f_with_nothing_waiting_says_so(console: Callable[..., ConsoleApp]):
    app = console()
    async with app.run_test(size=(120, 40)) as pilot:
        await started(pilot)
        seen = record_notifications(app)
        await open_wallet(pilot)
        await pilot.press("f")
        await pilot.press("escape")  # nothing to stop: a no-op
        await until(pilot, lambda: screen(app).flow is None)
        assert "No request is waiting for funds" in screen_text(app)
        assert seen == []  # the key is disabled: nothing starts, nothing to report


def test_the_wallet_keys_and_the_palette_command_are_registered():
    ids = {command.id for command in bindings.commands("wallet")}
    assert {"wallet.fund", "wallet.open", "wallet.refresh", "wallet.stop"} <= ids
    fund = next(command for command in bindings.commands("wallet") if command.id == "wallet.fund")
    assert fund.description == "Fund the wallet" and fund.palette


async def test_against_a_configured_service(paths: Paths, sandbox, clock: FakeClock, fast_poll):
    """A real service (here the sandbox, configured like one): no banner, the same wallet."""
    service = ServiceConfig(
        base_url=sandbox.base_url,
        wallet_api_base=sandbox.base_url,
        api_key=sandbox.state.api_key,
        username=sandbox.state.username,
        api_token=sandbox.state.api_token,
    )
    runtime = Runtime(paths=paths, service=service, broker_options={"clock": clock})
    app = ConsoleApp(runtime, cursor_blink=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await started(pilot)
        await open_wallet(pilot)
        text = screen_text(app)
        assert "SANDBOX" not in text
        assert f"wallet {sandbox.state.username}" in text and "balance 25.00 USDC" in text


# -- what reaches the screen ----------------------------------------------------------------------


def _plain(renderable: Any) -> tuple[str, list[str]]:
    console = Console(width=200, record=True, color_system="truecolor", force_terminal=True)
    console.print(renderable)
    exported = console.export_text(styles=True, clear=False)
    links = re.findall(r"\x1b]8;[^;]*;([^\x1b]*)\x1b", exported)
    return console.export_text(), [link for link in links if link]


@pytest.mark.parametrize(
    "url",
    [
        "javascript:alert(1)",
        "file:///etc/passwd",
        "http://ok.example/\x1b]52;c;SGVsbG8=\x07",
        "https://ok.example/a b",
        "https://bank.example\u202e/moc.live",
        HOSTILE,
        "",
    ],
)
def test_only_plain_http_addresses_become_links(url: str):
    assert safe_link(url) is None
    text = link_text(url)
    assert text.style == "" or getattr(text.style, "link", None) is None
    assert "\x1b" not in text.plain and "\u202e" not in text.plain


def test_a_hostile_checkout_address_is_shown_inert_and_never_encoded():
    checkout = FundingCheckout.model_validate(
        {"checkoutUrl": HOSTILE, "amountUsdc": "0.5", "balanceUsdc": "0"}
    )
    flow = FundingFlow("req_1", Decimal("0.5")).checkout_started(checkout)
    assert flow.link is None  # so no QR code either
    shown, links = _plain(render_flow(flow, flow_title(), PLAIN))
    assert links == []
    assert "\x1b" not in shown and "\u202e" not in shown
    assert "<ESC>" in shown and "[@click=app.quit]" in shown


def test_a_plain_checkout_address_is_a_link():
    url = "https://pay.example/fund/ops?amount=0.5"
    checkout = FundingCheckout.model_validate({"checkoutUrl": url, "amountUsdc": "0.5"})
    flow = FundingFlow("req_1", Decimal("0.5")).checkout_started(checkout)
    assert flow.link == url
    shown, links = _plain(render_flow(flow, flow_title(), PLAIN))
    assert links == [url] and url in shown


def flow_title() -> Any:
    from rich.text import Text

    return Text("Funding req_1")


def test_the_qr_code_draws_every_module():
    """Reading the half blocks back gives the code segno made, quiet zone included."""
    import segno

    url = "http://127.0.0.1:8402/fund/sandbox-operator?amount=0.01"
    lines = qr_lines(url)
    modules = [
        [bool(m) for m in row] for row in segno.make_qr(url, error="l").matrix_iter(border=1)
    ]
    top = {"█": True, "▀": True, "▄": False, " ": False}
    bottom = {"█": True, "▀": False, "▄": True, " ": False}
    read = []
    for line in lines:
        read.append([top[c] for c in line])
        read.append([bottom[c] for c in line])
    assert read[: len(modules)] == modules
    assert not any(read[len(modules) :][0]) if len(read) > len(modules) else True
    assert len(lines) == (len(modules) + 1) // 2
