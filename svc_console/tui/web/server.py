"""`svc-console web`: the console in a browser, through textual-serve, behind the login token.

Each browser tab that opens the page starts its own console process (`svc-console web
--session`), which attaches to the broker already running for this home and never starts one:
the broker stays the one service, and a tab closed stops only its own console. The server listens
on loopback unless told otherwise (`cli/web.py` says why it refuses); the page's websocket address
is the one the browser used, so the same page works through an SSH tunnel on any local port.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

import aiohttp_jinja2
from aiohttp import WSCloseCode, web
from textual_serve.app_service import AppService
from textual_serve.server import Server, to_int

from svc_console.tui.web.login import guard

log = logging.getLogger(__name__)

VIEWPORT = '<meta name="viewport" content="width=device-width, initial-scale=1">'


class WebConsole(Server):
    def __init__(self, command: str, *, host: str, port: int, token: str):
        super().__init__(command, host=host, port=port, title="svc-console")
        self._token = token
        self.runner: web.AppRunner | None = None
        self._tabs: set[web.WebSocketResponse] = set()

    def initialize_logging(self) -> None:
        # The console's own logging (a file under SVC_CONSOLE_HOME) stays as configured: no
        # handler that prints to the terminal.
        pass

    async def on_startup(self, app: web.Application) -> None:
        pass  # the command line says where the console is, once

    async def on_shutdown(self, app: web.Application) -> None:
        """Close every tab's websocket. aiohttp stops only once every handler has returned, and
        a tab's returns only when its socket closes: left open, a tab held Ctrl-C for tens of
        seconds, until aiohttp gave up on it. Closed, each tab's console is ended as usual."""
        for websocket in list(self._tabs):
            await websocket.close(code=WSCloseCode.GOING_AWAY, message=b"the console stopped")

    async def _make_app(self) -> web.Application:
        app = await super()._make_app()
        app.middlewares.append(guard(self._token))
        # Reached only through the guard, which answers the login form itself.
        app.router.add_post("/login", _never)
        return app

    async def start(self) -> int:
        """Listen; the port listened on (a free one when asked for 0)."""
        # No access log: its lines hold each address whole, the login token of `/?token=` and
        # `/ws?token=` with it, and reach the console's log file.
        self.runner = web.AppRunner(await self._make_app(), handle_signals=False, access_log=None)
        await self.runner.setup()
        site = web.TCPSite(self.runner, self.host, self.port)
        await site.start()
        sockets = site._server.sockets if site._server is not None else []  # type: ignore[union-attr]
        self.port = sockets[0].getsockname()[1] if sockets else self.port
        return self.port

    async def stop(self) -> None:
        if self.runner is not None:
            await self.runner.cleanup()
            self.runner = None

    async def handle_index(self, request: web.Request) -> web.Response:
        """The page, with the websocket at the address the browser used, sized for the
        device's screen."""
        base = f"{request.scheme}://{request.host}"
        scheme = "wss" if request.scheme == "https" else "ws"
        static = request.app.router["static"].url_for(filename="/")
        context = {
            "font_size": to_int(request.query.get("fontsize", "16"), 16),
            "app_websocket_url": f"{scheme}://{request.host}/ws",
            "config": {"static": {"url": f"{base}{static}".rstrip("/") + "/"}},
            "application": {"name": self.title},
        }
        page = aiohttp_jinja2.render_template("app_index.html", request, context)
        # textual-serve's page names no viewport, so a phone lays it out as a desktop window
        # 980 pixels wide and shrinks it to its screen: a terminal of a hundred columns in
        # unreadable type. With the device's width, the terminal fits the screen at its size.
        page.text = (page.text or "").replace("<head>", f"<head>\n    {VIEWPORT}", 1)
        return page

    async def handle_websocket(self, request: web.Request) -> web.WebSocketResponse:
        """One tab: its console process, driven over the websocket (textual-serve's own), then
        ended and reaped. textual-serve leaves the ended process's transport open, to be
        closed by the garbage collector on whatever loop is running then (or none)."""
        websocket = web.WebSocketResponse(heartbeat=15)
        width = to_int(request.query.get("width", "80"), 80)
        height = to_int(request.query.get("height", "24"), 24)
        service: AppService | None = None
        self._tabs.add(websocket)
        try:
            await websocket.prepare(request)
            service = AppService(
                self.command,
                write_bytes=websocket.send_bytes,
                write_str=websocket.send_str,
                close=websocket.close,
                download_manager=self.download_manager,
                debug=self.debug,
            )
            await service.start(width, height)
            await self._process_messages(websocket, service)
        except asyncio.CancelledError:
            await websocket.close()
        except Exception:
            log.exception("a web console session failed")
        finally:
            self._tabs.discard(websocket)
            if service is not None:
                await _end(service)
        return websocket


async def _end(service: AppService) -> None:
    """Stop the tab's console (it quits on the meta message), wait for it, close its pipes."""
    with contextlib.suppress(Exception):
        await service.stop()
    process = service._process
    if process is None:
        return
    try:
        async with asyncio.timeout(10):
            await process.wait()
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        await process.wait()
    process._transport.close()  # type: ignore[attr-defined]


async def _never(request: web.Request) -> web.StreamResponse:
    raise web.HTTPNotFound()
