"""The approval socket: JSON-RPC 2.0, one object per line, over an owner-only Unix socket.

A line is answered independently of the others, so a long `spend.wait` never holds up a `spend.get`
on the same connection, and a malformed line gets an error without touching anything else: it is
read as strict UTF-8 JSON (no NaN or Infinity, no lone surrogate escapes, nesting bounded) before
any method sees it. Every line gets one reply, except a well-formed notification, which gets none.

One agent cannot hold up the others: each connection has its own bounds, announced by
`console.hello` (`Limits.describe`). A line must end within `line_timeout_s` of its first byte (a
client that sends half a line and stalls is cut off); an oversized line is refused and skipped; a
connection with `max_pending_per_connection` lines unanswered is not read until answers go out;
replies wait in a buffer of `write_buffer_bytes`, and a client that reads none of them for
`write_timeout_s` is disconnected.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import logging
import os
import re
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
from svc_console.broker.secret_refusal import refuse_secrets
from svc_console.broker.service import Broker
from svc_console.config.paths import MAX_SOCKET_PATH
from svc_console.core.private_files import ensure_private_dir, write_private

log = logging.getLogger(__name__)
PROTOCOL_VERSION = 1
PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INTERNAL_ERROR = -32700, -32600, -32601, -32603
LINE_TIMEOUT = -32008  # a half line that never ended; the connection is then closed
AGENT_METHODS = ("console.hello", "spend.submit", "spend.wait", "spend.get", "spend.cancel")
OPERATOR_METHODS = ("approvals.list", "approvals.approve", "approvals.deny")
ENVELOPE = frozenset({"jsonrpc", "id", "method", "params"})


@dataclass(frozen=True)
class Limits:
    """What one agent may ask of the socket; `console.hello` tells every agent."""

    max_line_bytes: int = 256 * 1024  # one line, its newline included
    max_depth: int = 64  # nesting of arrays and objects in one message
    max_connections: int = 512
    max_pending_per_connection: int = 256  # lines read and not yet answered
    max_waits_per_connection: int = 64
    max_wait_s: float = 3600.0
    line_timeout_s: float = 10.0  # from a line's first byte to its newline
    write_buffer_bytes: int = 256 * 1024  # replies held for a client that is not reading
    write_timeout_s: float = 10.0  # how long such a client is waited for

    def describe(self) -> dict[str, Any]:
        return dict(vars(self))


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
    slots: asyncio.Semaphore  # one per line being answered
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
            # A backlog as deep as the connections allowed: with asyncio's default (100), agents
            # connecting at once beyond it were told they were connected, then found it dead.
            self._server = await asyncio.start_unix_server(
                self._serve,
                path=str(self.path),
                limit=self.limits.max_line_bytes,
                backlog=self.limits.max_connections,
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
        if not _same_user(writer):
            writer.close()
            return
        limits = self.limits
        writer.transport.set_write_buffer_limits(high=limits.write_buffer_bytes)
        connection = _Connection(writer, asyncio.Semaphore(limits.max_pending_per_connection))
        if len(self._connections) >= limits.max_connections:
            await self._send(connection, _error(None, errors.Busy("too many connections")))
            writer.close()
            return
        self._connections.add(connection)
        try:
            await self._read_lines(connection, reader)
        except (ConnectionError, OSError):
            pass  # the peer went away, or a reply could not be written: the connection ends
        finally:
            self._connections.discard(connection)
            for task in list(connection.tasks):
                task.cancel()
            if writer.transport.get_write_buffer_size():
                writer.transport.abort()  # replies nobody will read must not keep it alive
            else:
                writer.close()

    async def _read_lines(self, connection: _Connection, reader: asyncio.StreamReader) -> None:
        limits = self.limits
        skipping = False  # inside an oversized line, already refused: drop up to its newline
        while True:
            first = await reader.read(1)  # an idle connection may wait here as long as it likes
            if not first:
                return
            try:
                async with asyncio.timeout(limits.line_timeout_s):
                    line = first if first == b"\n" else first + await reader.readuntil(b"\n")
            except asyncio.IncompleteReadError:
                return  # the peer closed; a half line at the end is dropped
            except asyncio.LimitOverrunError as overrun:
                # The head of the line is buffered: drop it, then the rest as it arrives.
                await reader.readexactly(overrun.consumed)
                if not skipping:
                    await self._send(connection, _error(None, self._too_large()))
                skipping = True
                continue
            except TimeoutError:
                message = f"a line must end within {limits.line_timeout_s:g} s of its first byte"
                await self._send(
                    connection, _error(None, _rpc(LINE_TIMEOUT, "line_timeout", message))
                )
                return
            if skipping:
                skipping = False  # that was the end of the oversized line
                continue
            if len(line) > limits.max_line_bytes:
                await self._send(connection, _error(None, self._too_large()))
                continue
            if line.strip():
                # Past this many unanswered lines the connection is not read: backpressure.
                await connection.slots.acquire()
                task = asyncio.create_task(self._answer(connection, line))
                connection.tasks.add(task)
                task.add_done_callback(connection.tasks.discard)
                task.add_done_callback(lambda _: connection.slots.release())

    def _too_large(self) -> errors.BrokerError:
        return errors.TooLarge(f"a line may hold at most {self.limits.max_line_bytes} bytes")

    async def _answer(self, connection: _Connection, line: bytes) -> None:
        try:
            reply = await self._dispatch(connection, line)
        except Exception:  # never let one line's answer die silently
            log.exception("answering a socket line failed")
            reply = _error(None, _rpc(INTERNAL_ERROR, "internal", "internal error; see the log"))
        if reply is not None:
            await self._send(connection, reply)

    async def _send(self, connection: _Connection, reply: dict[str, Any]) -> None:
        data = _encode(reply)
        writer = connection.writer
        async with connection.lock:
            if writer.is_closing():
                return
            try:
                writer.write(data)
                if writer.transport.get_write_buffer_size() > self.limits.write_buffer_bytes:
                    # A client that is not reading: wait a while for it, then let it go, so the
                    # broker never buffers without end.
                    await asyncio.wait_for(writer.drain(), self.limits.write_timeout_s)
            except (TimeoutError, ConnectionError, OSError):
                # Abort, not close: close() would wait to flush to a peer that does not read.
                writer.transport.abort()

    async def _dispatch(self, connection: _Connection, line: bytes) -> dict[str, Any] | None:
        message = _parse(line, self.limits.max_depth)
        if isinstance(message, errors.BrokerError):
            return _error(None, message)
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
        if not ENVELOPE.issuperset(message):
            # A misspelt "params" would otherwise be dropped and the call made without them.
            unknown = sorted(set(message) - ENVELOPE)[0]
            return _error(
                request_id,
                _rpc(
                    INVALID_REQUEST,
                    "invalid_request",
                    f"unknown member {unknown[:40]!r}: a request has jsonrpc, id, method, params",
                ),
            )
        notification = "id" not in message  # gets no answer, not even an error
        params = message.get("params", {})
        if not isinstance(params, dict):
            failure: errors.BrokerError | None = errors.InvalidParams("params must be an object")
        else:
            try:
                result = await self._call(connection, method, params)
            except ValidationError as exc:
                failure = errors.InvalidParams(_explain(exc))
            except errors.BrokerError as exc:
                failure = exc
            except Exception:
                log.exception("socket method %s failed", method[:60])
                failure = _rpc(INTERNAL_ERROR, "internal", "internal error; see the log")
            else:
                failure = None
        if notification:
            return None
        if failure is not None:
            return _error(request_id, failure)
        return {"jsonrpc": "2.0", "id": request_id, "result": result}

    async def _call(self, connection: _Connection, method: str, params: dict[str, Any]) -> Any:
        broker = self.broker
        if method == "console.hello":
            hello = HelloParams.model_validate(params)
            if hello.token is not None:
                # Bytes: compare_digest refuses str holding anything but ASCII.
                given, expected = hello.token.encode(), self._operator_token.encode()
                if not hmac.compare_digest(given, expected):
                    raise errors.NotAuthorised("wrong operator token")
                connection.operator = True
            return self._hello(connection)
        if method == "spend.submit":
            submission = SubmitParams.model_validate(params)
            # Before the broker records anything.
            refuse_secrets(submission, [broker.market.payer_key or ""])
            request = await broker.submit(submission)
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


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


# A \uD800-\uDFFF escape: the only way a surrogate gets into text decoded as strict UTF-8.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89abcdefABCDEF]")


def _parse(line: bytes, max_depth: int) -> Any:
    """The line's JSON value, or the error to answer: strict UTF-8, standard JSON, text that is
    valid Unicode (what the ledger and every reply must be able to encode), bounded nesting."""
    try:
        text = line.decode("utf-8")
        message = json.loads(text, parse_constant=_refuse_constant)
    except RecursionError:
        return errors.TooLarge(f"a message may nest at most {max_depth} levels")
    except ValueError:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        return _rpc(PARSE_ERROR, "parse_error", "not valid UTF-8 JSON")
    # Cheap tests first: most lines hold no surrogate escape and few brackets.
    may_nest = text.count("[") + text.count("{") > max_depth
    if may_nest or _SURROGATE_ESCAPE.search(text):
        problem = _shape_problem(message, max_depth)
        if problem == "depth":
            return errors.TooLarge(f"a message may nest at most {max_depth} levels")
        if problem == "surrogate":
            return _rpc(PARSE_ERROR, "parse_error", "not valid UTF-8 JSON: a lone surrogate")
    return message


def _shape_problem(value: Any, max_depth: int) -> str | None:
    """'depth' or 'surrogate' if the value nests too deep or holds a lone surrogate (walked
    without recursion, so no message can exhaust the stack)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, str):
            if not _is_unicode(item):
                return "surrogate"
        elif isinstance(item, dict | list):
            if depth > max_depth:
                return "depth"
            if isinstance(item, dict):
                stack.extend((key, depth) for key in item)
                stack.extend((child, depth + 1) for child in item.values())
            else:
                stack.extend((child, depth + 1) for child in item)
    return None


def _is_unicode(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _encode(reply: dict[str, Any]) -> bytes:
    text = json.dumps(reply, separators=(",", ":"), ensure_ascii=False, default=str)
    try:
        return text.encode() + b"\n"
    except UnicodeEncodeError:  # text from elsewhere with a lone surrogate: escape it
        return json.dumps(reply, separators=(",", ":"), default=str).encode() + b"\n"


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
