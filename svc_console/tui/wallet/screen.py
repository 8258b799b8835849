"""The wallet screen: the agent's wallet (its address on every chain and its balance), the requests
that wait for funds with what each lacks, and funding one of them through to its single retry.

Funding is one worker per request, and it never touches a widget: it reads the balance, starts a
funding checkout for what is missing (`broker.funding.open_checkout`), reads the balance again
every `POLL_S` seconds until it covers what the request was approved for, then asks the broker for
the one retry the spec allows (`Broker.retry_funded`); `svc-console wallet fund` takes the same
steps over the operator socket. Each step is a message; the screen keeps
the `FundingFlow` and draws it, and the broker's news about the request gives the outcome. The
checkout's address is shown inert, linked and encoded as a QR code only when it is plain http(s).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from decimal import Decimal
from functools import partial

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.message import Message
from textual.screen import Screen
from textual.widgets import DataTable, Static
from textual.worker import Worker, WorkerState

from svc_console.broker import Broker, BrokerError
from svc_console.broker.funding import balance_reads, describe, open_checkout
from svc_console.core.account import AgentWallets
from svc_console.core.funding import FundingFlow, Stage, required
from svc_console.core.models import SpendRequest
from svc_console.core.money import format_usdc
from svc_console.core.sanitize import inert_line
from svc_console.core.states import State
from svc_console.market.errors import MarketError
from svc_console.market.gateway import Marketplace
from svc_console.runtime import Runtime
from svc_console.tui import bindings
from svc_console.tui.bindings import Command
from svc_console.tui.colors import Palette, palette
from svc_console.tui.messages import RequestChanged
from svc_console.tui.navigation import register_screen
from svc_console.tui.wallet.awaiting import AwaitingFunds
from svc_console.tui.wallet.balances import WalletBalances
from svc_console.tui.wallet.funding import FundingPanel
from svc_console.tui.widgets.banner import service_banner
from svc_console.tui.widgets.chrome import ConsoleFooter, heading
from svc_console.tui.widgets.queue import endpoint_name

log = logging.getLogger(__name__)

# How often the balance is read while a flow waits for funds (tests make it shorter).
POLL_S = 2.0
TICK_S = 1.0
MAX_AWAITING = 200


def _command(
    id: str, keys: str, action: str, description: str, help: str, *, show: bool = True
) -> Command:
    return Command(f"wallet.{id}", keys, action, description, help, show=show)


COMMANDS = (
    _command(
        "fund",
        "f",
        "fund",
        "Fund the wallet",
        "Start a checkout for what the selected request lacks, wait for the funds, retry it once",
    ),
    _command("open", "o", "open_checkout", "Checkout", "Open the checkout in the browser"),
    _command("refresh", "r", "refresh", "Refresh", "Read the balance and the waiting requests"),
    _command("stop", "escape", "stop", "Stop", "Stop waiting for funds; the request still waits"),
    _command("down", "j", "cursor(1)", "Next", "Select the next request", show=False),
    _command("up", "k", "cursor(-1)", "Previous", "Select the previous request", show=False),
)


# -- messages from the workers ---------------------------------------------------------------------


class WalletRead(Message):
    def __init__(self, wallets: AgentWallets) -> None:
        super().__init__()
        self.wallets = wallets


class WalletUnreadable(Message):
    def __init__(self, problem: str) -> None:
        super().__init__()
        self.problem = problem


class FundingStep(Message):
    """One step of the flow for `request_id`: `change` applies it to the flow on screen."""

    def __init__(self, request_id: str, change: Callable[[FundingFlow], FundingFlow]) -> None:
        super().__init__()
        self.request_id = request_id
        self.change = change


# -- the screen ------------------------------------------------------------------------------------


@register_screen("wallet", title="Wallet", key="5", order=5)
class WalletScreen(Screen[None]):
    """The wallet and the requests waiting for funds: `f` funds the selected one and retries it."""

    BINDINGS = bindings.define("wallet", COMMANDS)
    SUB_TITLE = "wallet"
    VERTICAL_BREAKPOINTS = [(0, "-short"), (34, "-tall")]
    DEFAULT_CSS = """
    WalletScreen Header { dock: none; }
    #wallet-body { height: 1fr; }
    .wallet-heading { height: 1; padding: 0 1; background: $panel; text-style: bold; }
    #awaiting { height: auto; max-height: 8; }
    WalletScreen.-short #awaiting { max-height: 4; }
    #awaiting-empty { display: none; height: auto; padding: 0 1; color: $text-muted; }
    WalletScreen.-none-waiting #awaiting { display: none; }
    WalletScreen.-none-waiting #awaiting-empty { display: block; }
    WalletScreen.-idle FundingPanel { display: none; }
    FundingPanel { padding: 0 1; }
    /* A short terminal keeps the funding steps and the QR code whole: the addresses give way. */
    WalletScreen.-short.-funding #wallet-balances,
    WalletScreen.-short.-funding #wallet-heading { display: none; }
    """

    def __init__(self, runtime: Runtime) -> None:
        super().__init__(id="wallet")
        assert runtime.broker is not None and runtime.market is not None, "a started runtime"
        self.runtime = runtime
        self.broker: Broker = runtime.broker
        self.market: Marketplace = runtime.market
        self.balance: Decimal | None = None
        self.flow: FundingFlow | None = None
        # The request being funded as it was when funding started (for the panel's title).
        self._flow_request: SpendRequest | None = None
        self._funding: Worker[None] | None = None
        self._unsubscribe: Callable[[], None] | None = None
        self._reload_scheduled = False
        # Which keys were available when the footer was last drawn.
        self._keys: tuple[bool | None, ...] = ()

    @property
    def colours(self) -> Palette:
        return palette(self.app)

    @property
    def table(self) -> AwaitingFunds:
        return self.query_one(AwaitingFunds)

    @property
    def username(self) -> str | None:
        if self.runtime.service is not None:
            return self.runtime.service.username
        sandbox = self.runtime.sandbox
        return sandbox.state.username if sandbox is not None else None

    # -- layout -----------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        banner = service_banner(self.market, self.runtime.agent_warning)
        if banner is not None:
            yield banner
        yield from heading()
        with VerticalScroll(id="wallet-body"):
            yield Static("Wallet", id="wallet-heading", classes="wallet-heading", markup=False)
            yield WalletBalances(id="wallet-balances")
            yield Static("", id="awaiting-heading", classes="wallet-heading", markup=False)
            yield AwaitingFunds(id="awaiting")
            yield Static("", id="awaiting-empty", markup=False)
            yield FundingPanel(id="funding")
        yield ConsoleFooter()

    def on_mount(self) -> None:
        # Subscribe before the first read, so nothing that changes in between is missed.
        self._unsubscribe = self.broker.subscribe(self._broker_changed)
        self.reload()
        self.read_wallet()
        self.set_interval(TICK_S, self._tick, name="wallet-clock")
        self.app.theme_changed_signal.subscribe(self, lambda _theme: self._redraw())
        self.table.focus()

    def on_unmount(self) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None

    def on_screen_resume(self) -> None:
        # Back from another screen: what waits and what the wallet holds may have changed.
        self.reload()
        if not (self.flow and self.flow.running):
            self.read_wallet()

    # -- what is shown ----------------------------------------------------------------------------

    def reload(self) -> None:
        """The requests waiting for funds, from the ledger."""
        waiting = self.broker.ledger.in_states([State.awaiting_funds], limit=MAX_AWAITING)
        table = self.table
        table.balance = self.balance
        table.show(waiting, self.broker.clock(), self.colours)
        count = len(waiting)
        heading = Text(f"Waiting for funds ({count})" if count else "Waiting for funds")
        needs = [needed for needed in map(required, waiting) if needed is not None]
        if count > 1 and self.balance is not None and len(needs) == count:
            # One balance pays for all of them: what covers every request at once.
            total = sum(needs, Decimal(0))
            short = max(Decimal(0), total - self.balance)
            heading.append(
                f" · {format_usdc(total)} USDC for all {count}, short by {format_usdc(short)}",
                style="not bold",
            )
        self.query_one("#awaiting-heading", Static).update(heading)
        if not count:
            self.query_one("#awaiting-empty", Static).update(
                Text(
                    "No request is waiting for funds. When the wallet cannot pay for an approved"
                    " request, it waits here until the wallet is funded."
                )
            )
        self.set_class(not count, "-none-waiting")
        self.set_class(not count and self.flow is None, "-idle")
        self._refresh_keys()

    def _redraw(self) -> None:
        self.reload()
        self._draw_flow()

    def _draw_flow(self) -> None:
        flow, colours = self.flow, self.colours
        title = Text()
        if flow is not None:
            title.append(f"Funding {inert_line(flow.request_id, 30)}", "bold")
            request = self._flow_request
            if request is not None:
                title.append(f" · {endpoint_name(request, 32)} for {inert_line(request.agent, 24)}")
        self.query_one(FundingPanel).show(flow, title, colours)
        self.set_class(flow is not None and flow.running, "-funding")
        self._refresh_keys()

    def _tick(self) -> None:
        self.table.tick(self.broker.clock(), self.colours)

    # -- the wallet -------------------------------------------------------------------------------

    def read_wallet(self) -> None:
        self.run_worker(
            self._read_wallet,
            group="wallet-read",
            exclusive=True,
            exit_on_error=False,
            name="wallet read",
        )

    async def _read_wallet(self) -> None:
        try:
            wallets = await self.market.account.wallets()
        except MarketError as exc:
            self.post_message(WalletUnreadable(describe(exc)))
            return
        self.post_message(WalletRead(wallets))

    def on_wallet_read(self, message: WalletRead) -> None:
        self.balance = message.wallets.balance_usdc
        self.query_one(WalletBalances).show(message.wallets, self.username, self.colours)
        self.reload()

    def on_wallet_unreadable(self, message: WalletUnreadable) -> None:
        self.query_one(WalletBalances).show_error(message.problem, self.colours)

    # -- the broker's news ------------------------------------------------------------------------

    def _broker_changed(self, request: SpendRequest) -> None:
        # Called by the broker, synchronously, for every change: only hand it to the message loop.
        self.post_message(RequestChanged(request))

    def on_request_changed(self, message: RequestChanged) -> None:
        request, flow = message.request, self.flow
        if flow is not None and flow.running and request.id == flow.request_id:
            if flow.stage == Stage.retrying and request.state not in (
                State.executing,
                State.awaiting_funds,
            ):
                self._settle(request)
            elif flow.stage <= Stage.waiting and request.state != State.awaiting_funds:
                # Cancelled by its agent or expired while the wallet was being funded.
                self._stop_worker()
                self.flow = flow.failed(
                    f"{request.id} is now {request.state}: it no longer waits for funds"
                )
                self._draw_flow()
        if not self._reload_scheduled:
            # One reload for a burst of changes: the callback runs after the queued messages.
            self._reload_scheduled = True
            self.call_later(self._flush)

    def _flush(self) -> None:
        self._reload_scheduled = False
        self.reload()

    def _settle(self, request: SpendRequest) -> None:
        assert self.flow is not None
        self.flow = self.flow.settled(request)
        self._draw_flow()
        severity = "information" if request.state == State.succeeded else "warning"
        self.notify(f"{request.id}: {self.flow.outcome}", severity=severity, markup=False)
        self.read_wallet()

    # -- funding ----------------------------------------------------------------------------------

    def _refresh_keys(self) -> None:
        """Redraw the footer only when a key's availability changed: the balance is read every
        few seconds while waiting, and each redraw of the footer rebuilds it."""
        keys = tuple(self.check_action(action, ()) for action in ("fund", "open_checkout", "stop"))
        if keys != self._keys:
            self._keys = keys
            self.refresh_bindings()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        running = self.flow is not None and self.flow.running
        if action == "fund":
            # Hidden while a flow runs (the footer needs the room for its own keys).
            return False if running else (None if self.table.selected is None else True)
        if action == "open_checkout":
            return True if self.flow is not None and self.flow.link is not None else None
        if action == "stop":
            return running and self.flow is not None and self.flow.stage <= Stage.waiting
        return True

    def action_fund(self) -> None:
        if self.flow is not None and self.flow.running:
            self.notify(
                f"{self.flow.request_id} is being funded; escape stops waiting for it.",
                severity="warning",
                markup=False,
            )
            return
        request = self.table.selected
        needed = required(request) if request is not None else None
        if request is None or needed is None:
            self.notify("No request waits for funds.", severity="warning", markup=False)
            return
        self.flow = FundingFlow(request.id, needed, balance=self.balance)
        self._flow_request = request
        self._draw_flow()
        self._funding = self.run_worker(
            self._fund(request.id, needed),
            group="funding",
            exclusive=True,
            exit_on_error=False,
            name=f"funding {request.id}",
        )

    async def _fund(self, request_id: str, needed: Decimal) -> None:
        """In a worker: checkout, wait for the balance to cover `needed`, retry once."""

        def step(change: Callable[[FundingFlow], FundingFlow]) -> None:
            self.post_message(FundingStep(request_id, change))

        try:
            balance, checkout = await open_checkout(self.market, needed)
        except BrokerError as exc:  # which step failed, and why
            step(partial(FundingFlow.failed, problem=exc.message))
            return
        if checkout is None:
            step(partial(FundingFlow.covered_already, balance=balance))
        else:
            step(partial(FundingFlow.checkout_started, checkout=checkout))
            balance = await self._wait_for_funds(needed, step)
            step(partial(FundingFlow.funded, balance=balance))
        try:
            await self.broker.retry_funded(request_id)
        except BrokerError as exc:
            problem = f"the retry could not start: {inert_line(exc.message, 200)}"
            step(partial(FundingFlow.failed, problem=problem))
            return
        step(FundingFlow.retrying)

    async def _wait_for_funds(
        self, needed: Decimal, step: Callable[[Callable[[FundingFlow], FundingFlow]], None]
    ) -> Decimal:
        """Read the balance until it covers `needed`; a failed read is noted and tried again."""
        async with contextlib.aclosing(balance_reads(self.market, POLL_S)) as reads:
            async for read in reads:
                if isinstance(read, MarketError):
                    note = f"the balance could not be read ({describe(read)}); trying again"
                    step(partial(FundingFlow.noted, note=note))
                    continue
                self.post_message(WalletRead(read))
                if read.balance_usdc >= needed:
                    return read.balance_usdc
                step(partial(FundingFlow.seen_balance, balance=read.balance_usdc))
        raise AssertionError("the balance is read until it covers the request")

    def on_funding_step(self, message: FundingStep) -> None:
        flow = self.flow
        if flow is None or flow.request_id != message.request_id or not flow.running:
            return  # a step of a flow the operator stopped
        self.flow = message.change(flow)
        if self.flow.balance is not None:
            self.balance = self.flow.balance
        self._draw_flow()
        if self.flow.stage == Stage.retrying:
            # The outcome may already be known (the broker's news came first).
            request = self.broker.get(self.flow.request_id)
            if request.state not in (State.executing, State.awaiting_funds):
                self._settle(request)
        self.reload()

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        # The app reports the error itself; the flow must not look as if it were still running.
        failed = event.worker is self._funding and event.state == WorkerState.ERROR
        if failed and self.flow is not None and self.flow.running:
            self.flow = self.flow.failed("unexpected error; see the log")
            self._draw_flow()

    def _stop_worker(self) -> None:
        if self._funding is not None:
            self._funding.cancel()
            self._funding = None

    def action_stop(self) -> None:
        flow = self.flow
        if flow is None or not flow.running or flow.stage > Stage.waiting:
            return
        self._stop_worker()
        self.flow = flow.stop()
        self._draw_flow()
        self.reload()

    def action_open_checkout(self) -> None:
        link = self.flow.link if self.flow is not None else None
        if link is None:
            self.notify("No checkout address to open.", severity="warning", markup=False)
            return
        self.app.open_url(link)
        self.notify("Checkout opened in the browser.", markup=False)

    def action_refresh(self) -> None:
        self.reload()
        self.read_wallet()

    def action_cursor(self, delta: int) -> None:
        if delta > 0:
            self.table.action_cursor_down()
        else:
            self.table.action_cursor_up()

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        event.stop()
        self._refresh_keys()
