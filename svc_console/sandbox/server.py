"""Serving the sandbox over real HTTP with uvicorn: in a background thread (tests, the demo, the
TUI's embedded sandbox) or in the foreground (`svc-console sandbox`).

The server never writes to the terminal on its own: uvicorn's logging is left unconfigured and its
loggers get a null handler, so nothing can scribble over a Textual screen.
"""

from __future__ import annotations

import contextlib
import json
import logging
import signal
import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import TracebackType

import uvicorn

from svc_console.core.private_files import write_private
from svc_console.sandbox.app import create_app
from svc_console.sandbox.listening import base_url as _base_url
from svc_console.sandbox.listening import bind as _bind
from svc_console.sandbox.state import SandboxState

START_TIMEOUT_S = 10.0
STOP_TIMEOUT_S = 10.0


def _silence_uvicorn() -> None:
    # Without a handler anywhere on the chain, Python's last-resort handler would print uvicorn's
    # warnings to stderr; records still propagate to whatever logging the host application set up.
    logger = logging.getLogger("uvicorn")
    if not any(isinstance(h, logging.NullHandler) for h in logger.handlers):
        logger.addHandler(logging.NullHandler())


def _config(state: SandboxState) -> uvicorn.Config:
    return uvicorn.Config(
        create_app(state),
        log_config=None,
        access_log=False,
        lifespan="off",
        timeout_graceful_shutdown=5,
        server_header=False,
        # Longer than the clients' own idle expiry (httpx: 5 s), so an idle pooled connection is
        # always closed by the client first. With both at 5 s the server could close one just as
        # the client reused it: the request then failed with a read error (a lost dry run, or an
        # outcome unknown), seen once in 1,000 requests under load.
        timeout_keep_alive=30,
    )


class SandboxServer:
    """The sandbox marketplace on a loopback port, served from a daemon thread.

    `start()` returns once the port accepts connections; `state.base_url` is then set. Port 0 (the
    default) picks a free port.
    """

    def __init__(self, state: SandboxState | None = None, host: str = "127.0.0.1", port: int = 0):
        self.state = state or SandboxState()
        self.host, self.port = host, port
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._socket: socket.socket | None = None
        self._failure: BaseException | None = None

    @property
    def base_url(self) -> str:
        if self.state.base_url is None:
            raise RuntimeError("the sandbox server is not started")
        return self.state.base_url

    def start(self) -> str:
        if self._thread is not None:
            return self.base_url
        _silence_uvicorn()
        self._socket = _bind(self.host, self.port)
        base_url = _base_url(self._socket)
        self._server = uvicorn.Server(_config(self.state))
        self._failure = None
        self._thread = threading.Thread(target=self._run, name="svc-console-sandbox", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + START_TIMEOUT_S
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                failure = self._failure
                self.stop()
                raise RuntimeError(f"the sandbox server did not start: {failure!r}")
            time.sleep(0.005)
        self.state.base_url = base_url
        return base_url

    def _run(self) -> None:
        assert self._server is not None and self._socket is not None
        try:
            self._server.run(sockets=[self._socket])
        except BaseException as exc:  # reported by start(); a thread must not print a traceback
            self._failure = exc

    def stop(self, *, wait: bool = True) -> None:
        """Stop serving; `wait=False` returns at once and the server ends on its next tick (the
        process is leaving: waiting out uvicorn's tick would only delay it)."""
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None and wait:
            self._thread.join(STOP_TIMEOUT_S)
        if self._socket is not None and wait:
            self._socket.close()
        self._server = self._thread = self._socket = None
        self.state.base_url = None

    def __enter__(self) -> SandboxServer:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


class _Announcing(uvicorn.Server):
    """A uvicorn server that says when it serves (the child process tells its parent)."""

    def __init__(self, config: uvicorn.Config, started: Callable[[], None]):
        super().__init__(config)
        self._announce = started

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        if self.started:
            self._announce()


def serve_socket(state: SandboxState, sock: socket.socket, started: Callable[[], None]) -> None:
    """Serve `state` on an already listening socket in the foreground, calling `started` once
    serving; returns on SIGINT or SIGTERM (sandbox.child's process)."""
    _silence_uvicorn()
    _Announcing(_config(state), started).run(sockets=[sock])


def write_credentials(path: Path, credentials: dict[str, object]) -> None:
    """Writes the credentials owner-only (file 0600, folder 0700), atomically."""
    write_private(Path(path), json.dumps(credentials, indent=2) + "\n")


def _remove_if_ours(path: Path, api_key: str) -> None:
    # The credentials die with this process; a stale file would point clients at a dead port.
    with contextlib.suppress(OSError, ValueError):
        if json.loads(path.read_text(encoding="utf-8")).get("api_key") == api_key:
            path.unlink()


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def serve_forever(host: str, port: int, credentials_path: Path) -> None:
    """`svc-console sandbox`: serves in the foreground until Ctrl-C (or SIGTERM).

    Writes base_url, wallet_api_base, api_key, username and api_token to `credentials_path`
    (owner-only) and prints one line saying where it listens; the secrets are never printed.
    """
    _silence_uvicorn()
    state = SandboxState()
    sock = _bind(host, port)
    state.base_url = _base_url(sock)
    credentials_path = Path(credentials_path)
    try:
        write_credentials(credentials_path, state.credentials())
        print(
            f"svc-console sandbox listening on {state.base_url} (no real money moves);"
            f" credentials in {credentials_path}",
            flush=True,
        )
        # uvicorn turns SIGINT/SIGTERM into a graceful shutdown, then re-raises the signal under
        # the handler that was there before; this one lets the cleanup below run on SIGTERM too.
        previous = signal.signal(signal.SIGTERM, _interrupt)
        try:
            with contextlib.suppress(KeyboardInterrupt):
                uvicorn.Server(_config(state)).run(sockets=[sock])
        finally:
            signal.signal(signal.SIGTERM, previous)
    finally:
        sock.close()
        _remove_if_ours(credentials_path, state.api_key)
