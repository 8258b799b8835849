"""The account screen: which service the console speaks to, who it is signed in as, where the
secrets are kept, and the spec's two onboarding flows as forms.

The flows are `services.onboarding`'s, shared with `svc-console login` and `connect`: this screen
only collects the e-mail, the username and the code. Each flow runs in a worker; when the flow asks
for the code (`read_code`), the worker posts `CodeAwaited` and waits on a future that the code
field fulfils. What a flow saved is described by `onboarding.Saved`, which holds no secret; the
credentials themselves are read in a thread and reduced to `SavedSummary` before any widget sees
them. Errors (a wrong or expired code, the service unreachable) are shown in the form, and since
the flows save only after the service accepted the code, nothing is saved then.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, VerticalScroll
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Input, Static
from textual.worker import Worker, WorkerState

from svc_console.config.credentials import Credentials
from svc_console.config.errors import SettingsError
from svc_console.config.paths import Paths
from svc_console.config.service import wallet_config_file
from svc_console.core.sanitize import inert_line
from svc_console.market.account import CodeRefused, InvalidRequest, TooManyCodes, UsernameTaken
from svc_console.market.errors import MarketError, ServiceUnreachable
from svc_console.market.gateway import Marketplace
from svc_console.runtime import Runtime
from svc_console.services import onboarding
from svc_console.tui import bindings
from svc_console.tui.account.forms import Flow, OnboardingForm
from svc_console.tui.bindings import Command
from svc_console.tui.colors import Palette, palette
from svc_console.tui.navigation import register_screen
from svc_console.tui.widgets.banner import service_banner
from svc_console.tui.widgets.chrome import ConsoleFooter, heading

COMMANDS = (
    Command("account.login", "l", "start('login')", "Sign in", "Sign in by e-mail code"),
    Command(
        "account.connect", "c", "start('connect')", "Connect", "Connect the wallet (e-mail code)"
    ),
    Command("account.refresh", "r", "refresh", "Refresh", "Read the saved credentials again"),
    Command(
        "account.cancel",
        "escape",
        "cancel",
        "Cancel",
        "Stop waiting for a code (nothing is saved), or leave the field",
    ),
)
_CODE_REFUSALS = {
    "OTP_INVALID": "The code is wrong",
    "OTP_EXPIRED": "The code has expired",
    "OTP_USED": "That code was already used",
    "OTP_SUPERSEDED": "A newer code was sent, and only the newest works",
    "OTP_LOCKED": "Too many wrong codes were tried",
    "OTP_NOT_REQUESTED": "No code was sent to this address for this",
}
NOTHING_SAVED = "Nothing was saved."


def explain(exc: Exception) -> str:
    """A failed flow in words for the operator; what the service said is shown inert."""
    if isinstance(exc, CodeRefused):
        reason = _CODE_REFUSALS.get(exc.code) or f"The code was refused ({inert_line(exc.message)})"
        return f"{reason}. {NOTHING_SAVED} Send a new code to try again."
    if isinstance(exc, TooManyCodes):
        wait = f" in {exc.retry_after_s} s" if exc.retry_after_s else " later"
        return f"Too many codes were sent to this address: try again{wait}. {NOTHING_SAVED}"
    if isinstance(exc, UsernameTaken):
        return f"That username belongs to another wallet: choose another. {NOTHING_SAVED}"
    if isinstance(exc, InvalidRequest):
        what = inert_line(exc.field, 20) if exc.field else "request"
        return f"The service refused the {what}: {inert_line(exc.message, 160)}. {NOTHING_SAVED}"
    if isinstance(exc, ServiceUnreachable):
        return f"The service cannot be reached ({inert_line(exc.message, 160)}). {NOTHING_SAVED}"
    if isinstance(exc, MarketError):
        return f"{inert_line(exc.message, 200)} ({exc.code}). {NOTHING_SAVED}"
    return inert_line(exc, 300)


def shown_path(path: Path, paths: Paths) -> str:
    """A path as the operator would type it: under $SVC_CONSOLE_HOME or ~ when it is."""
    if paths.explicit_home:
        try:
            return f"$SVC_CONSOLE_HOME/{path.relative_to(paths.home)}"
        except ValueError:
            pass
    try:
        return f"~/{path.relative_to(Path.home())}"
    except ValueError:
        return inert_line(path, 160)


def credentials(paths: Paths, *, sandbox: bool) -> Credentials:
    """The store `login` and `connect` write to (SVC_WALLET_CONFIG honoured); the sandbox's
    accounts are kept apart from the real ones."""
    if sandbox:
        return Credentials.for_sandbox(paths)
    return Credentials(paths, connection_file=wallet_config_file(paths))


@dataclass(frozen=True)
class SavedSummary:
    """What the saved credentials say, without a secret: safe to hand to a widget."""

    where: str = ""
    login: str | None = None
    login_file: str = ""
    connection: str | None = None
    connection_file: str = ""
    wallet_keys: str | None = None
    wallet_file: str = ""
    problems: tuple[str, ...] = field(default_factory=tuple)


def read_saved(paths: Paths, *, sandbox: bool) -> SavedSummary:
    """Read the three records; each one that cannot be read becomes a problem, not an error."""
    try:
        creds = credentials(paths, sandbox=sandbox)
    except SettingsError as exc:
        return SavedSummary(problems=(inert_line(exc, 300),))
    problems: list[str] = []

    def attempt(read: Callable[[], str | None]) -> str | None:
        try:
            return read()
        except SettingsError as exc:
            problems.append(inert_line(exc, 300))
            return None

    def login() -> str | None:
        account = creds.account()
        if account is None:
            return None
        return f"agent {inert_line(account.agent_id, 40)} at {inert_line(account.base_url, 80)}"

    def connection() -> str | None:
        saved = creds.connection()
        if saved is None:
            return None
        return f"{inert_line(saved.username, 40)} at {inert_line(saved.api_base, 80)}"

    def wallet_keys() -> str | None:
        config = creds.wallet_config()
        if config is None:
            return None
        evm = config.get("evm") if isinstance(config.get("evm"), dict) else {}
        address = inert_line(evm.get("address") or "?", 64)
        return f"account wallet {address}: its private keys are kept, never shown"

    return SavedSummary(
        where=creds.where,
        login=attempt(login),
        login_file=shown_path(creds.account_file, paths),
        connection=attempt(connection),
        connection_file=shown_path(creds.connection_file, paths),
        wallet_keys=attempt(wallet_keys),
        wallet_file=shown_path(creds.wallet_file, paths),
        problems=tuple(problems),
    )


def _grid(rows: list[tuple[str, Text]], colours: Palette) -> Table:
    grid = Table.grid(padding=(0, 1))
    grid.add_column(no_wrap=True, min_width=15)
    grid.add_column(ratio=1)
    for label, value in rows:
        grid.add_row(Text(label, style=colours.label), value)
    return grid


# -- messages from the workers ---------------------------------------------------------------------


class SavedRead(Message):
    def __init__(self, summary: SavedSummary) -> None:
        super().__init__()
        self.summary = summary


class IdentityRead(Message):
    """Who the service says the console is signed in as (`agent_id`), or why it did not say."""

    def __init__(self, agent_id: str | None, problem: str | None = None) -> None:
        super().__init__()
        self.agent_id, self.problem = agent_id, problem


class CodeAwaited(Message):
    def __init__(self, flow: Flow, email: str) -> None:
        super().__init__()
        self.flow, self.email = flow, email


class FlowEnded(Message):
    """A flow finished: `saved` when it did, else `problem` in words."""

    def __init__(
        self, flow: Flow, saved: onboarding.Saved | None, problem: str | None = None
    ) -> None:
        super().__init__()
        self.flow, self.saved, self.problem = flow, saved, problem


# -- the screen ------------------------------------------------------------------------------------


@register_screen("account", title="Account", key="6", order=6)
class AccountScreen(Screen[None]):
    """The service, the signed-in identity, the secrets' store, and the two onboarding forms."""

    BINDINGS = bindings.define("account", COMMANDS)
    SUB_TITLE = "account"
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (100, "-wide")]
    DEFAULT_CSS = """
    AccountScreen Header { dock: none; }
    #account-body { height: 1fr; }
    .account-heading { height: 1; padding: 0 1; background: $panel; text-style: bold; }
    #account-service, #account-saved { height: auto; padding: 0 1; }
    #account-forms { height: auto; }
    #account-forms OnboardingForm { width: 1fr; }
    AccountScreen.-narrow #account-forms { layout: vertical; }
    """

    def __init__(self, runtime: Runtime) -> None:
        super().__init__(id="account")
        assert runtime.market is not None, "the account screen needs a started runtime"
        self.runtime = runtime
        self.market: Marketplace = runtime.market
        self.saved = SavedSummary()
        self.agent_id: str | None = None
        self.identity_problem: str | None = None
        # The future each flow waits on for its code, while it waits.
        self._codes: dict[Flow, asyncio.Future[str]] = {}
        self._flows: dict[Flow, Worker[None]] = {}

    @property
    def colours(self) -> Palette:
        return palette(self.app)

    @property
    def username(self) -> str | None:
        if self.runtime.service is not None:
            return self.runtime.service.username
        sandbox = self.runtime.sandbox
        return sandbox.state.username if sandbox is not None else None

    def form(self, flow: Flow) -> OnboardingForm:
        return self.query_one(f"#form-{flow}", OnboardingForm)

    # -- layout -----------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        banner = service_banner(self.market, self.runtime.agent_warning)
        if banner is not None:
            yield banner
        yield from heading()
        with VerticalScroll(id="account-body"):
            yield Static("Service", classes="account-heading", markup=False)
            yield Static("", id="account-service", markup=False)
            yield Static("Saved credentials", classes="account-heading", markup=False)
            yield Static("Reading…", id="account-saved", markup=False)
            with Horizontal(id="account-forms"):
                yield OnboardingForm("login", id="form-login")
                yield OnboardingForm("connect", id="form-connect")
        yield ConsoleFooter()

    def on_mount(self) -> None:
        self.app.theme_changed_signal.subscribe(self, lambda _theme: self._draw())
        self._draw()
        self.action_refresh()

    def _draw(self) -> None:
        colours = self.colours
        market = self.market
        if market.sandbox:
            speaks = Text.assemble(
                ("the embedded sandbox", "bold"),
                f" at {inert_line(market.base_url, 80)}: no real money moves",
            )
        else:
            speaks = Text(inert_line(market.base_url, 120), style="bold")
        if self.agent_id is not None:
            who = Text.assemble("agent ", (inert_line(self.agent_id, 40), "bold"))
            if self.username:
                who.append(" · wallet ")
                who.append(inert_line(self.username, 40), "bold")
        elif self.identity_problem is not None:
            who = Text(f"the service did not say: {self.identity_problem}", colours.warn)
        else:
            who = Text("asking the service…", colours.label)
        rows = [
            ("speaks to", speaks),
            ("wallet proxy", Text(inert_line(market.wallet_api_base, 120))),
            ("signed in as", who),
        ]
        if market.sandbox:
            note = "sandbox accounts are kept apart from real ones; the console keeps its own"
            rows.append(("note", Text(note, colours.label)))
        self.query_one("#account-service", Static).update(_grid(rows, colours))
        self.query_one("#account-saved", Static).update(self._saved_grid(colours))

    def _saved_grid(self, colours: Palette) -> Table:
        s = self.saved

        def value(text: str | None, file: str, missing: str) -> Text:
            if text is None:
                return Text(missing, colours.label)
            return Text.assemble(text, (f" · {file}", colours.label))

        rows = [
            ("secrets kept in", Text(s.where or "…")),
            ("login", value(s.login, s.login_file, "none yet: sign in below")),
            ("wallet", value(s.connection, s.connection_file, "not connected yet: connect below")),
            (
                "wallet keys",
                value(s.wallet_keys, s.wallet_file, "none yet: written once, at the first sign-in"),
            ),
        ]
        rows += [("problem", Text(problem, colours.high)) for problem in s.problems]
        return _grid(rows, colours)

    # -- reading what is saved and who the console is ---------------------------------------------

    def action_refresh(self) -> None:
        paths, sandbox = self.runtime.paths, self.market.sandbox
        self.run_worker(
            lambda: self.post_message(SavedRead(read_saved(paths, sandbox=sandbox))),
            thread=True,
            group="account-saved",
            exclusive=True,
            exit_on_error=False,
            name="saved credentials",
        )
        self.run_worker(
            self._ask_identity,
            group="account-identity",
            exclusive=True,
            exit_on_error=False,
            name="account identity",
        )

    async def _ask_identity(self) -> None:
        try:
            wallets = await self.market.account.wallets()
        except MarketError as exc:
            self.post_message(IdentityRead(None, inert_line(exc.message, 160)))
            return
        self.post_message(IdentityRead(wallets.agent_id))

    def on_saved_read(self, message: SavedRead) -> None:
        self.saved = message.summary
        self._draw()

    def on_identity_read(self, message: IdentityRead) -> None:
        self.agent_id, self.identity_problem = message.agent_id, message.problem
        self._draw()

    # -- the flows --------------------------------------------------------------------------------

    def on_onboarding_form_send_code(self, message: OnboardingForm.SendCode) -> None:
        flow = message.form.flow
        self._cancel(flow)
        message.form.sending(inert_line(message.email, 80))
        self._flows[flow] = self.run_worker(
            self._run_flow(flow, message.email, message.username),
            group=f"onboarding-{flow}",
            exclusive=True,
            exit_on_error=False,
            name=f"{flow} flow",
        )
        self.refresh_bindings()

    async def _run_flow(self, flow: Flow, email: str, username: str | None) -> None:
        """In a worker: the onboarding flow, its code read from the form."""

        async def read_code() -> str:
            future: asyncio.Future[str] = asyncio.get_running_loop().create_future()
            self._codes[flow] = future
            self.post_message(CodeAwaited(flow, email))
            try:
                return await future
            finally:
                if self._codes.get(flow) is future:
                    del self._codes[flow]

        try:
            creds = credentials(self.runtime.paths, sandbox=self.market.sandbox)
            client = self.market.account
            if flow == "login":
                saved = await onboarding.login(
                    client, creds, base_url=self.market.base_url, email=email, read_code=read_code
                )
            else:
                saved = await onboarding.connect(
                    client, creds, email=email, username=username or "", read_code=read_code
                )
        except (MarketError, SettingsError) as exc:
            self.post_message(FlowEnded(flow, None, explain(exc)))
            return
        self.post_message(FlowEnded(flow, saved))

    def on_code_awaited(self, message: CodeAwaited) -> None:
        where = None
        if self.market.sandbox and self.runtime.sandbox is not None:
            outbox = shown_path(Path(self.runtime.sandbox.state.outbox_dir), self.runtime.paths)
            where = f"Sandbox: the e-mail is a file in {outbox}"
        self.form(message.flow).code_sent(inert_line(message.email, 80), where)

    def on_onboarding_form_code_entered(self, message: OnboardingForm.CodeEntered) -> None:
        future = self._codes.get(message.form.flow)
        if future is None or future.done():
            message.form.failed("No code is awaited: send a code first.")
            return
        message.form.checking()
        future.set_result(message.code)

    def on_flow_ended(self, message: FlowEnded) -> None:
        self._flows.pop(message.flow, None)
        form = self.form(message.flow)
        saved = message.saved
        if saved is None:
            form.failed(message.problem or "The flow failed.")
        else:
            verb = "kept" if saved.skipped else "saved"
            paths = self.runtime.paths
            lines = [inert_line(saved.summary, 200)]
            lines += [f"{verb}: {shown_path(path, paths)}" for path in saved.files]
            lines.append(f"secrets are kept in {saved.secrets_in}")
            if not self.market.sandbox and not saved.skipped:
                lines.append("the console uses them from its next start")
            form.done(lines)
        self.refresh_bindings()
        self.action_refresh()

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        # The app reports an unexpected error itself; the form must not look busy forever.
        if event.state != WorkerState.ERROR:
            return
        for flow, worker in list(self._flows.items()):
            if worker is event.worker:
                del self._flows[flow]
                self.form(flow).failed(f"Unexpected error; see the log. {NOTHING_SAVED}")

    def _cancel(self, flow: Flow) -> bool:
        worker = self._flows.pop(flow, None)
        future = self._codes.pop(flow, None)
        if future is not None and not future.done():
            future.cancel()
        if worker is None or worker.is_finished:
            return False
        worker.cancel()
        return True

    # -- keys -------------------------------------------------------------------------------------

    def action_start(self, flow: Flow) -> None:
        self.form(flow).focus_first()

    def action_cancel(self) -> None:
        cancelled = [flow for flow in ("login", "connect") if self._cancel(flow)]
        for flow in cancelled:
            self.form(flow).failed(f"Cancelled. {NOTHING_SAVED}")
        if not cancelled and isinstance(self.focused, Input):
            # Out of the field, so the screen's keys work again.
            self.set_focus(None)
        self.refresh_bindings()
