"""Slow and hostile clients on the approval socket: half lines that stall, very slow writers,
clients that never read, too many connections, waits or lines at once. None of them may hold up
another agent; each limit is announced by `console.hello`.

A second socket with tight limits is served beside the runtime's, on the same broker, so each limit
is reached in a few lines. No timing is asserted: only who got an answer and who was let go.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
from dataclasses import fields
from typing import Any

import pytest
from helpers import eventually

from svc_console.agent import Agent, AgentError, AsyncAgent
from svc_console.broker.limits import Limits, within_open_files
from svc_console.broker.methods import Role
from svc_console.broker.socket_server import ApprovalSocket
from svc_console.config.agent_registry import AgentRegistry

HELLO = b'{"jsonrpc":"2.0","id":"hi","method":"console.hello"}\n'
TIGHT = Limits(
    max_line_bytes=4096,
    max_connections=6,
    max_pending_per_connection=8,
    max_waits_per_connection=2,
    line_timeout_s=0.5,
    write_buffer_bytes=16 * 1024,
    write_timeout_s=0.5,
)


# Idle connections are closed fast, and one peer may hold only a few.
IDLE = Limits(max_connections=8, max_connections_per_peer=3, idle_timeout_s=0.3)


async def beside(runtime: Any, limits: Limits, name: str) -> ApprovalSocket:
    socket = ApprovalSocket(
        runtime.broker,
        runtime.paths.home / name,
        role=Role.agents,
        access=runtime.access,
        home=runtime.paths.home,
        limits=limits,
    )
    await socket.start()
    return socket


@pytest.fixture
async def tight(runtime: Any) -> Any:
    socket = await beside(runtime, TIGHT, "tight.sock")
    yield socket
    await socket.stop()


@pytest.fixture
async def idle(runtime: Any) -> Any:
    socket = await beside(runtime, IDLE, "idle.sock")
    yield socket
    await socket.stop()


async def raw(socket: ApprovalSocket) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    return await asyncio.open_unix_connection(str(socket.path), limit=16 * 1024 * 1024)


async def reply(reader: asyncio.StreamReader) -> dict[str, Any]:
    line = await asyncio.wait_for(reader.readline(), 10)
    assert line, "the broker closed the connection"
    return json.loads(line)


async def closed(reader: asyncio.StreamReader) -> bool:
    """Whether the broker has closed this connection (what it still sends first is skipped)."""
    try:
        while await asyncio.wait_for(reader.readline(), 10):
            pass
    except ConnectionError:
        pass
    return True


async def bystander_is_answered(socket: ApprovalSocket) -> None:
    async with AsyncAgent("bystander", socket.path) as agent:
        assert (await agent.call("console.hello", {}))["server"] == "svc-console"
        with pytest.raises(AgentError) as unknown:
            await agent.get("req_nobody")
        assert unknown.value.reason == "unknown_request"


async def test_hello_announces_every_limit(runtime, tight):
    async with AsyncAgent("bot", runtime.paths.socket) as agent:
        announced = agent.hello_info["limits"]
    assert announced == within_open_files()[0].describe()  # the limit the console raised
    assert set(announced) == {f.name for f in fields(Limits)}
    async with AsyncAgent("bot", tight.path) as agent:
        assert agent.hello_info["limits"] == TIGHT.describe()


async def test_a_half_line_that_stalls_is_cut_off_and_holds_up_nobody(tight):
    reader, writer = await raw(tight)
    writer.write(b'{"jsonrpc":"2.0","id":1,"method":"console.he')
    await writer.drain()
    await bystander_is_answered(tight)  # while the half line waits
    error = (await reply(reader))["error"]
    assert error["code"] == -32008 and error["data"]["reason"] == "line_timeout"
    assert "0.5 s" in error["message"]
    assert await closed(reader)
    await eventually(lambda: len(tight._connections) == 0)
    await bystander_is_answered(tight)


async def test_a_slow_writer_is_answered_in_its_turn(runtime):
    """A line written a few bytes at a time, well within the line timeout, is answered; agents
    on other connections are answered meanwhile."""
    slow_reader, slow_writer = await asyncio.open_unix_connection(str(runtime.paths.socket))
    async with AsyncAgent("quick", runtime.paths.socket) as quick:
        for start in range(0, len(HELLO), 5):
            slow_writer.write(HELLO[start : start + 5])
            await slow_writer.drain()
            assert (await quick.call("console.hello", {}))["server"] == "svc-console"
            await asyncio.sleep(0.01)
    assert (await reply(slow_reader))["id"] == "hi"
    slow_writer.close()


async def test_half_a_line_then_hanging_up_is_dropped(tight):
    _reader, writer = await raw(tight)
    writer.write(b'{"jsonrpc":"2.0","id":1,"method":"spend.submit","params":{"agent":"a"')
    await writer.drain()
    writer.close()
    await eventually(lambda: len(tight._connections) == 0)
    await bystander_is_answered(tight)


async def test_a_client_that_never_reads_is_let_go_and_holds_up_nobody(tight):
    # A bare socket, never read (an asyncio stream would read into its own buffer behind our
    # back), sending far more requests than the kernel and the broker will buffer answers for.
    loop = asyncio.get_running_loop()
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.setblocking(False)
    await loop.sock_connect(sock, str(tight.path))
    flood = asyncio.create_task(loop.sock_sendall(sock, HELLO * 20_000))
    most_tasks = 0

    def drained_or_gone() -> bool:
        nonlocal most_tasks
        for connection in tight._connections:
            most_tasks = max(most_tasks, len(connection.tasks))
            # Replies held for it never grow past the high-water mark and one reply.
            assert connection.writer.transport.get_write_buffer_size() <= 17 * 1024
        return not tight._connections

    await bystander_is_answered(tight)
    await eventually(drained_or_gone, timeout=30)
    assert most_tasks <= TIGHT.max_pending_per_connection
    await bystander_is_answered(tight)
    with contextlib.suppress(OSError):
        await flood  # the broker hung up on it
    sock.close()


async def test_unanswered_lines_are_bounded_and_all_answered_in_the_end(tight):
    """More lines at once than a connection may have unanswered: the socket stops reading that
    connection until answers go out, and every line is still answered."""
    reader, writer = await raw(tight)
    lines = [
        json.dumps({"jsonrpc": "2.0", "id": n, "method": "spend.get", "params": {}}).encode()
        for n in range(200)
    ]
    writer.write(b"\n".join(lines) + b"\n")
    await writer.drain()
    ids = sorted([(await reply(reader))["id"] for _ in range(200)])
    assert ids == list(range(200))
    writer.close()


async def test_connections_beyond_the_limit_are_refused_and_a_freed_slot_is_reused(tight):
    held = [await raw(tight) for _ in range(TIGHT.max_connections)]
    await eventually(lambda: len(tight._connections) == TIGHT.max_connections)
    reader, _writer = await raw(tight)
    error = (await reply(reader))["error"]
    assert error["data"]["reason"] == "busy" and "too many connections" in error["message"]
    assert await closed(reader)
    # Those already connected are still served.
    held[0][1].write(HELLO)
    assert (await reply(held[0][0]))["result"]["server"] == "svc-console"
    held[-1][1].close()
    await eventually(lambda: len(tight._connections) == TIGHT.max_connections - 1)
    await bystander_is_answered(tight)
    for _reader, writer in held:
        writer.close()


async def test_waits_per_connection_are_limited_and_others_may_still_wait(runtime, tight):
    async with (
        AsyncAgent("waiter", tight.path) as waiter,
        AsyncAgent("waiter", tight.path) as other,
    ):
        ticket = await waiter.submit(
            endpoint_id="ep_websearch_basic", inputs={"query": "x"}, purpose="wait for me"
        )
        request_id = ticket["request_id"]
        await eventually(lambda: runtime.broker.get(request_id).state == "pending")
        waits = [asyncio.create_task(waiter.wait(request_id, 30)) for _ in range(2)]
        await eventually(lambda: sum(c.waits for c in tight._connections) == 2)
        with pytest.raises(AgentError) as refused:
            await waiter.wait(request_id, 30)
        assert refused.value.reason == "busy"
        assert f"at most {TIGHT.max_waits_per_connection} waits" in refused.value.message
        # The limit is per connection: another connection of the agent waits, and the first may
        # still ask.
        other_wait = asyncio.create_task(other.wait(request_id, 30))
        assert (await waiter.get(request_id))["state"] == "pending"
        await waiter.cancel(request_id)
        for finished in await asyncio.gather(*waits, other_wait):
            assert finished["state"] == "cancelled"


async def test_an_oversized_line_is_refused_and_the_connection_goes_on(tight):
    reader, writer = await raw(tight)
    limit = TIGHT.max_line_bytes
    # Exactly the limit, newline included: answered. One byte more: refused, and skipped.
    padded = HELLO[:-2] + b" " * (limit - len(HELLO)) + b"}\n"
    assert len(padded) == limit
    writer.write(padded)
    assert (await reply(reader))["result"]["server"] == "svc-console"
    for size in (limit + 1, limit * 3, limit * 50):
        writer.write(b'{"x":"' + b"a" * size + b'"}\n')
        error = (await reply(reader))["error"]
        assert error["data"]["reason"] == "too_large" and str(limit) in error["message"]
        writer.write(HELLO)
        assert (await reply(reader))["id"] == "hi"
    # A long line that has not ended yet is refused once, however much more of it comes.
    writer.write(b"b" * limit * 3)
    await writer.drain()
    assert (await reply(reader))["error"]["data"]["reason"] == "too_large"
    writer.write(b"b" * limit * 3 + b"\n" + HELLO)
    assert (await reply(reader))["id"] == "hi"
    writer.close()


async def test_deep_nesting_is_refused_as_too_large(runtime):
    reader, writer = await asyncio.open_unix_connection(str(runtime.paths.socket))
    limits = runtime.socket.limits
    for depth in (limits.max_depth + 1, 5000):
        inputs = "[" * depth + "]" * depth
        writer.write(
            b'{"jsonrpc":"2.0","id":1,"method":"spend.submit","params":{"inputs":'
            + inputs.encode()
            + b"}}\n"
        )
        error = (await reply(reader))["error"]
        assert error["data"]["reason"] == "too_large"
        assert f"at most {limits.max_depth} levels" in error["message"]
    writer.close()


async def test_an_idle_connection_is_closed_with_a_notice_and_newlines_do_not_keep_it(idle):
    # A plain socket: a newline written after the broker closed fails alone, and what the
    # broker sent before closing is still read (a stream's reader would raise the write's error).
    loop = asyncio.get_running_loop()
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.setblocking(False)
        await loop.sock_connect(sock, str(idle.path))
        received = b""
        while b"\n" not in received:  # a bare newline now and then asks nothing
            with contextlib.suppress(OSError):
                await loop.sock_sendall(sock, b"\n")
            with contextlib.suppress(TimeoutError, ConnectionError):
                received += await asyncio.wait_for(loop.sock_recv(sock, 65536), 0.05)
        line, _, after = received.partition(b"\n")
        notice = json.loads(line)
        assert notice["method"] == "console.closing" and notice["params"]["reason"] == "idle"
        assert "0.3 s" in notice["params"]["message"]
        assert "id" not in notice and after == b""
        with contextlib.suppress(ConnectionError):  # then the end, and nothing more
            assert await asyncio.wait_for(loop.sock_recv(sock, 65536), 10) == b""
    await eventually(lambda: len(idle._connections) == 0 and not idle._peers.held)


async def test_a_long_wait_is_not_idleness_and_the_clients_connect_again_by_themselves(
    runtime, idle
):
    async with AsyncAgent("patient", idle.path) as agent:
        ticket = await agent.submit(
            endpoint_id="ep_websearch_basic", inputs={"query": "x"}, purpose="wait for me"
        )
        request_id = ticket["request_id"]
        await eventually(lambda: runtime.broker.get(request_id).state == "pending")
        # Five idle timeouts long, in flight all along: answered, not cut off.
        waited = await agent.wait(request_id, 1.5)
        assert waited["state"] == "pending"
        first = agent._reader_task
        await eventually(lambda: first.done())  # now idle: closed
        assert (await agent.get(request_id))["state"] == "pending"  # connected again
        assert agent._reader_task is not first
    # The blocking client runs in a thread of its own, as in an agent's program.
    blocking = Agent("patient", idle.path)
    await asyncio.to_thread(blocking.connect)
    sock = blocking._sock
    await eventually(blocking._hung_up)
    assert (await asyncio.to_thread(blocking.get, request_id))["id"] == request_id
    assert blocking._sock is not sock
    blocking.close()


def hello(name: str, token: str | None = None, request_id: int = 1) -> bytes:
    params = {"agent": name} if token is None else {"agent": name, "token": token}
    line = {"jsonrpc": "2.0", "id": request_id, "method": "console.hello", "params": params}
    return json.dumps(line).encode() + b"\n"


async def test_one_uid_and_one_registered_agent_hold_at_most_their_share(runtime, idle):
    held = [await raw(idle) for _ in range(IDLE.max_connections_per_peer)]
    await eventually(lambda: len(idle._connections) == IDLE.max_connections_per_peer)
    # A fourth from the same uid, whatever process it comes from: refused.
    reader, _writer = await raw(idle)
    error = (await reply(reader))["error"]
    assert error["data"]["reason"] == "busy"
    assert f"too many connections from uid {os.getuid()} (at most 3)" in error["message"]
    assert await closed(reader)
    # Names it invents move nothing out of the uid's share.
    for index, (held_reader, held_writer) in enumerate(held):
        held_writer.write(hello(f"invented-{index}"))
        assert (await reply(held_reader))["result"]["agent"]["verified"] is False
    reader, _writer = await raw(idle)
    assert (await reply(reader))["error"]["data"]["reason"] == "busy"
    # A registered agent proving its name moves its connection to its own share, freeing the
    # uid's; that share is bounded too.
    token = AgentRegistry(runtime.paths.agent_registry).add("crowd")
    for index, (held_reader, held_writer) in enumerate(held):
        held_writer.write(hello("crowd", token, request_id=2))
        assert (await reply(held_reader))["result"]["agent"]["verified"] is True, index
    extra_reader, extra_writer = await raw(idle)
    extra_writer.write(hello("crowd", token))
    error = (await reply(extra_reader))["error"]
    assert error["data"]["reason"] == "busy"
    assert "too many connections for agent crowd (at most 3)" in error["message"]
    # The connection goes on in its uid's share, speaking for no one; another agent is served.
    await bystander_is_answered(idle)
    for _reader, writer in [*held, (extra_reader, extra_writer)]:
        writer.close()
    await eventually(lambda: not idle._peers.held)


# Two of six connections kept for registered agents; one uid may take them all otherwise.
RESERVED = Limits(max_connections=6, max_connections_per_peer=6, reserved_for_registered=2)


@pytest.fixture
async def reserved(runtime: Any) -> Any:
    socket = await beside(runtime, RESERVED, "reserved.sock")
    yield socket
    await socket.stop()


async def test_the_room_kept_for_registered_agents_takes_only_them(runtime, reserved):
    token = AgentRegistry(runtime.paths.agent_registry).add("registered-bot")
    general = RESERVED.max_connections - RESERVED.reserved_for_registered
    crowd = [await raw(reserved) for _ in range(general)]
    for index, (reader, writer) in enumerate(crowd):
        writer.write(hello(f"unregistered-{index}"))
        assert (await reply(reader))["result"]["agent"]["verified"] is False
    # Past the general room, a connection whose first line is not a hello is let go with it
    # unanswered; one whose hello proves no registered agent is let go after it.
    get = b'{"jsonrpc":"2.0","id":7,"method":"spend.get","params":{"request_id":"r"}}\n'
    for first, answered in ((get, False), (hello("yet-another"), True)):
        reader, writer = await raw(reserved)
        writer.write(first)
        if answered:
            assert (await reply(reader))["result"]["agent"]["verified"] is False
        error = (await reply(reader))["error"]
        assert error["data"]["reason"] == "busy"
        assert "room kept for registered agents" in error["message"]
        assert await closed(reader)
    # A registered agent proving its name is served there.
    reader, writer = await raw(reserved)
    writer.write(hello("registered-bot", token))
    assert (await reply(reader))["result"]["agent"] == {"name": "registered-bot", "verified": True}
    writer.write(b'{"jsonrpc":"2.0","id":8,"method":"spend.get","params":{"request_id":"r"}}\n')
    assert (await reply(reader))["error"]["data"]["reason"] == "unknown_request"
    for _reader, held_writer in [*crowd, (reader, writer)]:
        held_writer.close()
    await eventually(lambda: not reserved._peers.held)


@pytest.mark.parametrize("open_files", [64, 300, 1024, 20000, 1_000_000])
def test_connection_limits_come_from_the_file_limit_and_the_operator_keeps_a_share(open_files):
    agents, operator = within_open_files(open_files)
    assert agents.max_connections + operator.max_connections <= max(16, open_files // 2)
    assert operator.max_connections >= 2
    assert agents.max_connections_per_peer < agents.max_connections
    assert agents.max_connections <= 4096


def test_the_soft_file_limit_is_raised_to_the_hard_one_within_bounds():
    import resource

    from svc_console.broker.limits import raise_open_files

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (256, hard))
        raised = raise_open_files(most=4096)
        expected = 4096 if hard == resource.RLIM_INFINITY else min(hard, 4096)
        assert raised == expected == resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def _full_listener(path) -> tuple[socket.socket, list[socket.socket]]:
    """A listening Unix socket whose queue of new connections is full: nothing accepted yet."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    listener.listen(1)
    queued = []
    while True:
        filler = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        filler.setblocking(False)
        try:
            filler.connect(str(path))
        except BlockingIOError:
            filler.close()
            return listener, queued
        queued.append(filler)


def test_an_agent_waits_for_room_in_a_full_queue_of_new_connections(tmp_path, monkeypatch):
    """A console whose queue of new connections is full answers a connection with EAGAIN at
    once: the agent's client tries again until there is room, as the flood test needs."""
    import threading
    import time as real_time
    from types import SimpleNamespace

    from svc_console import agent as agent_module

    path = tmp_path / "busy.sock"
    listener, queued = _full_listener(path)
    retried = threading.Event()

    def sleep(seconds: float) -> None:
        retried.set()
        real_time.sleep(seconds)

    monkeypatch.setattr(
        agent_module, "time", SimpleNamespace(monotonic=real_time.monotonic, sleep=sleep)
    )
    result: list[object] = []
    worker = threading.Thread(target=lambda: result.append(agent_module._connected(path, 10)))
    worker.start()
    try:
        assert retried.wait(10)  # refused once: the queue is full
        accepted = [listener.accept()[0] for _ in queued]  # room again
        worker.join(10)
        assert isinstance(result[0], socket.socket)
        result[0].close()
        for connection in [*accepted, *queued]:
            connection.close()
    finally:
        worker.join(10)
        listener.close()


async def test_an_async_agent_is_not_told_it_connected_while_the_queue_is_full(tmp_path):
    """asyncio's own connect takes EAGAIN on a Unix socket for a connection in progress and
    answers one that was never made; the async client waits for room, then really connects."""
    from svc_console.agent import _connected_async

    path = tmp_path / "busy.sock"
    listener, queued = _full_listener(path)
    connecting = asyncio.create_task(_connected_async(path))
    try:
        await asyncio.sleep(0)  # its first attempt is made and refused
        assert not connecting.done()
        accepted = [listener.accept()[0] for _ in queued]  # room again
        sock = await asyncio.wait_for(connecting, 10)
        sock.sendall(b"hello")
        peer = listener.accept()[0]
        assert peer.recv(5) == b"hello"  # a real connection: what it sent arrived
        for connection in [sock, peer, *accepted, *queued]:
            connection.close()
    finally:
        connecting.cancel()
        listener.close()
