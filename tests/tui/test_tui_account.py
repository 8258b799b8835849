"""The account screen against the real thing: the sandbox's e-mail code flows over HTTP, codes read
from its outbox as an operator reads their mail, credentials written to owner-only files (or a
keyring backend standing in for the OS's), and every screen searched for the secrets it saved."""

from __future__ import annotations

import json
import stat
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import keyring
import pytest
from helpers import FakeClock
from keyring.backend import KeyringBackend
from keyring.backends import fail
from textual.pilot import Pilot
from textual.widgets import Input
from tui_support import PINNED_SANDBOX, build_console, screen_text, started, type_text, until

from svc_console.config.credentials import Account, Credentials, WalletConnection
from svc_console.config.paths import Paths
from svc_console.config.service import ServiceConfig
from svc_console.runtime import Runtime
from svc_console.sandbox.outbox import Outbox
from svc_console.tui.account.forms import OnboardingForm
from svc_console.tui.account.screen import AccountScreen
from svc_console.tui.app import ConsoleApp

EMAIL = "ops@example.com"
SAVED_KEY = "sk_live_" + "K" * 32
SAVED_TOKEN = "tok_" + "T" * 40
SAVED_EVM_KEY = "0x" + "ab" * 32
SAVED_SOLANA_KEY = "S" * 88
SAVED_SECRETS = (SAVED_KEY, SAVED_TOKEN, SAVED_EVM_KEY, SAVED_SOLANA_KEY)


class MemoryKeyring(KeyringBackend):
    """Stands in for an OS keyring backend, which this machine does not have."""

    priority = 1  # type: ignore[assignment]

    def __init__(self) -> None:
        super().__init__()
        self.items: dict[tuple[str, str], str] = {}

    def get_password(self, service: str, username: str) -> str | None:
        return self.items.get((service, username))

    def set_password(self, service: str, username: str, password: str) -> None:
        self.items[(service, username)] = password

    def delete_password(self, service: str, username: str) -> None:
        self.items.pop((service, username), None)


@pytest.fixture(autouse=True)
def no_keyring() -> Iterator[None]:
    """Files only, whatever the machine has: screenshots say the same thing everywhere."""
    before = keyring.get_keyring()
    keyring.set_keyring(fail.Keyring())
    yield
    keyring.set_keyring(before)


@pytest.fixture
def console(make_runtime: Callable[..., Runtime], clock: FakeClock) -> Callable[..., ConsoleApp]:
    def build(**options: Any) -> ConsoleApp:
        app = build_console(make_runtime, clock, **options)
        start = app.runtime.start

        async def start_pinned() -> Any:
            broker = await start()
            broker.market.wallet_api_base = PINNED_SANDBOX  # the banner's address is pinned too
            return broker

        app.runtime.start = start_pinned  # type: ignore[method-assign]
        return app

    return build


def account(app: ConsoleApp) -> AccountScreen:
    assert isinstance(app.screen, AccountScreen)
    return app.screen


async def open_account(pilot: Pilot[Any]) -> AccountScreen:
    await pilot.press("6")
    await until(pilot, lambda: isinstance(pilot.app.screen, AccountScreen))
    page = account(pilot.app)
    await until(pilot, lambda: page.agent_id is not None and page.saved.where)
    return page


def outbox(sandbox: Any) -> Outbox:
    return Outbox(sandbox.state.outbox_dir)


async def send_code(pilot: Pilot[Any], flow: str, username: str | None = None) -> OnboardingForm:
    """Fill in the form from the keyboard and ask for a code; returns once the code was sent."""
    page = account(pilot.app)
    form = page.form(flow)  # type: ignore[arg-type]
    await pilot.press("l" if flow == "login" else "c")
    await type_text(pilot, EMAIL)
    if username is not None:
        await pilot.press("tab")
        await type_text(pilot, username)
    await pilot.press("enter")
    await until(pilot, lambda: form.waiting_for_code)
    return form


async def enter_code(pilot: Pilot[Any], form: OnboardingForm, code: str) -> None:
    # The form asks for the code's focus as it says a code was sent; the focus moves after.
    await until(pilot, lambda: pilot.app.focused is form.code)
    await type_text(pilot, code)
    await pilot.press("enter")
    await until(pilot, lambda: not form.waiting_for_code and "Checking" not in status(form))


def status(form: OnboardingForm) -> str:
    return str(form.query_one(f"#{form.flow}-status").render())


def wrong(code: str) -> str:
    return "000000" if code != "000000" else "111111"


def saved_elsewhere(paths: Paths) -> None:
    """Credentials as `svc-console login` and `connect` would have left them."""
    creds = Credentials.for_sandbox(paths)
    creds.save_account(
        Account(PINNED_SANDBOX, "agent_ops01", f"{PINNED_SANDBOX}/api/mcp", SAVED_KEY)
    )
    creds.save_connection(
        WalletConnection(
            username="ops-team",
            api_base=PINNED_SANDBOX,
            api_token=SAVED_TOKEN,
            funding_url=f"{PINNED_SANDBOX}/fund/ops-team",
            addresses={"base": "0x" + "12" * 20},
        )
    )
    creds.save_wallet_config(
        {
            "evm": {"address": "0x" + "12" * 20, "privateKey": SAVED_EVM_KEY},
            "solana": {"address": "So1ana" + "1" * 38, "privateKey": SAVED_SOLANA_KEY},
        }
    )


def real_console(paths: Paths, sandbox, clock: FakeClock) -> ConsoleApp:
    """The console against a service configured like a real one (the sandbox's address)."""
    service = ServiceConfig(
        base_url=sandbox.base_url,
        wallet_api_base=sandbox.base_url,
        api_key=sandbox.state.api_key,
        username=sandbox.state.username,
        api_token=sandbox.state.api_token,
    )
    return ConsoleApp(
        Runtime(paths=paths, service=service, broker_options={"clock": clock}), cursor_blink=False
    )


def assert_no_secret(app: ConsoleApp, secrets: tuple[str, ...]) -> None:
    shown = app.export_screenshot() + screen_text(app)
    for secret in secrets:
        assert secret and secret not in shown


# -- snapshots ------------------------------------------------------------------------------------


def test_snapshot_sandbox_nothing_saved(snap_compare: Any, console: Callable[..., ConsoleApp]):
    """The sandbox, who the console is signed in as there, files only, nothing saved yet."""
    app = console()

    async def run_before(pilot: Pilot[Any]) -> None:
        await started(pilot)
        await open_account(pilot)

    assert snap_compare(app, terminal_size=(120, 40), run_before=run_before)


def test_snapshot_saved_credentials(
    snap_compare: Any, console: Callable[..., ConsoleApp], paths: Paths
):
    """What login and connect saved: who, where, and that the keys are kept, never shown."""
    saved_elsewhere(paths)
    app = console()

    async def run_before(pilot: Pilot[Any]) -> None:
        await started(pilot)
        await open_account(pilot)

    assert snap_compare(app, terminal_size=(120, 40), run_before=run_before)


def test_snapshot_code_sent(snap_compare: Any, console: Callable[..., ConsoleApp]):
    """A code went out: the masked code field has the focus, the outbox is named."""
    app = console()

    async def run_before(pilot: Pilot[Any]) -> None:
        await started(pilot)
        await open_account(pilot)
        await send_code(pilot, "login")
        await type_text(pilot, "123")

    assert snap_compare(app, terminal_size=(120, 40), run_before=run_before)


def test_snapshot_wrong_code(snap_compare: Any, console: Callable[..., ConsoleApp], sandbox):
    """A wrong code: refused, said plainly, nothing saved, a new code needed."""
    app = console()

    async def run_before(pilot: Pilot[Any]) -> None:
        await started(pilot)
        await open_account(pilot)
        form = await send_code(pilot, "connect", username="ops-team")
        await enter_code(pilot, form, wrong(outbox(sandbox).latest_code(EMAIL)))

    assert snap_compare(app, terminal_size=(120, 40), run_before=run_before)


def test_snapshot_narrow(snap_compare: Any, console: Callable[..., ConsoleApp], paths: Paths):
    """80x24: the service and the saved credentials, the forms below them."""
    saved_elsewhere(paths)
    app = console()

    async def run_before(pilot: Pilot[Any]) -> None:
        await started(pilot)
        await open_account(pilot)

    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)


# -- the two flows --------------------------------------------------------------------------------


async def test_sign_in_by_email_code(console: Callable[..., ConsoleApp], sandbox, paths: Paths):
    app = console()
    async with app.run_test(size=(120, 40)) as pilot:
        await started(pilot)
        page = await open_account(pilot)
        assert "none yet: sign in below" in screen_text(app)
        form = await send_code(pilot, "login")
        code = outbox(sandbox).latest_code(EMAIL)
        assert code and f"A code was sent to {EMAIL}" in screen_text(app)
        await enter_code(pilot, form, code)
        creds = Credentials.for_sandbox(paths)
        saved = creds.account()
        wallet_config = creds.wallet_config()
        assert saved is not None and saved.api_key.startswith("sk_live_")
        assert wallet_config is not None
        for path in (creds.account_file, creds.wallet_file):
            assert stat.S_IMODE(path.stat().st_mode) == 0o600
        await until(pilot, lambda: page.saved.login is not None)
        text = screen_text(app)
        assert f"signed in as agent {saved.agent_id}" in text
        assert "$SVC_CONSOLE_HOME/sandbox/accounts/credentials.json" in text
        assert "private keys are kept, never shown" in text
        assert form.code.value == "" and form.code.disabled
        assert_no_secret(
            app,
            (
                saved.api_key,
                wallet_config["evm"]["privateKey"],
                wallet_config["solana"]["privateKey"],
                code,
            ),
        )


async def test_connect_the_wallet_then_onboarding_is_skipped(
    console: Callable[..., ConsoleApp], sandbox, paths: Paths
):
    app = console()
    async with app.run_test(size=(120, 40)) as pilot:
        await started(pilot)
        page = await open_account(pilot)
        form = await send_code(pilot, "connect", username="ops-team")
        code = outbox(sandbox).latest_code(EMAIL)
        await enter_code(pilot, form, code)
        creds = Credentials.for_sandbox(paths)
        config = json.loads(creds.connection_file.read_text())
        assert config["username"] == "ops-team" and config["apiToken"]
        assert stat.S_IMODE(creds.connection_file.stat().st_mode) == 0o600
        await until(pilot, lambda: page.saved.connection is not None)
        assert "wallet connected as ops-team" in screen_text(app)
        assert "ops-team at" in screen_text(app)
        assert_no_secret(app, (config["apiToken"], code))

        # The config now holds username, apiToken and apiBase: the spec skips onboarding.
        sent = len(list(outbox(sandbox).folder.glob("*.eml")))
        await pilot.press("escape")  # out of the field, so `c` is a key again
        await pilot.press("c")
        await pilot.press("tab")
        await type_text(pilot, "other-name")
        await pilot.press("enter")
        await until(pilot, lambda: "onboarding skipped" in status(form))
        assert len(list(outbox(sandbox).folder.glob("*.eml"))) == sent  # no code was sent
        assert json.loads(creds.connection_file.read_text())["username"] == "ops-team"


async def test_a_wrong_code_saves_nothing(console: Callable[..., ConsoleApp], sandbox, paths):
    app = console()
    async with app.run_test(size=(120, 40)) as pilot:
        await started(pilot)
        await open_account(pilot)
        form = await send_code(pilot, "login")
        code = outbox(sandbox).latest_code(EMAIL)
        await enter_code(pilot, form, wrong(code))
        assert "The code is wrong. Nothing was saved" in status(form)
        creds = Credentials.for_sandbox(paths)
        assert not creds.account_file.exists() and not creds.wallet_file.exists()
        # A new code works.
        form = await send_code(pilot, "login")
        await enter_code(pilot, form, outbox(sandbox).latest_code(EMAIL))
        assert creds.account() is not None


async def test_an_expired_code_saves_nothing(console: Callable[..., ConsoleApp], sandbox, paths):
    app = console()
    async with app.run_test(size=(120, 40)) as pilot:
        await started(pilot)
        await open_account(pilot)
        form = await send_code(pilot, "connect", username="ops-team")
        code = outbox(sandbox).latest_code(EMAIL)
        sandbox.state.accounts.clock = lambda: time.time() + 3600  # an hour later
        await enter_code(pilot, form, code)
        assert "The code has expired. Nothing was saved" in status(form)
        assert not Credentials.for_sandbox(paths).connection_file.exists()


async def test_an_unreachable_service_saves_nothing(
    console: Callable[..., ConsoleApp], sandbox, paths
):
    app = console()
    async with app.run_test(size=(120, 40)) as pilot:
        await started(pilot)
        await open_account(pilot)
        form = await send_code(pilot, "login")
        code = outbox(sandbox).latest_code(EMAIL)
        sandbox.stop()  # the service goes away before the code is checked
        await enter_code(pilot, form, code)
        assert "The service cannot be reached" in status(form)
        assert "Nothing was saved" in status(form)
        assert not Credentials.for_sandbox(paths).account_file.exists()
        assert_no_secret(app, (code,))


async def test_fields_are_checked_before_anything_is_sent(
    console: Callable[..., ConsoleApp], sandbox
):
    app = console()
    async with app.run_test(size=(120, 40)) as pilot:
        await started(pilot)
        page = await open_account(pilot)
        await pilot.press("l")
        await type_text(pilot, "not-an-address")
        await pilot.press("enter")
        await until(pilot, lambda: "Type the e-mail address" in status(page.form("login")))
        await pilot.press("escape", "c")
        await type_text(pilot, EMAIL)
        await pilot.press("enter")  # on to the username
        await until(pilot, lambda: app.focused is app.screen.query_one("#connect-username", Input))
        await pilot.press("enter")
        await until(pilot, lambda: "Choose a username" in status(page.form("connect")))
        assert not list(outbox(sandbox).folder.glob("*.eml"))


# -- every key ------------------------------------------------------------------------------------


async def test_l_and_c_go_to_the_forms_and_escape_leaves_them(console: Callable[..., ConsoleApp]):
    app = console()
    async with app.run_test(size=(120, 40)) as pilot:
        await started(pilot)
        await open_account(pilot)
        await pilot.press("l")
        await until(pilot, lambda: app.focused is app.screen.query_one("#login-email", Input))
        await pilot.press("escape")
        await until(pilot, lambda: app.focused is None)
        await pilot.press("c")
        await until(pilot, lambda: app.focused is app.screen.query_one("#connect-email", Input))


async def test_escape_cancels_a_flow_waiting_for_its_code(
    console: Callable[..., ConsoleApp], sandbox, paths
):
    app = console()
    async with app.run_test(size=(120, 40)) as pilot:
        await started(pilot)
        page = await open_account(pilot)
        form = await send_code(pilot, "login")
        await pilot.press("escape")
        await until(pilot, lambda: "Cancelled. Nothing was saved." in status(form))
        assert not form.waiting_for_code and form.code.disabled
        await until(pilot, lambda: not page._flows)
        assert not Credentials.for_sandbox(paths).account_file.exists()


async def test_r_reads_the_saved_credentials_again(console: Callable[..., ConsoleApp], paths):
    app = console()
    async with app.run_test(size=(120, 40)) as pilot:
        await started(pilot)
        page = await open_account(pilot)
        assert page.saved.login is None
        saved_elsewhere(paths)  # `svc-console login` and `connect` in another terminal
        await pilot.press("r")
        await until(pilot, lambda: page.saved.login is not None)
        text = screen_text(app)
        assert "agent agent_ops01" in text and "ops-team at" in text
        assert_no_secret(app, SAVED_SECRETS)


# -- where the secrets go -------------------------------------------------------------------------


async def test_with_a_keyring_the_secrets_go_there_and_the_screen_says_so(
    sandbox, paths, clock: FakeClock
):
    backend = MemoryKeyring()
    keyring.set_keyring(backend)
    app = real_console(paths, sandbox, clock)
    async with app.run_test(size=(120, 40)) as pilot:
        await started(pilot)
        page = await open_account(pilot)
        assert "the OS keyring (MemoryKeyring)" in screen_text(app)
        form = await send_code(pilot, "login")
        code = outbox(sandbox).latest_code(EMAIL)
        await enter_code(pilot, form, code)
        await until(pilot, lambda: page.saved.login is not None)
        creds = Credentials(paths, backend)
        api_key = creds.account().api_key
        assert api_key not in creds.account_file.read_text()
        assert api_key in backend.items.values()
        assert "secrets are kept in the OS keyring (MemoryKeyring)" in screen_text(app)
        assert_no_secret(app, (api_key, code, creds.wallet_config()["evm"]["privateKey"]))


async def test_a_file_others_can_read_is_refused_with_the_fix(
    console: Callable[..., ConsoleApp], paths
):
    saved_elsewhere(paths)
    creds = Credentials.for_sandbox(paths)
    creds.account_file.chmod(0o644)
    app = console()
    async with app.run_test(size=(120, 40)) as pilot:
        await started(pilot)
        page = await open_account(pilot)
        assert page.saved.problems == (
            f"{creds.account_file} is readable by others (mode 644);"
            f" run: chmod 600 {creds.account_file}",
        )
        assert "is readable by others" in screen_text(app)
        assert "none yet: sign in below" in screen_text(app)  # refused, not read
        assert_no_secret(app, SAVED_SECRETS)


async def test_against_a_configured_service(paths: Paths, sandbox, clock: FakeClock):
    """A real service (here the sandbox, configured like one): its address, no banner, and a
    sign-in saved for the next start."""
    app = real_console(paths, sandbox, clock)
    async with app.run_test(size=(120, 40)) as pilot:
        await started(pilot)
        await open_account(pilot)
        text = screen_text(app)
        assert "SANDBOX" not in text and "embedded sandbox" not in text
        assert sandbox.base_url in text
        assert f"agent agent_sandbox · wallet {sandbox.state.username}" in text
        form = await send_code(pilot, "login")
        await enter_code(pilot, form, outbox(sandbox).latest_code(EMAIL))
        assert "the console uses them from its next start" in status(form)
        assert Credentials(paths).account().base_url == sandbox.base_url
        assert_no_secret(app, (sandbox.state.api_key, sandbox.state.api_token))


def test_no_snapshot_of_these_screens_holds_a_secret():
    """The screenshots are committed: none may hold a key, a token or a private key."""
    folder = Path(__file__).parent / "__snapshots__"
    pictures = [*folder.glob("test_tui_account/*.svg"), *folder.glob("test_tui_wallet/*.svg")]
    assert len(pictures) >= 10
    for picture in pictures:
        text = picture.read_text()
        for secret in (*SAVED_SECRETS, "0x" + "11" * 32):  # the wallet tests' fixed key
            assert secret not in text, picture.name
        assert "sk_live_" not in text and "privateKey" not in text, picture.name


async def test_sandbox_accounts_are_kept_apart_from_real_ones(
    console: Callable[..., ConsoleApp], sandbox, paths
):
    app = console()
    async with app.run_test(size=(120, 40)) as pilot:
        await started(pilot)
        page = await open_account(pilot)
        form = await send_code(pilot, "login")
        await enter_code(pilot, form, outbox(sandbox).latest_code(EMAIL))
        await until(pilot, lambda: page.saved.login is not None)
    assert Credentials.for_sandbox(paths).account() is not None
    real = Credentials(paths)
    assert not real.account_file.exists() and not real.wallet_file.exists()
