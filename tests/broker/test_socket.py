"""The approval socket's framing and errors: JSON-RPC 2.0, one object per line."""

from __future__ import annotations

import asyncio
import json
import stat

import pytest

from svc_console.agent import AgentError, AsyncAgent


async def raw_exchange(path, payload: bytes) -> dict:
    reader, writer = await asyncio.open_unix_connection(str(path))
    writer.write(payload)
    await writer.drain()
    line = await asyncio.wait_for(reader.readline(), 5)
    writer.close()
    return json.loads(line)


def count_requests(runtime) -> int:
    return runtime.ledger.db.execute("SELECT count(*) FROM requests").fetchone()[0]


async def test_malformed_line_gets_parse_error_and_others_keep_working(runtime):
    async with AsyncAgent("steady", runtime.paths.socket) as steady:
        reader, writer = await asyncio.open_unix_connection(str(runtime.paths.socket))
        writer.write(b'{"jsonrpc": "2.0", "id": 1, "method": \n')
        await writer.drain()
        reply = json.loads(await asyncio.wait_for(reader.readline(), 5))
        assert reply["id"] is None
        assert reply["error"]["code"] == -32700
        assert reply["error"]["data"]["reason"] == "parse_error"
        # The same connection still answers a good line, and so does another agent's.
        writer.write(b'{"jsonrpc":"2.0","id":2,"method":"console.hello","params":{}}\n')
        await writer.drain()
        assert json.loads(await reader.readline())["result"]["server"] == "svc-console"
        writer.close()
        hello = await steady.call("console.hello", {})
        assert hello["protocol"] == 2
    assert count_requests(runtime) == 0


@pytest.mark.parametrize(
    ("payload", "code", "reason"),
    [
        (b"\xff\xfe not utf-8\n", -32700, "parse_error"),
        (b"[1, 2]\n", -32600, "invalid_request"),
        (b'{"id": 1, "method": "spend.get"}\n', -32600, "invalid_request"),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "spend.steal"}\n', -32601, "unknown_method"),
        (
            b'{"jsonrpc": "2.0", "id": 1, "method": "spend.get", "params": [1]}\n',
            -32602,
            "invalid_params",
        ),
        (
            b'{"jsonrpc": "2.0", "id": 1, "method": "spend.get",'
            b' "params": {"request_id": "req_x"}}\n',
            -32001,
            "unknown_request",
        ),
        (
            b'{"jsonrpc": "2.0", "id": 1, "method": "approvals.list", "params": {}}\n',
            -32002,
            "not_authorised",
        ),
    ],
)
async def test_bad_messages_get_clear_errors_and_change_nothing(runtime, payload, code, reason):
    reply = await raw_exchange(runtime.paths.socket, payload)
    assert reply["error"]["code"] == code
    assert reply["error"]["data"]["reason"] == reason
    assert reply["error"]["message"]
    assert count_requests(runtime) == 0


@pytest.mark.parametrize(
    ("params", "mentions"),
    [
        (
            {
                "agent": "a b",
                "kind": "market_call",
                "inputs": {},
                "purpose": "p",
                "endpoint_id": "e",
            },
            "agent",
        ),
        ({"agent": "a", "kind": "steal", "inputs": {}, "purpose": "p"}, "kind"),
        ({"agent": "a", "kind": "market_call", "inputs": {}, "purpose": "p"}, "endpoint_id"),
        (
            {"agent": "a", "kind": "market_call", "inputs": [], "purpose": "p", "endpoint_id": "e"},
            "inputs",
        ),
        (
            {"agent": "a", "kind": "market_call", "inputs": {}, "purpose": "", "endpoint_id": "e"},
            "purpose",
        ),
        (
            {
                "agent": "a",
                "kind": "market_call",
                "inputs": {},
                "purpose": "p",
                "endpoint_id": "e",
                "max_usdc": "-1",
            },
            "max_usdc",
        ),
        (
            {
                "agent": "a",
                "kind": "market_call",
                "inputs": {},
                "purpose": "p",
                "endpoint_id": "e",
                "max_usdc": "0.0000001",
            },
            "max_usdc",
        ),
        (
            {
                "agent": "a",
                "kind": "market_call",
                "inputs": {},
                "purpose": "p",
                "endpoint_id": "e",
                "surprise": 1,
            },
            "surprise",
        ),
    ],
)
async def test_invalid_submit_params_name_the_problem(runtime, params, mentions):
    async with AsyncAgent("bot", runtime.paths.socket) as agent:
        with pytest.raises(AgentError) as refused:
            await agent.call("spend.submit", params)
    assert refused.value.reason == "invalid_params"
    assert mentions in refused.value.message
    assert count_requests(runtime) == 0


async def test_oversized_line_is_refused_with_too_large(runtime):
    limit = runtime.socket.limits.max_line_bytes
    reply = await raw_exchange(runtime.paths.socket, b'{"x": "' + b"a" * (limit + 10) + b'"}\n')
    assert reply["error"]["data"]["reason"] == "too_large"
    async with AsyncAgent("bot", runtime.paths.socket) as agent:
        assert (await agent.call("console.hello", {}))["limits"]["max_line_bytes"] == limit


async def test_notification_gets_no_answer(runtime):
    reader, writer = await asyncio.open_unix_connection(str(runtime.paths.socket))
    writer.write(b'{"jsonrpc":"2.0","method":"console.hello","params":{}}\n')
    writer.write(b'{"jsonrpc":"2.0","id":"second","method":"console.hello","params":{}}\n')
    await writer.drain()
    reply = json.loads(await asyncio.wait_for(reader.readline(), 5))
    assert reply["id"] == "second"
    writer.close()


async def test_hello_describes_service_limits_and_methods(runtime):
    async with AsyncAgent("bot", runtime.paths.socket) as agent:
        hello = agent.hello_info
    assert hello["service"]["sandbox"] is True
    assert hello["service"]["base_url"].startswith("http://127.0.0.1:")
    assert "spend.submit" in hello["methods"] and "approvals.approve" not in hello["methods"]
    assert hello["limits"]["max_waits_per_connection"] > 0


async def test_operator_methods_are_served_only_on_the_operator_socket(runtime):
    from helpers import operator

    async with AsyncAgent("op", runtime.paths.socket) as agent:
        for method in ("approvals.list", "approvals.approve", "approvals.deny", "agents.sync"):
            with pytest.raises(AgentError) as refused:
                await agent.call(method, {"request_id": "req_x", "reason": "r"})
            assert refused.value.reason == "not_authorised"
            assert "only on the operator socket" in refused.value.message
    async with operator(runtime) as line:
        assert line.hello_info["socket"] == "operator"
        assert "approvals.approve" in line.hello_info["methods"]
        assert "spend.submit" not in line.hello_info["methods"]
        assert await line.call("approvals.list", {}) == []
        with pytest.raises(AgentError) as refused:
            await line.call("spend.submit", {"agent": "op", "kind": "market_call"})
        assert refused.value.reason == "not_authorised"
    assert count_requests(runtime) == 0
    assert stat.S_IMODE(runtime.paths.operator_socket.stat().st_mode) == 0o600
