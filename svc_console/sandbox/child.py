"""The embedded sandbox (the console started with no service configured) served by a child
process: its imports, its catalogue and every request it answers then run on another core
instead of competing with the UI and the broker for one interpreter.

The console binds the listening socket itself and chooses the credentials, so the address and
the API key are known at once: the broker and the screens start while the child is still
importing, and a client that connects early waits in the socket's queue. The child inherits the
socket (`python -m svc_console.sandbox`), reads the credentials on its stdin and prints `ready`
once serving. Its stdin stays open for as long as the console lives: at its end (the console
closed it, or was killed, even by SIGKILL) the child exits, so it never outlives the console.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import secrets
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from svc_console.core.private_files import ensure_private_dir
from svc_console.sandbox.listening import base_url, bind

# The child's first start imports the sandbox and builds its catalogue: a second or two on a
# busy machine, far more only when something is wrong.
READY_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 10.0
USERNAME = "sandbox-operator"  # as SandboxState's default


@dataclass(frozen=True)
class ChildCredentials:
    """What the console reads of its sandbox, under the name an in-process sandbox has it
    (`sandbox.state.api_key`, `.username`, `.api_token`, `.outbox_dir`)."""

    api_key: str = field(repr=False)
    username: str
    api_token: str = field(repr=False)
    outbox_dir: Path


class SandboxChild:
    """The sandbox marketplace on a loopback port, served by a child process.

    `start()` returns the base URL as soon as the child is spawned; `ready()` waits for it to
    serve. `folder` (owner-only) holds its outbox and its error output."""

    def __init__(self, folder: Path, host: str = "127.0.0.1", port: int = 0):
        self.folder = Path(folder)
        self.host, self.port = host, port
        self.state = ChildCredentials(
            api_key="sk_live_" + secrets.token_urlsafe(24),
            username=USERNAME,
            api_token=secrets.token_urlsafe(32),
            outbox_dir=self.folder / "outbox",
        )
        self._base_url: str | None = None
        self._process: subprocess.Popen[bytes] | None = None
        self._ready = False

    @property
    def base_url(self) -> str:
        if self._base_url is None:
            raise RuntimeError("the sandbox is not started")
        return self._base_url

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    @property
    def errors_path(self) -> Path:
        return self.folder / "child.err"

    def start(self) -> str:
        if self._process is not None:
            return self.base_url
        ensure_private_dir(self.folder)
        sock = bind(self.host, self.port)
        errors = os.open(self.errors_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        argv = [sys.executable, "-m", "svc_console.sandbox", "--fd", str(sock.fileno())]
        argv += ["--outbox", str(self.state.outbox_dir)]
        try:
            self._process = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=errors,
                pass_fds=[sock.fileno()],
                # Apart from the terminal's process group: a Ctrl-C there is the console's.
                start_new_session=True,
            )
            self._base_url = base_url(sock)
        finally:
            os.close(errors)
            # The child holds its own copy; without ours, a child that died leaves connections
            # refused at once instead of queued forever.
            sock.close()
        assert self._process.stdin is not None
        credentials = {
            "api_key": self.state.api_key,
            "username": self.state.username,
            "api_token": self.state.api_token,
            "base_url": self._base_url,
        }
        self._process.stdin.write(json.dumps(credentials).encode() + b"\n")
        self._process.stdin.flush()
        return self._base_url

    async def ready(self, timeout: float = READY_TIMEOUT_S) -> None:
        """Return once the child serves; raise RuntimeError if it ended or never said so."""
        if self._ready:
            return
        process = self._process
        if process is None or process.stdout is None:
            raise RuntimeError("the sandbox is not started")
        try:
            async with asyncio.timeout(timeout):
                line = await asyncio.to_thread(process.stdout.readline)
        except TimeoutError:
            line = b""
        if line.strip() != b"ready":
            raise RuntimeError(f"the sandbox did not start: {self._errors_tail()}")
        self._ready = True

    def _errors_tail(self) -> str:
        try:
            text = self.errors_path.read_text(errors="replace").strip()
        except OSError:
            return "no error output"
        return text[-1500:] or "no error output"

    def stop(self, *, wait: bool = True) -> None:
        """Close the child's stdin, which ends it; `wait=False`: the console exits next, so the
        child is not waited for (it ends all the same)."""
        process, self._process = self._process, None
        self._base_url, self._ready = None, False
        if process is None:
            return
        if process.stdin is not None:
            with contextlib.suppress(OSError):
                process.stdin.close()
        if not wait:
            return
        try:
            process.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.stdout is not None:
            process.stdout.close()
