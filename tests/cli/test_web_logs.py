"""No secret in any log: the web console's login token, shown in addresses (`/?token=`,
`/ws?token=`), never reaches a log file, nor does any other secret the console holds.

The broker runs in this test, logging to its file under SVC_CONSOLE_HOME as `serve` does, with
an agent registered and an operator passphrase set; `svc-console web` is the real command in a
process of its own. Logged in every way (the address, the websocket's address, the form) and
driven until its console has attached, then stopped: every log file under the home, and what
each process printed, is searched for every secret.
"""

from __future__ import annotations

import asyncio
import logging
import re
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest
from helpers import logged_runtime

from svc_console.config.agent_registry import AgentRegistry
from svc_console.config.operator_passphrase import OperatorPassphrase
from svc_console.runtime import Runtime
from svc_console.tui.web.login import login_token

CLI = [sys.executable, "-m", "svc_console"]
PASSPHRASE = "correct horse battery staple, the operator's"


@pytest.fixture
async def console(make_runtime, paths) -> AsyncIterator[Runtime]:
    """The broker with an operator passphrase, logging to its file under the home at INFO, as
    `serve` does."""
    OperatorPassphrase(paths.operator_passphrase).set(PASSPHRASE)
    async with logged_runtime(make_runtime, paths, logging.INFO) as runtime:
        yield runtime


async def screen_until(ws: aiohttp.ClientWebSocketResponse, text: bytes) -> None:
    """Read the console's output until it shows `text`."""
    screen = b""
    while text not in screen:
        message = await asyncio.wait_for(ws.receive(), 60)
        assert message.type == aiohttp.WSMsgType.BINARY, message
        screen += message.data


async def log_in_every_way(address: str, token: str) -> None:
    """The token in the address, in the websocket's address and in the form; then the console
    itself over the websocket: the passphrase typed, until it says it is attached."""
    for path, status in ((f"/?token={token}", 200), (f"/ws?token={token}", 303)):
        async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as session:
            redirect = status != 303
            async with session.get(f"{address}{path}", allow_redirects=redirect) as opened:
                assert opened.status == status, path
    async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as session:
        async with session.post(f"{address}/login", data={"token": token}) as typed:
            assert typed.status == 200
        async with session.ws_connect(f"{address}/ws?width=100&height=30") as ws:
            await screen_until(ws, b"Operator passphrase")
            await ws.send_json(["stdin", PASSPHRASE + "\r"])
            await screen_until(ws, b"attached")
            await ws.send_json(["stdin", "q"])


async def test_no_secret_of_the_console_is_in_any_log_after_a_web_login(
    console: Runtime, home: Path
):
    runtime = console
    token, _made = login_token(home)  # made before: `web` shows a new token once, on purpose
    agent_token = AgentRegistry(runtime.paths.agent_registry).add("logged-bot")
    state = runtime.sandbox.state
    secrets = {
        "web token": token,
        "API key": state.api_key,
        "wallet token": state.api_token,
        "wallet key": bytes(runtime.market.signer._account.made().key).hex(),
        "agent token": agent_token,
        "operator passphrase": PASSPHRASE,
    }
    web = subprocess.Popen(
        [*CLI, "web", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        said = await asyncio.to_thread(web.stdout.readline)
        where = re.search(r"web console on (http://127\.0\.0\.1:\d+)/", said)
        assert where is not None, said + web.stderr.read()
        await log_in_every_way(where.group(1), token)
    finally:
        web.send_signal(signal.SIGINT)
        out, err = await asyncio.to_thread(web.communicate, timeout=60)
    printed = said + out + err
    assert web.returncode == 0, printed

    log_files = [path for path in home.rglob("*.log*") if path.is_file()]
    assert log_files, "the console logs to files under its home"
    logged = "\n".join(path.read_text(errors="replace") for path in log_files)
    for name, secret in secrets.items():
        assert secret not in logged, f"the {name} is in a log file"
        assert secret not in printed, f"the {name} was printed"
