"""`svc-console wallet fund REQUEST_ID` against a headless console (the broker, its sockets and
the sandbox over real HTTP, started as `serve` starts them). Every command runs in a process of
its own: the agent submits through the AS_AGENT wrapper, the operator approves and funds from
the CLI, and the test plays the operator's browser on the sandbox's funding page."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from decimal import Decimal

import pytest
from helpers import awaiting_funds, eventually, fund_like_a_browser
from operator_support import PassphraseTerminal, set_passphrase

from svc_console.core.states import State
from svc_console.runtime import Runtime
from svc_console.services.qr import qr_lines

CLI = [sys.executable, "-m", "svc_console"]
AS_AGENT = [sys.executable, "-c", "import subprocess, sys; sys.exit(subprocess.call(sys.argv[1:]))"]
# A guard against a hung command, never a measure of how long anything takes.
HUNG_S = 60


@pytest.fixture
async def console(make_runtime: Callable[..., Runtime], paths) -> AsyncIterator[Runtime]:
    """The console, headless, reading the balance often while a request waits for funds; its
    operator set a passphrase (agents of this user are accepted: funding needs it)."""
    set_passphrase(paths.home)
    runtime = make_runtime(funding_poll_s=0.02)
    await runtime.start()
    yield runtime
    await runtime.stop()


@pytest.fixture(autouse=True)
def terminals() -> Iterator[list[PassphraseTerminal]]:
    """The operator's terminals the test's commands ran on, closed after it."""
    made: list[PassphraseTerminal] = []
    TERMINALS.append(made)
    yield made
    TERMINALS.remove(made)
    for terminal in made:
        terminal.close()


TERMINALS: list[list[PassphraseTerminal]] = []


async def spawn(*args: str, operator: bool = True) -> asyncio.subprocess.Process:
    """The command in a process of its own; the operator's on a terminal where the passphrase is
    typed, as a person at their keyboard types it."""
    terminal = PassphraseTerminal() if operator else None
    if terminal is not None:
        TERMINALS[-1].append(terminal)

    def preexec() -> None:
        # Ctrl-C as at a shell: a disposition left ignored in this worker by an earlier test
        # would be inherited, and the command would never see the SIGINT sent to it.
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        if terminal is not None:
            terminal.preexec()

    return await asyncio.create_subprocess_exec(
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        preexec_fn=preexec,
    )


async def run(*args: str, agent: bool = False) -> tuple[int, str, str]:
    process = await spawn(*(AS_AGENT if agent else []), *CLI, *args, operator=not agent)
    out, err = await asyncio.wait_for(process.communicate(), HUNG_S)
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


async def read_until(process: asyncio.subprocess.Process, marker: str) -> list[str]:
    """The lines the command printed, up to and including the first one holding `marker`."""
    assert process.stdout is not None
    lines: list[str] = []
    while not lines or marker not in lines[-1]:
        line = await asyncio.wait_for(process.stdout.readline(), HUNG_S)
        assert line, f"the command ended before printing {marker!r}: {lines}"
        lines.append(line.decode().rstrip("\n"))
    return lines


def waits(console: Runtime) -> int:
    """The waits under way on the operator socket (`wallet.fund_wait` among them)."""
    assert console.operator_socket is not None
    return sum(connection.waits for connection in console.operator_socket._connections)


async def waiting_for_funds(console: Runtime) -> None:
    """Until the command's `wallet.fund_wait` is under way in the console."""
    await eventually(lambda: waits(console) > 0)


def one_line_error(code: int, err: str) -> str:
    assert code == 2, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    return err.strip()


async def test_fund_shows_the_checkout_waits_and_retries_once(console, sandbox):
    """The whole path headless: an agent's request is approved from the CLI and finds the wallet
    short; `wallet fund` prints the checkout's address and QR code, the checkout is paid in the
    sandbox, and the request is retried once and succeeds."""
    sandbox.state.set_balance("0.004")
    code, out, err = await run(
        "agent", "submit", "--endpoint", "ep_websearch_basic", "--inputs", '{"query": "q"}',
        "--purpose", "market sizing", agent=True,
    )  # fmt: skip
    assert code == 0, err
    request_id = out.split()[0]
    broker = console.broker
    await eventually(lambda: broker.get(request_id).state == State.pending)
    code, _, err = await run("approvals", "approve", request_id)
    assert code == 0, err
    await eventually(lambda: broker.get(request_id).state == State.awaiting_funds)

    funding = await spawn(*CLI, "wallet", "fund", request_id)
    shown = await read_until(funding, "waiting for funds")
    assert shown[0] == "1 checkout started for 0.006 USDC"
    link = shown[1].strip()
    assert link.startswith(sandbox.base_url) and link.endswith("?amount=0.006")
    assert shown[2].strip() == "open it in a browser, or scan the code:"
    assert shown[3:-1] == qr_lines(link, border=2)  # not a terminal: plain, no colour codes
    assert shown[-1] == ("2 waiting for funds: the wallet holds 0.004 USDC of the 0.01 USDC needed")
    assert broker.get(request_id).state == State.awaiting_funds  # nothing retried yet

    assert await fund_like_a_browser(link) == Decimal("0.006")
    out, err = await asyncio.wait_for(funding.communicate(), HUNG_S)
    assert funding.returncode == 0, err.decode()
    assert out.decode().splitlines() == [
        "3 funded: 0.01 USDC covers the 0.01 USDC needed",
        "4 retrying once",
        "5 succeeded: charged 0.01 USDC on base",
    ]
    assert broker.get(request_id).state == State.succeeded
    assert console.ledger.attempts(request_id) == 2  # the first call and one retry
    assert sandbox.state.balance == Decimal(0)


async def test_a_covered_balance_retries_at_once(console, sandbox):
    request_id = await awaiting_funds(console, sandbox)
    sandbox.state.set_balance("1")
    code, out, err = await run("wallet", "fund", request_id)
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0] == "1 no checkout needed: the balance already covers the request"
    assert lines[-1] == "5 succeeded: charged 0.01 USDC on base"
    assert console.ledger.attempts(request_id) == 2


async def test_unknown_and_not_awaiting_requests_are_refused_and_change_nothing(console, sandbox):
    code, _, err = await run("wallet", "fund", "req_nope")
    assert one_line_error(code, err) == "svc-console: no request req_nope"

    request_id = await awaiting_funds(console, sandbox)
    await console.broker.cancel(request_id)
    before = console.ledger.events(request_id)
    code, out, err = await run("wallet", "fund", request_id)
    assert one_line_error(code, err) == (
        f"svc-console: request {request_id} is cancelled, not awaiting funds"
    )
    assert out == ""
    assert console.ledger.events(request_id) == before
    assert console.ledger.attempts(request_id) == 1


async def test_no_funds_before_the_timeout_leaves_the_request_waiting(console, sandbox):
    request_id = await awaiting_funds(console, sandbox)
    code, out, err = await run("wallet", "fund", request_id, "--timeout", "0.5")
    message = one_line_error(code, err)
    assert message.startswith("svc-console: no funds arrived within 0.5 s:")
    assert f"{request_id} still waits for funds" in message
    assert "2 waiting for funds" in out
    assert console.broker.get(request_id).state == State.awaiting_funds
    assert console.ledger.attempts(request_id) == 1


async def test_a_request_cancelled_while_waiting_ends_the_command(console, sandbox):
    request_id = await awaiting_funds(console, sandbox)
    funding = await spawn(*CLI, "wallet", "fund", request_id)
    await read_until(funding, "waiting for funds")
    await waiting_for_funds(console)
    await console.broker.cancel(request_id)
    _, err = await asyncio.wait_for(funding.communicate(), HUNG_S)
    message = one_line_error(funding.returncode, err.decode())
    assert message == f"svc-console: {request_id} is now cancelled: it no longer waits for funds"
    assert console.ledger.attempts(request_id) == 1


async def test_ctrl_c_stops_waiting_and_the_request_keeps_waiting(console, sandbox):
    request_id = await awaiting_funds(console, sandbox)
    funding = await spawn(*CLI, "wallet", "fund", request_id)
    await read_until(funding, "waiting for funds")
    await waiting_for_funds(console)
    funding.send_signal(signal.SIGINT)
    _, err = await asyncio.wait_for(funding.communicate(), HUNG_S)
    assert funding.returncode == 130
    assert err.decode().strip() == (
        f"svc-console: stopped waiting: {request_id} still waits for funds (its one retry kept)"
    )
    # The console stopped waiting with it: nothing is left to retry the request.
    await eventually(lambda: not waits(console))
    assert console.broker.get(request_id).state == State.awaiting_funds
    assert console.ledger.attempts(request_id) == 1


async def test_no_console_running_is_one_line(home):
    code, _, err = await run("wallet", "fund", "req_x")
    assert "is svc-console running?" in one_line_error(code, err)


async def test_help_and_a_bad_timeout(home):
    code, out, _ = await run("wallet", "fund", "--help")
    assert code == 0 and "usage: svc-console wallet fund" in out and "--timeout" in out
    code, _, err = await run("wallet", "fund", "req_x", "--timeout", "0")
    assert one_line_error(code, err) == (
        "svc-console wallet fund: argument --timeout: 0: a timeout must be above 0 and at most"
        " 86400 seconds (see svc-console wallet fund --help)"
    )


async def test_with_operator_accounts_funding_needs_one_and_names_it(
    make_runtime, keep_started, sandbox
):
    code, token, err = await run("operators", "add", "alice")  # before the console starts
    assert code == 0, err
    console = await keep_started(make_runtime(funding_poll_s=0.02))
    request_id = await awaiting_funds(console, sandbox)
    sandbox.state.set_balance("1")
    code, _, err = await run("wallet", "fund", request_id)
    assert one_line_error(code, err).startswith(
        "svc-console: this console's decisions need an operator account"
    )
    assert console.broker.get(request_id).state == State.awaiting_funds
    assert console.ledger.attempts(request_id) == 1

    process = await asyncio.create_subprocess_exec(
        *CLI, "wallet", "fund", request_id, "--operator", "alice",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "SVC_OPERATOR_TOKEN": token.strip()},
    )  # fmt: skip
    out, err = await asyncio.wait_for(process.communicate(), HUNG_S)
    assert process.returncode == 0, err.decode()
    assert out.decode().splitlines()[-1] == "5 succeeded: charged 0.01 USDC on base"
    retried = [e for e in console.ledger.events(request_id) if e["type"] == "funding_retry"]
    assert [json.loads(e["data"])["by"] for e in retried] == ["alice"]
