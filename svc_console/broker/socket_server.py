"""The console's two sockets: one JSON-RPC line at a time over a Unix socket, for agents or for
the operator.

The agents' socket (`SVC_CONSOLE_SOCKET`) is owner-only unless `[agents]` opens it to a group
(mode 0660, that group) or to listed uids (mode 0666, and the console hangs up on every other
uid); it may live outside SVC_CONSOLE_HOME, in a folder that is checked as OpenSSH checks its
own (`socket_folder`) and never changed. The operator socket is owner-only, in the home folder,
and accepts only the console owner's uid, whatever its mode; a console running as a user of its
own opens it (mode 0666, outside the home) to the uids `[operator] uids` names, and hangs up on
every other. Which methods each serves is
`methods`'; who an agent is, `agent_access`'.

A line is answered independently of the others, so a long `spend.wait` never holds up a
`spend.get` on the same connection, and a malformed line gets an error without touching anything
else (the framing is `jsonrpc`'s). One agent cannot hold up the others: each connection has its
own bounds, announced by `console.hello` (`Limits.describe`). A line must end within
`line_timeout_s` of its first byte (a client that sends half a line and stalls is cut off); an
oversized line is refused and skipped; a connection with `max_pending_per_connection` lines
unanswered is not read until answers go out; replies wait in a buffer of `write_buffer_bytes`,
and a client that reads none of them for `write_timeout_s` is disconnected. Connections that hold
a slot and ask nothing are closed after `idle_timeout_s`, and no one peer may hold more than
`max_connections_per_peer`: a peer is a uid (however many processes it runs, whatever names its
agents invent) until a connection proves it speaks for a registered agent, then that agent.
`reserved_for_registered` connections are kept for registered agents: past the rest, a new
connection is taken on probation and must prove a registered identity (`console.hello` with its
token) in its first line, within `line_timeout_s`. The operator socket is another socket with
limits of its own. Idle connections cannot lock the others out; refusals are logged at a bounded
rate (`refusal_log`).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import json
import logging
import os
import socket
import stat
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from svc_console.broker import errors, jsonrpc
from svc_console.broker.agent_access import AgentAccess, Identity, peer_of
from svc_console.broker.deciders import Peer
from svc_console.broker.follow import Subscription
from svc_console.broker.limits import Limits
from svc_console.broker.methods import Methods, Operators, Passphrase, Role
from svc_console.broker.peer_shares import PeerKey, PeerShares
from svc_console.broker.refusal_log import RefusalLog
from svc_console.broker.service import Broker
from svc_console.broker.socket_folder import prepare_folder
from svc_console.config.paths import MAX_SOCKET_PATH
from svc_console.core.models import Submitter

log = logging.getLogger(__name__)
DEFAULT_LIMITS = Limits()
# The notice a connection closed for idleness gets last: it asked nothing that was not answered,
# so a client may connect again and send what it was about to send.
IDLE_NOTICE = "console.closing"


@dataclass(eq=False)  # identity, not value: connections live in a set
class _Connection:
    writer: asyncio.StreamWriter
    slots: asyncio.Semaphore  # one per line being answered
    peers: PeerShares
    peer: Peer | None = None
    client: str | None = None
    waits: int = 0
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    tasks: set[asyncio.Task[None]] = field(default_factory=set)
    _identity: Identity | None = None
    counted: PeerKey | None = None  # where this connection is counted, once admitted
    # Admitted into the room kept for registered agents: its first line must prove one.
    probation: bool = False
    subscription: Subscription | None = None  # following the queue (`approvals.follow`)
    submitters: dict[bool, Submitter | None] = field(default_factory=dict)
    send: Callable[[_Connection, dict[str, Any]], Awaitable[None]] = field(kw_only=True)
    # (loop time) since when nothing was asked or answered: a bare newline asks nothing
    quiet_since: float = field(default_factory=lambda: asyncio.get_running_loop().time())

    def stir(self, *_: object) -> None:
        self.quiet_since = asyncio.get_running_loop().time()

    async def push(self, message: dict[str, Any]) -> None:
        """A notification nobody asked for on this connection (a change to a followed queue)."""
        await self.send(self, message)

    def cut_off(self) -> None:
        # Abort, not close: close() would wait to flush to a peer that does not read.
        self.writer.transport.abort()

    def unfollow(self) -> None:
        if self.subscription is not None:
            self.subscription.stop()

    @property
    def identity(self) -> Identity | None:
        return self._identity

    @identity.setter
    def identity(self, identity: Identity | None) -> None:
        """Speaking for an agent moves the connection to that agent's count: refused (Busy)
        when the agent already holds its share."""
        key = PeerShares.key(self.peer, identity)
        if self.counted is not None and key != self.counted:
            if self.peers.full(key):
                raise errors.Busy(
                    f"too many connections for agent {identity.name if identity else ''}"
                    f" (at most {self.peers.cap})"
                )
            self.peers.give_back(self.counted)
            self.peers.take(key)
            self.counted = key
        self._identity = identity


class ApprovalSocket:
    def __init__(
        self,
        broker: Broker,
        path: Path,
        *,
        role: Role,
        access: AgentAccess,
        passphrase: Passphrase | None = None,
        operators: Operators | None = None,
        home: Path | None = None,
        limits: Limits = DEFAULT_LIMITS,
        operator_uids: frozenset[int] = frozenset(),
    ):
        self.broker, self.path, self.role, self.limits = broker, path, role, limits
        self.access, self.home = access, home
        self.operator_uids = operator_uids if role == Role.operator else frozenset()
        self.methods = Methods(
            broker, limits, role, access, passphrase, operators, bool(self.operator_uids)
        )
        self._server: asyncio.AbstractServer | None = None
        self._connections: set[_Connection] = set()
        self._peers = PeerShares(limits.max_connections_per_peer)
        self._refusals = RefusalLog(log)
        self._bound: tuple[int, int] | None = None  # (device, inode) of the file bound

    async def start(self) -> None:
        if len(os.fsencode(self.path)) > MAX_SOCKET_PATH:
            raise OSError(f"socket path too long for a Unix socket: {self.path}")
        settings = self.access.settings
        opened = (self.role == Role.agents and settings.opened) or bool(self.operator_uids)
        if self.operator_uids and not hasattr(socket, "SO_PEERCRED"):
            # Without the peer's uid, a socket opened to some uids would be open to all.
            raise OSError("[operator] uids needs a kernel that names a socket peer's uid (Linux)")
        prepare_folder(self.path.parent, home=self.home, opened=opened)
        if self.path.exists() or self.path.is_symlink():
            if not stat.S_ISSOCK(self.path.lstat().st_mode):
                raise OSError(f"{self.path} exists and is not a socket; refusing to replace it")
            if await _answers(self.path):
                raise OSError(f"another broker is listening on {self.path}")
            self.path.unlink()  # a socket nobody listens on: left by a broker that died
        listener = self._bind()
        try:
            # A backlog as deep as the connections allowed: with asyncio's default (100), agents
            # connecting at once beyond it were told they were connected, then found it dead.
            self._server = await asyncio.start_unix_server(
                self._serve,
                sock=listener,
                limit=self.limits.max_line_bytes,
                backlog=self.limits.max_connections,
            )
        except BaseException:
            listener.close()
            self._unlink_own()
            raise
        _quiet_accept_failures(self._refusals)
        if not opened:
            self.path.chmod(0o600)
        elif settings.uids or self.operator_uids:
            self.path.chmod(0o666)  # listed uids may connect; the peer check refuses the rest
        else:
            os.chown(self.path, -1, settings.gid)
            self.path.chmod(0o660)

    def _bind(self) -> socket.socket:
        """A listening socket bound at the path, which must be free: bound here, not by asyncio,
        which removes any socket file it finds there first (another broker's, started since the
        check above). What was bound is remembered, so that only it is ever unlinked."""
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old_umask = os.umask(0o177)  # the socket is born 0600: no window where others may connect
        try:
            listener.bind(str(self.path))
        except OSError as exc:
            listener.close()
            if exc.errno == errno.EADDRINUSE:
                raise OSError(f"{self.path} was taken while this broker started") from None
            raise
        finally:
            os.umask(old_umask)
        made = self.path.lstat()
        self._bound = (made.st_dev, made.st_ino)
        return listener

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            for connection in list(self._connections):
                connection.unfollow()
                connection.writer.close()
                for task in list(connection.tasks):
                    task.cancel()
            with contextlib.suppress(Exception):
                await self._server.wait_closed()
            self._server = None
        self._unlink_own()

    def _unlink_own(self) -> None:
        """Remove the socket file this broker bound, and nothing else: a start refused for a
        file or another broker's socket at the path leaves it as it was."""
        bound, self._bound = self._bound, None
        if bound is None:
            return
        with contextlib.suppress(FileNotFoundError):
            found = self.path.lstat()
            if (found.st_dev, found.st_ino) == bound:
                self.path.unlink()

    def _admission(self, peer: Peer | None) -> errors.BrokerError | None:
        """Why a new connection is refused (logged, at a bounded rate), or None."""
        who = f"pid {peer.pid} uid {peer.uid}" if peer is not None else "a peer"
        reason = self._refusal(peer)
        if reason is not None:
            self._refusals.refused("unauthorised", f"{self.role} socket refused {who}: {reason}")
            return errors.NotAuthorised(reason)
        if len(self._connections) >= self.limits.max_connections:
            message = f"too many connections (at most {self.limits.max_connections})"
        elif self._peers.full(PeerShares.key(peer, None)):
            uid = f"uid {peer.uid}" if peer is not None else "one peer"
            message = f"too many connections from {uid} (at most {self._peers.cap})"
        else:
            return None
        self._refusals.refused("busy", f"{self.role} socket refused {who}: {message}")
        return errors.Busy(message)

    def _on_probation(self) -> bool:
        """Whether a connection admitted now takes the room kept for registered agents."""
        unproven_room = self.limits.max_connections - self.limits.reserved_for_registered
        return self._peers.unproven >= unproven_room

    def _refusal(self, peer: Peer | None) -> str | None:
        """Why this peer may not use this socket, or None."""
        if self.role == Role.agents:
            return self.access.refusal(peer)
        if peer is not None and peer.uid != os.getuid() and peer.uid not in self.operator_uids:
            if self.operator_uids:
                return (
                    f"uid {peer.uid} may not use the operator socket: [operator] uids names who may"
                )
            return f"the operator socket accepts only uid {os.getuid()}, the console's owner"
        return None

    # -- one connection -----------------------------------------------------------------------

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        limits = self.limits
        writer.transport.set_write_buffer_limits(high=limits.write_buffer_bytes)
        peer = peer_of(writer.get_extra_info("socket"))
        connection = _Connection(
            writer,
            asyncio.Semaphore(limits.max_pending_per_connection),
            self._peers,
            peer=peer,
            send=self._send,
        )
        refused = self._admission(peer)
        if refused is not None:
            await self._send(connection, jsonrpc.error_reply(None, refused))
            writer.close()
            return
        connection.probation = self._on_probation()
        self._connections.add(connection)
        connection.counted = PeerShares.key(peer, None)
        self._peers.take(connection.counted)
        try:
            await self._read_lines(connection, reader)
        except (ConnectionError, OSError):
            pass  # the peer went away, or a reply could not be written: the connection ends
        finally:
            self._connections.discard(connection)
            self._peers.give_back(connection.counted)
            connection.unfollow()
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
            first = await self._next_byte(connection, reader)
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
            if connection.probation and line.strip():
                if not await self._proves_registered(connection, line):
                    return
                continue
            if line.strip():
                connection.stir()
                # Past this many unanswered lines the connection is not read: backpressure.
                await connection.slots.acquire()
                task = asyncio.create_task(self._answer(connection, line))
                connection.tasks.add(task)
                task.add_done_callback(connection.tasks.discard)
                task.add_done_callback(lambda _: connection.slots.release())
                task.add_done_callback(connection.stir)

    async def _next_byte(self, connection: _Connection, reader: asyncio.StreamReader) -> bytes:
        """The next byte, or b"" when the peer closed or the connection sat idle too long: nothing
        asked or answered for `idle_timeout_s` and nothing in flight (a long spend.wait is not
        idleness)."""
        loop = asyncio.get_running_loop()
        while True:
            # On probation, the first line is owed within a line's time.
            patience = self.limits.line_timeout_s if connection.probation else None
            patience = patience or self.limits.idle_timeout_s
            left = connection.quiet_since + patience - loop.time()
            try:
                async with asyncio.timeout(max(0.0, left)):
                    return await reader.read(1)
            except TimeoutError:
                if connection.tasks or connection.subscription is not None:
                    # A call under way (a long spend.wait), or a console following the queue,
                    # is not idleness.
                    connection.stir()
                if connection.quiet_since + patience > loop.time():
                    continue
                seconds = f"{patience:g}"
                await self._send(
                    connection,
                    {
                        "jsonrpc": "2.0",
                        "method": IDLE_NOTICE,
                        "params": {
                            "reason": "idle",
                            "message": f"closed after {seconds} s with nothing asked; "
                            "connect again to go on",
                        },
                    },
                )
                return b""

    async def _proves_registered(self, connection: _Connection, line: bytes) -> bool:
        """A connection on probation: its first line is answered only if it is `console.hello`,
        and it stays only if that bound a registered agent (a token, or a registered uid)."""
        if _method_of(line) == "console.hello":
            await self._answer(connection, line)
            identity = connection.identity
            if identity is not None and identity.verified:
                connection.probation = False
                return True
        message = (
            "the socket is full but for the room kept for registered agents: say console.hello"
            " with an agent's token first"
        )
        await self._send(connection, jsonrpc.error_reply(None, errors.Busy(message)))
        return False

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
                    async with asyncio.timeout(self.limits.write_timeout_s):
                        await writer.drain()
            except (TimeoutError, ConnectionError, OSError):
                # Abort, not close: close() would wait to flush to a peer that does not read.
                writer.transport.abort()


def _quiet_accept_failures(refusals: RefusalLog) -> None:
    """asyncio logs every failed accept (out of file descriptors) with a traceback, and retries
    each second: under a flood that filled every rotated log in seconds. One line at a bounded
    rate says it all."""
    loop = asyncio.get_running_loop()
    previous = loop.get_exception_handler()
    if getattr(previous, "quiets_accept_failures", False):
        return

    def handler(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        if str(context.get("message", "")).startswith("socket.accept() out of system resource"):
            refusals.refused(
                "accept failures", f"cannot accept a connection: {context.get('exception')}"
            )
            return
        if previous is not None:
            previous(loop, context)
        else:
            loop.default_exception_handler(context)

    handler.quiets_accept_failures = True  # type: ignore[attr-defined]
    loop.set_exception_handler(handler)


def _method_of(line: bytes) -> object:
    try:
        message = json.loads(line)
    except ValueError:
        return None
    return message.get("method") if isinstance(message, dict) else None


async def _answers(path: Path) -> bool:
    try:
        _reader, writer = await asyncio.open_unix_connection(str(path))
    except OSError:
        return False
    writer.close()
    return True
