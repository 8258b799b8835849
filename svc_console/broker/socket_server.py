"""The approval socket: JSON-RPC 2.0, one object per line, over an owner-only Unix socket.

A line is answered independently of the others, so a long `spend.wait` never holds up a `spend.get`
on the same connection, and a malformed line gets an error without touching anything else. Limits
(line size, connections, concurrent waits) are announced by `console.hello`.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import logging
import os
import secrets
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from svc_console import __version__
from svc_console.broker import errors
from svc_console.broker.params import (
    ApproveParams,
    DenyParams,
    HelloParams,
    ListParams,
    RequestParams,
    SubmitParams,
    WaitParams,
)
from svc_console.broker.service import Broker
from svc_console.settings import MAX_SOCKET_PATH, ensure_private_dir, write_private

log = logging.getLogger(__name__)
PROTOCOL_VERSION = 1
PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INTERNAL_ERROR = -32700, -32600, -32601, -32603
AGENT_METHODS = ("console.hello", "spend.submit", "spend.wait", "spend.get", "spend.cancel")
OPERATOR_METHODS = ("approvals.list", "approvals.approve", "approvals.deny")


@dataclass(frozen=True)
class Limits:
    max_line_bytes: int = 256 * 1024
    max_connections: int = 512
    max_waits_per_connection: int = 64
    max_wait_s: float = 3600.0
    write_timeout_s: float = 10.0

    def describe(self) -> dict[str, Any]:
        return {
            "max_line_bytes": self.max_line_bytes,
            "max_connections": self.max_connections,
            "max_waits_per_connection": self.max_waits_per_connection,
            "max_wait_s": self.max_wait_s,
        }


def load_operator_token(path: Path) -> str:
    """The secret that lets the CLI decide like the TUI. Created once, owner-only."""
    if path.exists():
        return path.read_text().strip()
    token = secrets.token_urlsafe(32)
    write_private(path, token)
    return token


@dataclass(eq=False)  # identity, not value: connections live in a set
class _Connection:
    writer: asyncio.StreamWriter
    operator: bool = False
    waits: int = 0
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    tasks: set[asyncio.Task[None]] = field(default_factory=set)


class ApprovalSocket:
    def __init__(self, broker: Broker, path: Path, operator_token: str, limits: Limits = Limits()):
        self.broker, self.path, self.limits = broker, path, limits
        self._operator_token = operator_token
        self._server: asyncio.AbstractServer | None = None
        self._connections: set[_Connection] = set()

    async def start(self) -> None:
        if len(os.fsencode(self.path)) > MAX_SOCKET_PATH:
            raise OSError(f"socket path too long for a Unix socket: {self.path}")
        ensure_private_dir(self.path.parent)
        if self.path.exists() or self.path.is_symlink():
            if not stat.S_ISSOCK(self.path.lstat().st_mode):
                raise OSError(f"{self.path} exists and is not a socket; refusing to replace it")
            if await _answers(self.path):
                raise OSError(f"another broker is listening on {self.path}")
            self.path.unlink()
        old_umask = os.umask(0o177)  # the socket is born 0600: no window where others may connect
        try:
            self._server = await asyncio.start_unix_server(
                self._serve, path=str(self.path), limit=self.limits.max_line_bytes + 1
            )
        finally:
            os.umask(old_umask)
        self.path.chmod(0o600)

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            for connection in list(self._connections):
                connection.writer.close()
                for task in list(connection.tasks):
                    task.cancel()
            with contextlib.suppress(Exception):
                await self._server.wait_closed()
            self._server = None
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()

    # -- one connection -----------------------------------------------------------------------

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connection = _Connection(writer)
        if len(self._connections) >= self.limits.max_connections:
            await self._send(connection, _error(None, errors.Busy("too many connections")))
            writer.close()
            return
        if not _same_user(writer):
            writer.close()
            return
        self._connections.add(connection)
        try:
            while True:
                try:
                    line = await reader.readuntil(b"\n")
                except asyncio.IncompleteReadError:
                    break  # the peer closed; a half line at the end is dropped
                except asyncio.LimitOverrunError:
                    await self._send(
                        connection,
                        _error(
                            None,
                            errors.TooLarge(
                                f"a line may hold at most {self.limits.max_line_bytes} bytes"
                            ),
                        ),
                    )
                    break  # the rest of an oversized line cannot be framed reliably
                if line.strip():
                    task = asyncio.create_task(self._answer(connection, line))
                    connection.tasks.add(task)
                    task.add_done_callback(connection.tasks.discard)
        except (ConnectionError, OSError):
            pass
        finally:
            self._connections.discard(connection)
            for task in list(connection.tasks):
                task.cancel()
            writer.close()

    async def _answer(self, connection: _Connection, line: bytes) -> None:
        reply = await self._dispatch(connection, line)
        if reply is not None:
            await self._send(connection, reply)

    async def _send(self, connection: _Connection, reply: dict[str, Any]) -> None:
        data = json.dumps(reply, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"
        async with connection.lock:
            try:
                connection.writer.write(data)
                # A client that never reads must not make the broker buffer without end.
                await asyncio.wait_for(connection.writer.drain(), self.limits.write_timeout_s)
            except (TimeoutError, ConnectionError, OSError):
                connection.writer.close()

    async def _dispatch(self, connection: _Connection, line: bytes) -> dict[str, Any] | None:
        try:
            message = json.loads(line)
        except (ValueError, RecursionError):
            return _error(None, _rpc(PARSE_ERROR, "parse_error", "not valid UTF-8 JSON"))
        if not isinstance(message, dict):
            return _error(
                None, _rpc(INVALID_REQUEST, "invalid_request", "send one JSON-RPC object per line")
            )
        request_id = message.get("id")
        if not isinstance(request_id, str | int | None) or isinstance(request_id, bool):
            return _error(
                None, _rpc(INVALID_REQUEST, "invalid_request", "id must be a string or number")
            )
        method = message.get("method")
        if message.get("jsonrpc") != "2.0" or not isinstance(method, str):
            return _error(
                request_id,
                _rpc(INVALID_REQUEST, "invalid_request", 'needs "jsonrpc": "2.0" and a method'),
            )
        params = message.get("params", {})
        if not isinstance(params, dict):
            return _error(request_id, errors.InvalidParams("params must be an object"))
        try:
            result = await self._call(connection, method, params)
        except ValidationError as exc:
            failure = errors.InvalidParams(_explain(exc))
        except errors.BrokerError as exc:
            failure = exc
        except Exception:
            log.exception("socket method %s failed", method)
            failure = _rpc(INTERNAL_ERROR, "internal", "internal error; see the log")
        else:
            failure = None
        if "id" not in message:
            return None  # a notification gets no answer, not even an error
        if failure is not None:
            return _error(request_id, failure)
        return {"jsonrpc": "2.0", "id": request_id, "result": result}

    async def _call(self, connection: _Connection, method: str, params: dict[str, Any]) -> Any:
        broker = self.broker
        if method == "console.hello":
            hello = HelloParams.model_validate(params)
            if hello.token is not None:
                if not hmac.compare_digest(hello.token, self._operator_token):
                    raise errors.NotAuthorised("wrong operator token")
                connection.operator = True
            return self._hello(connection)
        if method == "spend.submit":
            request = await broker.submit(SubmitParams.model_validate(params))
            return {"request_id": request.id, "state": request.state}
        if method == "spend.get":
            return _public(broker.get(RequestParams.model_validate(params).request_id))
        if method == "spend.wait":
            wait = WaitParams.model_validate(params)
            if connection.waits >= self.limits.max_waits_per_connection:
                raise errors.Busy(
                    f"at most {self.limits.max_waits_per_connection} waits per connection"
                )
            connection.waits += 1
            try:
                return _public(await broker.wait(wait.request_id, wait.timeout_s))
            finally:
                connection.waits -= 1
        if method == "spend.cancel":
            request = await broker.cancel(RequestParams.model_validate(params).request_id)
            return {"request_id": request.id, "state": request.state}
        if method in OPERATOR_METHODS:
            if not connection.operator:
                raise errors.NotAuthorised(
                    f"{method} is for operators: say console.hello with the operator token"
                )
            return await self._operate(method, params)
        raise _rpc(METHOD_NOT_FOUND, "unknown_method", f"no method {method[:60]!r}")

    async def _operate(self, method: str, params: dict[str, Any]) -> Any:
        broker = self.broker
        if method == "approvals.list":
            listing = ListParams.model_validate(params)
            chosen = broker.pending if listing.view == "pending" else broker.history
            return [_public(r) for r in chosen(listing.limit)]
        if method == "approvals.approve":
            return _public(await broker.approve(ApproveParams.model_validate(params), by="cli"))
        return _public(await broker.deny(DenyParams.model_validate(params), by="cli"))

    def _hello(self, connection: _Connection) -> dict[str, Any]:
        market = self.broker.market
        return {
            "server": "svc-console",
            "version": __version__,
            "protocol": PROTOCOL_VERSION,
            "methods": list(AGENT_METHODS + (OPERATOR_METHODS if connection.operator else ())),
            "operator": connection.operator,
            "limits": self.limits.describe(),
            "service": {
                "base_url": market.base_url,
                "wallet_api_base": market.wallet_api_base,
                "sandbox": market.sandbox,
            },
        }


def _public(request: Any) -> dict[str, Any]:
    # skill.md is for the operator's screen; agents fetch it themselves if they want it.
    return request.model_dump(mode="json", exclude={"skill"})


def _rpc(code: int, reason: str, message: str) -> errors.BrokerError:
    error = errors.BrokerError(message)
    error.code, error.reason = code, reason
    return error


def _error(request_id: Any, exc: errors.BrokerError) -> dict[str, Any]:
    data = {"reason": exc.reason, **exc.data}
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "error": {"code": exc.code, "message": exc.message, "data": data},
    }


def _explain(exc: ValidationError) -> str:
    parts = []
    for problem in exc.errors()[:5]:
        where = ".".join(str(p) for p in problem["loc"]) or "params"
        message = problem["msg"].removeprefix("Value error, ")
        parts.append(f"{where}: {message}")
    return "; ".join(parts)


def _same_user(writer: asyncio.StreamWriter) -> bool:
    """Refuse a peer running as another user, should the socket's mode ever be widened."""
    import socket
    import struct

    sock = writer.get_extra_info("socket")
    if sock is None or not hasattr(socket, "SO_PEERCRED"):
        return True
    creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    _pid, uid, _gid = struct.unpack("3i", creds)
    return uid == os.getuid()


async def _answers(path: Path) -> bool:
    try:
        _reader, writer = await asyncio.open_unix_connection(str(path))
    except OSError:
        return False
    writer.close()
    return True
