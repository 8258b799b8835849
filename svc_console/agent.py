"""The client agent authors import to ask svc-console before spending.

It speaks the approval socket's public protocol (JSON-RPC 2.0, one object per line, over a Unix
socket) and nothing else: an agent never holds the wallet credential, it only asks and waits.

    from svc_console.agent import Agent

    with Agent("research-bot") as agent:
        ticket = agent.submit(endpoint_id="ep_websearch_basic",
                              inputs={"query": "solar prices 2026"},
                              purpose="background for the weekly energy note")
        request = agent.wait_for_outcome(ticket["request_id"])
        if request["state"] == "succeeded":
            print(request["outcome"]["body"])

`AsyncAgent` is the same for asyncio programs. A registered agent proves its name with the token
`svc-console agents add` printed: pass `token=`, or set SVC_AGENT_TOKEN (then the name may be
left out: the token says who the agent is).

The console closes a connection that sat idle (its `idle_timeout_s`) with a `console.closing`
notice; the clients connect again by themselves and send what they were about to send, which the
console had not read.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import select
import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

FINAL_STATES = frozenset(
    {"rejected", "denied", "succeeded", "failed", "expired", "cancelled", "unknown"}
)
_WAIT_CHUNK_S = 300.0
IDLE_NOTICE = "console.closing"  # the console's last line on a connection it closes as idle


# A console whose queue of new connections is full (a burst of agents, a flood) answers a
# connection at once with EAGAIN rather than making it wait: tried again for a while, as a
# connection that waits in the queue would have.
_BUSY_RETRY_S = 10.0


def _try_connect(path: Path, timeout_s: float | None) -> socket.socket | None:
    """One attempt (a Unix socket connects at once, or says why not): the connected socket,
    None while the console's queue of new connections is full; `timeout_s` None: non-blocking.
    Not asyncio's own connect: on a Unix socket it takes EAGAIN for a connection in progress
    and answers one that was never made."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(0.0 if timeout_s is None else timeout_s)
    try:
        sock.connect(str(path))
        return sock
    except BlockingIOError:
        sock.close()
        return None
    except OSError as exc:
        sock.close()
        raise NotConnected(f"cannot reach svc-console at {path}: {exc.strerror}") from None


class _Backoff:
    """Pauses between attempts, doubling up to a quarter of a second, until `limit_s` is spent."""

    def __init__(self, path: Path, limit_s: float):
        self.path, self.deadline, self.pause = path, time.monotonic() + limit_s, 0.01

    def next(self) -> float:
        pause = self.pause
        if time.monotonic() + pause > self.deadline:
            raise NotConnected(
                f"cannot reach svc-console at {self.path}: it is busy (its queue of new"
                " connections stayed full)"
            )
        self.pause = min(pause * 2, 0.25)
        return pause


def _connected(path: Path, timeout_s: float) -> socket.socket:
    backoff = _Backoff(path, min(timeout_s, _BUSY_RETRY_S))
    while (sock := _try_connect(path, timeout_s)) is None:
        time.sleep(backoff.next())
    return sock


async def _connected_async(path: Path) -> socket.socket:
    backoff = _Backoff(path, _BUSY_RETRY_S)
    while (sock := _try_connect(path, None)) is None:
        await asyncio.sleep(backoff.next())
    return sock


class AgentError(Exception):
    """The broker refused a call; `reason` is its stable one-word reason."""

    def __init__(self, code: int, reason: str, message: str, data: dict[str, Any] | None = None):
        super().__init__(message)
        self.code, self.reason, self.message, self.data = code, reason, message, data or {}


class NotConnected(AgentError):
    def __init__(self, message: str):
        super().__init__(0, "not_connected", message)


class _ClosedIdle(NotConnected):
    """The console closed the connection as idle before reading this call: safe to send again."""

    def __init__(self) -> None:
        super().__init__("svc-console closed the idle connection")


def default_socket_path() -> Path:
    from svc_console.config.paths import client_paths

    return client_paths().socket


def _hello_params(name: str | None, token: str | None, client: str | None) -> dict[str, Any]:
    if token is None:
        token = os.environ.get("SVC_AGENT_TOKEN")
    params = {"agent": name, "token": token, "client": client}
    return {key: value for key, value in params.items() if value}


def _bound_name(name: str | None, hello: dict[str, Any]) -> str | None:
    """The name the socket bound the connection to, when the agent left it to the token."""
    agent = hello.get("agent") if isinstance(hello, dict) else None
    return agent.get("name", name) if isinstance(agent, dict) else name


def _submit_params(agent: str | None, kind: str, **fields: Any) -> dict[str, Any]:
    params = {"agent": agent, "kind": kind, **fields}
    if params.get("max_usdc") is not None:
        params["max_usdc"] = str(params["max_usdc"])
    return {key: value for key, value in params.items() if value is not None}


def _encode(request_id: int, method: str, params: dict[str, Any]) -> bytes:
    """One line of UTF-8 JSON. What the socket would refuse without being able to say which call
    it refused (a lone surrogate, NaN: not UTF-8 JSON, answered with a null id) is refused here,
    so the call fails at once instead of waiting for an answer that names no call."""
    message = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
    try:
        text = json.dumps(message, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
        return text.encode() + b"\n"
    except UnicodeEncodeError:
        problem = "text must be valid Unicode (it holds a lone surrogate)"
    except ValueError:
        problem = "numbers must be finite (NaN and Infinity are not JSON)"
    raise AgentError(-32602, "invalid_params", f"{method}: {problem}")


def _result(reply: dict[str, Any]) -> Any:
    if "error" in reply:
        error = reply["error"]
        data = error.get("data") or {}
        raise AgentError(error.get("code", 0), data.get("reason", "error"), error["message"], data)
    return reply["result"]


class Agent:
    """Blocking client: one call at a time over one connection."""

    def __init__(
        self,
        name: str | None,
        socket_path: str | os.PathLike[str] | None = None,
        *,
        token: str | None = None,
        timeout_s: float = 30.0,
        client: str | None = None,
    ):
        self.name = name
        self.path = Path(socket_path) if socket_path else default_socket_path()
        self._token, self._timeout, self._client = token, timeout_s, client
        self._sock: socket.socket | None = None
        self._buffer = b""
        self._ids = itertools.count(1)
        self.hello_info: dict[str, Any] = {}

    def __enter__(self) -> Agent:
        self.connect()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def connect(self) -> dict[str, Any]:
        self._sock = _connected(self.path, self._timeout)
        hello = _hello_params(self.name, self._token, self._client)
        self.hello_info = self.call("console.hello", hello)
        self.name = _bound_name(self.name, self.hello_info)
        return self.hello_info

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    def call(self, method: str, params: dict[str, Any], *, timeout_s: float | None = None) -> Any:
        if self._sock is None:
            raise NotConnected("not connected")
        if method != "console.hello" and self._hung_up():
            self.connect()
        try:
            return self._exchange(method, params, timeout_s)
        except _ClosedIdle:
            self.connect()
            return self._exchange(method, params, timeout_s)

    def _hung_up(self) -> bool:
        """Whether the console ended the connection since the last call: between calls it sends
        nothing else (its idle notice, then the end)."""
        assert self._sock is not None
        readable, _, _ = select.select([self._sock], [], [], 0)
        return bool(readable) or b"\n" in self._buffer

    def _exchange(self, method: str, params: dict[str, Any], timeout_s: float | None) -> Any:
        assert self._sock is not None
        request_id = next(self._ids)
        self._sock.settimeout(timeout_s or self._timeout)
        try:
            # The console may have refused the connection and closed it before this line went
            # out: its refusal, if it sent one, is still there to read.
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                self._sock.sendall(_encode(request_id, method, params))
            while True:
                reply = json.loads(self._read_line())
                if reply.get("method") == IDLE_NOTICE:
                    self.close()
                    raise _ClosedIdle
                if reply.get("id") in (request_id, None):
                    return _result(reply)
        except (OSError, ValueError) as exc:
            self.close()
            raise NotConnected(f"lost the connection to svc-console: {exc}") from None

    def _read_line(self) -> bytes:
        while b"\n" not in self._buffer:
            assert self._sock is not None
            chunk = self._sock.recv(65536)
            if not chunk:
                raise ConnectionError("svc-console closed the connection")
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line

    def submit(
        self,
        *,
        inputs: dict[str, Any],
        purpose: str,
        endpoint_id: str | None = None,
        kind: str = "market_call",
        dataset_id: str | None = None,
        max_usdc: Any = None,
        idempotency_key: str | None = None,
    ) -> dict[str, Any]:
        return self.call(
            "spend.submit",
            _submit_params(
                self.name,
                kind,
                endpoint_id=endpoint_id,
                dataset_id=dataset_id,
                inputs=inputs,
                purpose=purpose,
                max_usdc=max_usdc,
                idempotency_key=idempotency_key,
            ),
        )

    def wait(self, request_id: str, timeout_s: float = 30.0) -> dict[str, Any]:
        params = {"request_id": request_id, "timeout_s": timeout_s}
        return self.call("spend.wait", params, timeout_s=timeout_s + self._timeout)

    def wait_for_outcome(self, request_id: str, timeout_s: float | None = None) -> dict[str, Any]:
        """Wait until the request is final, however long the operator takes (or `timeout_s`)."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while True:
            left = _WAIT_CHUNK_S if deadline is None else max(0.0, deadline - time.monotonic())
            request = self.wait(request_id, min(left, _WAIT_CHUNK_S))
            if request["state"] in FINAL_STATES or left <= 0:
                return request

    def get(self, request_id: str) -> dict[str, Any]:
        return self.call("spend.get", {"request_id": request_id})

    def cancel(self, request_id: str) -> dict[str, Any]:
        return self.call("spend.cancel", {"request_id": request_id})


class AsyncAgent:
    """asyncio client: calls may overlap on one connection (replies are matched by id)."""

    def __init__(
        self,
        name: str | None,
        socket_path: str | os.PathLike[str] | None = None,
        *,
        token: str | None = None,
        client: str | None = None,
    ):
        self.name = name
        self.path = Path(socket_path) if socket_path else default_socket_path()
        self._token, self._client = token, client
        self._writer: asyncio.StreamWriter | None = None
        self._reader_task: asyncio.Task[None] | None = None
        self._replies: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._ids = itertools.count(1)
        self._closed_idle = False
        self._reconnecting = asyncio.Lock()
        self.hello_info: dict[str, Any] = {}
        # Notifications the console pushes unasked (an operator's `approvals.follow`), and what
        # to do when the connection ends: both called on the client's loop.
        self.on_notice: Callable[[dict[str, Any]], None] | None = None
        self.on_lost: Callable[[], None] | None = None
        self._leaving = False  # closed by the client itself: nothing was lost

    async def __aenter__(self) -> AsyncAgent:
        await self.connect()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def connect(self) -> dict[str, Any]:
        sock = await _connected_async(self.path)
        reader, self._writer = await asyncio.open_unix_connection(sock=sock, limit=16 * 1024 * 1024)
        self._closed_idle = self._leaving = False
        self._reader_task = asyncio.create_task(self._read(reader))
        hello = _hello_params(self.name, self._token, self._client)
        self.hello_info = await self.call("console.hello", hello)
        self.name = _bound_name(self.name, self.hello_info)
        return self.hello_info

    async def close(self) -> None:
        self._leaving = True
        if self._writer is not None:
            self._writer.close()
            self._writer = None
        if self._reader_task is not None:
            self._reader_task.cancel()
            self._reader_task = None

    async def _read(self, reader: asyncio.StreamReader) -> None:
        # An error that names no call (the console refusing the connection itself) is what the
        # calls still waiting hear when the connection then ends.
        unnamed: dict[str, Any] | None = None
        try:
            while line := await reader.readline():
                reply = json.loads(line)
                if reply.get("method") == IDLE_NOTICE:
                    self._closed_idle = True
                    continue
                if "method" in reply and "id" not in reply:
                    if self.on_notice is not None:
                        self.on_notice(reply)
                    continue
                future = self._replies.pop(reply.get("id"), None)
                if future is not None and not future.done():
                    future.set_result(reply)
                elif reply.get("id") is None and "error" in reply:
                    unnamed = reply
        except (OSError, ValueError):
            pass
        finally:
            for future in self._replies.values():
                if future.done():
                    continue
                if unnamed is not None:
                    future.set_result(unnamed)
                elif self._closed_idle:
                    future.set_exception(_ClosedIdle())
                else:
                    future.set_exception(NotConnected("svc-console closed the connection"))
            self._replies.clear()
            if self.on_lost is not None and not (self._closed_idle or self._leaving):
                self.on_lost()

    async def call(self, method: str, params: dict[str, Any]) -> Any:
        if self._writer is None:
            raise NotConnected("not connected")
        if method != "console.hello" and self._closed_idle:
            await self._reconnect()
        try:
            return await self._exchange(method, params)
        except _ClosedIdle:
            await self._reconnect()
            return await self._exchange(method, params)

    async def _reconnect(self) -> None:
        """Connect again after an idle close, once however many calls noticed it."""
        async with self._reconnecting:
            if self._closed_idle:
                await self.close()
                await self.connect()

    async def _exchange(self, method: str, params: dict[str, Any]) -> Any:
        assert self._writer is not None
        request_id = next(self._ids)
        line = _encode(request_id, method, params)
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._replies[request_id] = future
        try:
            self._writer.write(line)
            await self._writer.drain()
        except OSError as exc:
            # The console may have refused the connection and closed it first: the reader hands
            # its refusal to the calls still waiting once it sees the end, this one included.
            if self._reader_task is not None:
                await asyncio.wait([self._reader_task], timeout=5)
            if not future.done():
                self._replies.pop(request_id, None)
                raise NotConnected(f"lost the connection to svc-console: {exc}") from None
        return _result(await future)

    async def submit(
        self,
        *,
        inputs: dict[str, Any],
        purpose: str,
        endpoint_id: str | None = None,
        kind: str = "market_call",
        dataset_id: str | None = None,
        max_usdc: Any = None,
        idempotency_key: str | None = None,
    ) -> dict[str, Any]:
        return await self.call(
            "spend.submit",
            _submit_params(
                self.name,
                kind,
                endpoint_id=endpoint_id,
                dataset_id=dataset_id,
                inputs=inputs,
                purpose=purpose,
                max_usdc=max_usdc,
                idempotency_key=idempotency_key,
            ),
        )

    async def wait(self, request_id: str, timeout_s: float = 30.0) -> dict[str, Any]:
        return await self.call("spend.wait", {"request_id": request_id, "timeout_s": timeout_s})

    async def wait_for_outcome(
        self, request_id: str, timeout_s: float | None = None
    ) -> dict[str, Any]:
        loop = asyncio.get_running_loop()
        deadline = None if timeout_s is None else loop.time() + timeout_s
        while True:
            left = _WAIT_CHUNK_S if deadline is None else max(0.0, deadline - loop.time())
            request = await self.wait(request_id, min(left, _WAIT_CHUNK_S))
            if request["state"] in FINAL_STATES or left <= 0:
                return request

    async def get(self, request_id: str) -> dict[str, Any]:
        return await self.call("spend.get", {"request_id": request_id})

    async def cancel(self, request_id: str) -> dict[str, Any]:
        return await self.call("spend.cancel", {"request_id": request_id})
