"""Invariant 5: after a whole session (sign-in with a wrong code first, wallet connection, paid
calls signed with the account wallet, a market call, an unfunded wallet, a refusal), no secret and
no one-time code used is found in the ledger, the log files, the console's printed output, the log
records or the TUI's screen."""

from __future__ import annotations

import asyncio
import logging
import re
from decimal import Decimal

from helpers import eventually, submit

from svc_console import cli
from svc_console.broker.params import ApproveParams
from svc_console.config import logs
from svc_console.config.agents import AgentSettings
from svc_console.config.credentials import Credentials
from svc_console.config.service import service_config
from svc_console.core.states import State
from svc_console.runtime import Runtime
from svc_console.sandbox.outbox import Outbox
from svc_console.tui.app import ConsoleApp

EMAIL = "finance-ops@example.com"
DATASET = {"kind": "dataset", "endpoint_id": None, "inputs": {}}


class CodeFromOutbox:
    """stdin for the CLI: the wrong code first when asked, then the newest code mailed."""

    def __init__(self, outbox: Outbox, wrong: str | None = None):
        self.outbox, self.wrong = outbox, wrong

    def isatty(self) -> bool:
        return False

    def readline(self) -> str:
        if self.wrong is not None:
            wrong, self.wrong = self.wrong, None
            return wrong + "\n"
        return (self.outbox.latest_code(EMAIL) or "") + "\n"


def _codes(outbox: Outbox) -> set[str]:
    codes = set()
    for path in outbox.messages():
        message = Outbox.read(path)
        body = message.get_body(("plain",))
        text = body.get_content() if body is not None else ""
        codes.update(re.findall(r"(?<!\d)\d{6}(?!\d)", text))
    return codes


def test_no_secret_or_code_leaks_after_a_full_session(sandbox, paths, monkeypatch, capsys, caplog):
    caplog.set_level(logging.DEBUG)
    log_file = logs.configure(paths.logs, level=logging.DEBUG)
    outbox = Outbox(sandbox.state.outbox_dir)
    base = ["--email", EMAIL, "--base-url", sandbox.base_url]
    try:
        monkeypatch.setattr("sys.stdin", CodeFromOutbox(outbox, wrong="123456"))
        assert cli.main(["login", *base]) == 1  # the wrong code: refused, nothing saved
        monkeypatch.setattr("sys.stdin", CodeFromOutbox(outbox))
        assert cli.main(["login", *base]) == 0
        monkeypatch.setattr("sys.stdin", CodeFromOutbox(outbox))
        assert cli.main(["connect", *base, "--username", "finance-ops"]) == 0

        service = service_config(paths, env={"SVC_BASE_URL": sandbox.base_url})
        # The session's agents run as the operator's own user, by name.
        agents = AgentSettings(enrolment="open")
        asyncio.run(_session(Runtime(paths=paths, service=service, agent_settings=agents), sandbox))
        screen_text = asyncio.run(_screen(Runtime(paths=paths, service=service)))
    finally:
        root = logging.getLogger()
        mine = [h for h in root.handlers if getattr(h, "baseFilename", "") == str(log_file)]
        for handler in mine:
            root.removeHandler(handler)
            handler.close()
    creds = Credentials(paths)
    wallet = creds.wallet_config()
    secrets = {
        "api key": creds.account().api_key,
        "api token": creds.connection().api_token,
        "evm key": wallet["evm"]["privateKey"],
        "evm key without 0x": wallet["evm"]["privateKey"].removeprefix("0x"),
        "solana key": wallet["solana"]["privateKey"],
        "sandbox key": sandbox.state.api_key,
        "sandbox token": sandbox.state.api_token,
    }
    codes = _codes(outbox)
    assert len(codes) >= 2  # the login's and the connection's codes (and the retried login's)
    secrets.update({f"code {code}": code for code in codes})
    printed = capsys.readouterr()
    places = {
        "ledger": b"".join(p.read_bytes() for p in sorted(paths.home.glob("ledger*"))),
        "log file": log_file.read_bytes(),
        "stdout and stderr": (printed.out + printed.err).encode(),
        "log records": caplog.text.encode(),
        "the TUI": screen_text.encode(),
    }
    # The search can find what it looks for: the owner-only credential files do hold them.
    assert secrets["api key"].encode() in creds.account_file.read_bytes()
    assert secrets["api token"].encode() in creds.connection_file.read_bytes()
    leaks = [
        f"{what} in {where}"
        for what, secret in secrets.items()
        for where, data in places.items()
        if secret and _holds(data, secret)
    ]
    assert leaks == []


def _holds(data: bytes, secret: str) -> bool:
    """Whether `data` holds `secret`. A six-digit code counts only as a number of its own: inside
    a hash or a timestamp's digits (the ledger holds thousands) it is a coincidence, not a
    leak, and matched there the test failed a few runs in a hundred."""
    if not re.fullmatch(r"\d{6}", secret):
        return secret.encode() in data
    own_number = rb"(?<![0-9A-Za-z.])" + secret.encode() + rb"(?![0-9A-Za-z])"
    return re.search(own_number, data) is not None


async def _session(runtime: Runtime, sandbox) -> None:
    """Paid calls through the configured service, then an unfunded wallet."""
    await runtime.start()
    try:
        broker = runtime.broker
        market = (await submit(runtime))["request_id"]
        dataset = (await submit(runtime, **DATASET, dataset_id="ds_news_headlines_2024"))[
            "request_id"
        ]
        for request_id in (market, dataset):
            await eventually(lambda r=request_id: broker.get(r).state == State.pending)
            await broker.approve(ApproveParams(request_id=request_id))
        await eventually(
            lambda: {broker.get(r).state for r in (market, dataset)} == {State.succeeded},
            timeout=20,
        )
        sandbox.state.set_balance(Decimal("0.01"))
        unfunded = (await submit(runtime, **DATASET, dataset_id="ds_court_opinions"))["request_id"]
        await eventually(lambda: broker.get(unfunded).state == State.pending)
        await broker.approve(ApproveParams(request_id=unfunded, confirm_amount=10))
        await eventually(lambda: broker.get(unfunded).state == State.awaiting_funds, timeout=20)
    finally:
        await runtime.stop()


async def _screen(runtime: Runtime) -> str:
    """The console as the operator opens it after that session."""
    app = ConsoleApp(runtime, cursor_blink=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        return app.export_screenshot()
