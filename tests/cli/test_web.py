"""`svc-console web`: the console in a browser behind its login token. Over real HTTP on loopback:
refused without the token, the page with it (typed in the form, or opened once as `?token=`);
and driven through textual-serve's websocket, a console attached to the broker approves a
request."""

from __future__ import annotations

import asyncio
import shlex
import stat
import sys
from collections.abc import AsyncIterator

import aiohttp
import httpx
import pytest
from helpers import eventually
from operator_support import PASSPHRASE

from svc_console.broker.params import SubmitParams
from svc_console.cli import main
from svc_console.core.states import State
from svc_console.runtime import Runtime
from svc_console.tui.web.login import COOKIE, TOKEN_FILE, login_token
from svc_console.tui.web.server import WebConsole

SESSION = f"{shlex.quote(sys.executable)} -m svc_console web --session"


@pytest.fixture
async def web(runtime: Runtime) -> AsyncIterator[tuple[str, str]]:
    """The web console on a free loopback port, for the running broker: (its address, token)."""
    token, _new = login_token(runtime.paths.home)
    server = WebConsole(SESSION, host="127.0.0.1", port=0, token=token)
    port = await server.start()
    yield f"http://127.0.0.1:{port}", token
    await server.stop()


def test_the_token_is_made_once_and_kept_owner_only(home):
    token, new = login_token(home)
    assert new and token.startswith("svcweb_") and len(token) > 40
    assert stat.S_IMODE((home / TOKEN_FILE).stat().st_mode) == 0o600
    assert login_token(home) == (token, False)


async def test_without_the_token_nothing_is_served(web):
    address, _token = web
    async with httpx.AsyncClient(base_url=address) as client:
        for path in ("/", "/ws", "/static/js/textual.js", "/?token=svcweb_wrong"):
            refused = await client.get(path)
            assert refused.status_code == 401, path
            assert "needs its login token" in refused.text
            # Only a token offered and wrong is called wrong; none offered is just asked for.
            assert ("is not this console" in refused.text) == ("token=" in path), path
            assert "svcweb_wrong" not in refused.text
        wrong = await client.post("/login", data={"token": "svcweb_wrong"})
        assert wrong.status_code == 401 and COOKIE not in wrong.cookies
        assert "That token is not this console's." in wrong.text
        assert "svcweb_wrong" not in wrong.text


async def test_with_the_token_the_page_is_served(web):
    address, token = web
    async with httpx.AsyncClient(base_url=address) as client:
        opened = await client.get(f"/?token={token}")
        assert opened.status_code == 303 and opened.headers["location"] == "/"
        cookie = opened.cookies[COOKIE]
        assert token not in cookie  # a value derived from the token, not the token
        page = await client.get("/")
        assert page.status_code == 200
        assert f"ws://{address.removeprefix('http://')}/ws" in page.text
    # The login form does the same.
    async with httpx.AsyncClient(base_url=address) as client:
        typed = await client.post("/login", data={"token": token})
        assert typed.status_code == 303
        assert (await client.get("/")).status_code == 200
        # Another site's page may not open the console's websocket with this browser's cookie.
        hijack = await client.get("/ws", headers={"Origin": "http://evil.example"})
        assert hijack.status_code == 403


async def test_the_web_console_approves_a_request(web, runtime):
    address, token = web
    params = SubmitParams(
        agent="bot",
        kind="market_call",
        endpoint_id="ep_websearch_basic",
        inputs={"query": "heat pumps"},
        purpose="research",
    )
    request = await runtime.broker.submit(params)
    await eventually(lambda: runtime.broker.get(request.id).state == State.pending, timeout=30)
    runtime.passphrase.set(PASSPHRASE)
    jar = aiohttp.CookieJar(unsafe=True)  # cookies for 127.0.0.1, an address, not a name
    async with aiohttp.ClientSession(cookie_jar=jar) as session:
        async with session.get(f"{address}/?token={token}") as opened:
            assert opened.status == 200  # the page, after the redirect that set the cookie
        async with session.ws_connect(f"{address}/ws?width=120&height=36") as ws:

            async def shown(text: bytes) -> None:
                screen = b""
                while text not in screen:
                    message = await asyncio.wait_for(ws.receive(), 60)
                    assert message.type == aiohttp.WSMsgType.BINARY, message
                    screen += message.data

            # Agents of this user are accepted: the console asks the passphrase first.
            await shown(b"Operator passphrase")
            await ws.send_json(["stdin", PASSPHRASE + "\r"])
            # The console is up and attached once its header says so.
            await shown(b"attached")
            await ws.send_json(["stdin", "a"])
            await eventually(
                lambda: runtime.broker.get(request.id).state != State.pending, timeout=60
            )
            await ws.send_json(["stdin", "q"])
    assert runtime.broker.get(request.id).decision.approved


async def test_the_web_console_says_it_may_not_decide_without_a_credential(web, runtime):
    """Agents of this user accepted and no credential set: the page says so at once, and a key
    that would approve decides nothing."""
    address, token = web
    params = SubmitParams(
        agent="bot", kind="market_call", endpoint_id="ep_websearch_basic",
        inputs={"query": "heat pumps"}, purpose="research",
    )  # fmt: skip
    request = await runtime.broker.submit(params)
    await eventually(lambda: runtime.broker.get(request.id).state == State.pending, timeout=30)
    jar = aiohttp.CookieJar(unsafe=True)
    async with aiohttp.ClientSession(cookie_jar=jar) as session:
        async with session.get(f"{address}/?token={token}") as opened:
            assert opened.status == 200
        async with session.ws_connect(f"{address}/ws?width=120&height=36") as ws:
            screen = b""
            while b"Decisions refused here" not in screen:
                message = await asyncio.wait_for(ws.receive(), 60)
                assert message.type == aiohttp.WSMsgType.BINARY, message
                screen += message.data
            await ws.send_json(["stdin", "a"])
            # The refusal, from the broker, kept in the audit chain.
            await eventually(
                lambda: any(
                    e["type"] == "decision_refused" for e in runtime.ledger.events(request.id)
                ),
                timeout=60,
            )
            await ws.send_json(["stdin", "q"])
    assert runtime.broker.get(request.id).state == State.pending


def test_a_non_loopback_address_is_refused_unless_allowed(home, capsys):
    assert main(["web", "--host", "0.0.0.0"]) == 2
    said = capsys.readouterr().err
    assert "not a loopback address" in said and "SSH tunnel" in said


def test_the_web_console_needs_a_running_broker(home, capsys):
    assert main(["web"]) == 2
    assert "no broker runs for this home" in capsys.readouterr().err
