"""The approval socket's transport: an owner-only Unix socket, one JSON-RPC line at a time.

A line is answered independently of the others, so a long `spend.wait` never holds up a `spend.get`
on the same connection, and a malformed line gets an error without touching anything else (the
framing is `jsonrpc`'s, the methods `methods`'). Here: binding the socket, peer credentials, the
operator token a connection may present, and the limits.

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
import logging
import os
import secrets
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from svc_console.broker import errors, jsonrpc
from svc_console.broker.limits import Limits
from svc_console.broker.methods import Methods
from svc_console.broker.service import Broker
from svc_console.config.paths import MAX_SOCKET_PATH
from svc_console.core.private_files import ensure_private_dir, write_private

log = logging.getLogger(__name__)
DEFAULT_LIMITS = Limits()


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
    operator_token: str = field(default="", repr=False)

    def present_token(self, token: str) -> None:
        # Bytes: compare_digest refuses str holding anything but ASCII.
        if not hmac.compare_digest(token.encode(), self.operator_token.encode()):
            raise errors.NotAuthorised("wrong operator token")
        self.operator = True


class ApprovalSocket:
    def __init__(
        self, broker: Broker, path: Path, operator_token: str, limits: Limits = DEFAULT_LIMITS
    ):
        self.broker, self.path, self.limits = broker, path, limits
        self._operator_token = operator_token
        self.methods = Methods(broker, limits)
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
        connection = _Connection(
            writer,
            asyncio.Semaphore(limits.max_pending_per_connection),
            operator_token=self._operator_token,
        )
        if len(self._connections) >= limits.max_connections:
            await self._send(
                connection, jsonrpc.error_reply(None, errors.Busy("too many connections"))
            )
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
                    await self._send(connection, jsonrpc.error_reply(None, self._too_large()))
                skipping = True
                continue
            except TimeoutError:
                message = f"a line must end within {limits.line_timeout_s:g} s of its first byte"
                await self._send(
                    connection,
                    jsonrpc.error_reply(
                        None, jsonrpc.rpc_error(jsonrpc.LINE_TIMEOUT, "line_timeout", message)
                    ),
                )
                return
            if skipping:
                skipping = False  # that was the end of the oversized line
                continue
            if len(line) > limits.max_line_bytes:
                await self._send(connection, jsonrpc.error_reply(None, self._too_large()))
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
            reply = await jsonrpc.answer(
                line,
                self.limits.max_depth,
                lambda method, params: self.methods.call(connection, method, params),
            )
        except Exception:  # never let one line's answer die silently
            log.exception("answering a socket line failed")
            reply = jsonrpc.error_reply(None, jsonrpc.internal_error())
        if reply is not None:
            await self._send(connection, reply)

    async def _send(self, connection: _Connection, reply: dict[str, Any]) -> None:
        data = jsonrpc.encode(reply)
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
