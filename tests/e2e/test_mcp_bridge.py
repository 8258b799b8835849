"""`svc-console mcp` as an agent's host runs it: launched as a subprocess through the `mcp` SDK's
stdio client (and served over Streamable HTTP), against a console on the sandbox. Free tools are
answered at once; paid tools wait for the operator, who decides on the operator socket.

The bridge runs under a wrapper process, as under an agent's host: the console traces a request to
the process that ran the bridge, and this test (the operator) is not in that process's tree.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from decimal import Decimal
from typing import Any

import anyio
import httpx2
import pytest
from helpers import eventually
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from operator_support import operator_knowing

from svc_console.core.states import State

HOST = "import subprocess, sys; sys.exit(subprocess.call(sys.argv[1:]))"
BRIDGE = [sys.executable, "-c", HOST, sys.executable, "-m", "svc_console", "mcp"]
FREE = {"list_datasets", "search_datasets", "list_market_apis", "try_dataset"}
PAID = {"get_dataset", "svc_breed_agent", "merge_models", "call_market_api"}
MERGE_YAML = "merge_method: linear\nmodels:\n  - model: org/alpha\n  - model: org/beta\n"
SEARCH = {
    "endpoint_id": "ep_websearch_basic",
    "inputs": {"query": "heat pumps"},
    "purpose": "market sizing",
}


def bridge_env(runtime: Any, **extra: str) -> dict[str, str]:
    """All the bridge is given: where the console is. No credential of the marketplace."""
    return {"SVC_CONSOLE_HOME": str(runtime.paths.home), **extra}


@contextlib.asynccontextmanager
async def bridge(runtime: Any, *args: str) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(
        command=sys.executable,
        args=[*BRIDGE[1:], *args],
        env=bridge_env(runtime),
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
        await client.initialize()
        yield client


async def pending_one(runtime: Any) -> str:
    found = await eventually(lambda: runtime.broker.pending(10), timeout=20)
    assert len(found) == 1
    request = await eventually(
        lambda: (r := runtime.broker.get(found[0].id)).state == State.pending and r, timeout=20
    )
    return request.id


async def decide(runtime: Any, request_id: str, method: str, **params: Any) -> None:
    # Agents of this user are accepted: a decision over the socket needs the passphrase.
    async with operator_knowing(runtime) as line:
        await line.call(method, {"request_id": request_id, **params})


async def call_and_decide(
    runtime: Any,
    client: ClientSession,
    tool: str,
    arguments: dict,
    method: str,
    *,
    after: Callable[[list[str]], Awaitable[None]] | None = None,
    **decision: Any,
) -> tuple[str, Any, list[str]]:
    """Call a paid tool, decide its request on the operator socket while the call waits (then
    await `after` with the progress heard so far), and return the request id, the tool's result
    and the progress messages heard."""
    heard: list[str] = []
    results: list[Any] = []

    async def progress(done: float, total: float | None, message: str | None) -> None:
        heard.append(message or "")

    async def call() -> None:
        results.append(await client.call_tool(tool, arguments, progress_callback=progress))

    async with anyio.create_task_group() as group:
        group.start_soon(call)
        request_id = await pending_one(runtime)
        await eventually(lambda: any("waiting for the operator" in m for m in heard))
        assert not results  # still waiting for the operator
        await decide(runtime, request_id, method, **decision)
        if after is not None:
            await after(heard)
    return request_id, results[0], heard


def assert_no_secret(runtime: Any, *texts: str) -> None:
    for secret in runtime.market.secrets:
        for text in texts:
            assert secret not in text


async def test_tools_are_listed_with_schemas_and_a_free_tool_is_answered(runtime):
    async with bridge(runtime, "--agent", "mcp-bot") as client:
        listed = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert set(listed) == FREE | PAID | {"job_status"}
        for name in PAID:
            schema = listed[name].input_schema
            assert "purpose" in schema["required"], name
            assert "payment_signature" not in schema["properties"], name
            assert "USDC" in listed[name].description and "operator" in listed[name].description
        assert listed["list_datasets"].input_schema["properties"]["limit"]["maximum"] == 100
        answer = await client.call_tool("list_market_apis", {"domain_type": "A7", "limit": 2})
        assert answer.is_error is False
        assert len(answer.structured_content["apis"]) == 2
    assert runtime.broker.pending(10) == []  # a read is not queued
    reads = runtime.ledger.db.execute("SELECT data FROM events WHERE type = 'read'").fetchall()
    assert [json.loads(r[0])["tool"] for r in reads] == ["list_market_apis"]
    assert json.loads(reads[0][0])["agent"] == "mcp-bot"


async def test_a_paid_call_waits_for_the_operator_with_progress_then_returns_the_result(
    runtime, monkeypatch
):
    # The payment waits until the client has heard "executing": a state that can otherwise be
    # over before the bridge looks at the request again.
    heard_executing = anyio.Event()
    pay = runtime.market.wallet.pay

    async def held(order: Any) -> Any:
        await heard_executing.wait()
        return await pay(order)

    monkeypatch.setattr(runtime.market.wallet, "pay", held)

    async def release(heard: list[str]) -> None:
        await eventually(lambda: any(m.startswith("executing") for m in heard))
        heard_executing.set()

    async with bridge(runtime, "--agent", "mcp-bot") as client:
        request_id, result, heard = await call_and_decide(
            runtime, client, "call_market_api", SEARCH, "approvals.approve", after=release
        )
    assert result.is_error is False
    facts = result.structured_content
    assert facts["request_id"] == request_id and facts["state"] == "succeeded"
    assert Decimal(facts["charged_usdc"]) > 0 and facts["chain"] and facts["receipt"]
    assert any(m.startswith("waiting for the operator:") and "USDC to" in m for m in heard)
    assert any(m.startswith("executing") for m in heard)
    assert_no_secret(runtime, result.model_dump_json(), " ".join(heard))


async def test_a_denial_is_an_error_with_the_operators_words(runtime):
    async with bridge(runtime, "--agent", "mcp-bot") as client:
        _, result, _ = await call_and_decide(
            runtime, client, "call_market_api", SEARCH, "approvals.deny", reason="not this week"
        )
    assert result.is_error is True
    assert 'denied by the operator: "not this week"' in result.content[0].text
    assert result.structured_content["state"] == "denied"


@pytest.mark.parametrize(
    ("tool", "arguments", "price"),
    [
        ("get_dataset", {"dataset_id": "ds_news_headlines_2024"}, Decimal("0.25")),
        ("svc_breed_agent", {"target_task": "summarization"}, Decimal(10)),
        ("merge_models", {"config_yaml": MERGE_YAML}, Decimal(15)),
    ],
)
async def test_datasets_breeds_and_merges_are_governed_end_to_end(
    runtime, sandbox, tool, arguments, price
):
    typed = {"confirm_amount": str(price)} if price >= 10 else {}
    async with bridge(runtime, "--agent", "mcp-bot") as client:
        args = {**arguments, "purpose": f"try {tool}"}
        request_id, result, _ = await call_and_decide(
            runtime, client, tool, args, "approvals.approve", **typed
        )
        assert runtime.broker.get(request_id).estimate.amount_usdc == price
        assert result.is_error is False, result.content
        assert Decimal(result.structured_content["charged_usdc"]) == price
        if tool != "get_dataset":
            status = await client.call_tool("job_status", {"request_id": request_id})
            assert status.is_error is False
            assert status.structured_content["job"]["id"]


async def test_the_clients_cancellation_cancels_a_request_nothing_was_spent_on(runtime):
    async with bridge(runtime, "--agent", "mcp-bot") as client:
        waiting: list[str] = []
        with anyio.CancelScope() as scope:

            async def cancel_when_pending() -> None:
                waiting.append(await pending_one(runtime))
                scope.cancel()  # the client abandons the call: notifications/cancelled

            async with anyio.create_task_group() as group:
                group.start_soon(cancel_when_pending)
                await client.call_tool("call_market_api", SEARCH)
        await eventually(
            lambda: runtime.broker.get(waiting[0]).state == State.cancelled, timeout=20
        )
        # The bridge goes on serving.
        assert (await client.call_tool("list_datasets", {"limit": 1})).is_error is False


async def test_a_bad_paid_call_is_an_error_and_nothing_is_recorded(runtime):
    async with bridge(runtime, "--agent", "mcp-bot") as client:
        missing = await client.call_tool("call_market_api", {"endpoint_id": "x", "inputs": {}})
        assert missing.is_error and "purpose is required" in missing.content[0].text
        secret = runtime.market.secrets[0]
        leaked = await client.call_tool(
            "call_market_api", {**SEARCH, "inputs": {"query": f"use {secret}"}}
        )
        assert leaked.is_error and "does not send secrets" in leaked.content[0].text
        assert secret not in leaked.model_dump_json()
    assert runtime.ledger.db.execute("SELECT count(*) FROM requests").fetchone()[0] == 0


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


async def test_the_same_over_streamable_http_with_the_agents_token(runtime, tmp_path):
    from svc_console.config.agent_registry import AgentRegistry

    token = AgentRegistry(runtime.paths.agent_registry).add("http-bot")
    port = free_port()
    server = subprocess.Popen(
        [*BRIDGE, "--http", f"127.0.0.1:{port}"],
        env={**bridge_env(runtime, SVC_AGENT_TOKEN=token), "PATH": "/usr/bin:/bin"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,  # the wrapper and the bridge it runs, stopped together
    )
    url = f"http://127.0.0.1:{port}/mcp"
    try:

        async def up() -> bool:
            with contextlib.suppress(httpx2.HTTPError):
                async with httpx2.AsyncClient() as probe:
                    return (await probe.get(url)).status_code == 401
            return False

        await eventually_async(up)
        async with (
            httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30) as http,
            streamable_http_client(url, http_client=http) as (read, write),
            ClientSession(read, write) as client,
        ):
            await client.initialize()
            assert {t.name for t in (await client.list_tools()).tools} >= FREE | PAID
            request_id, result, _ = await call_and_decide(
                runtime, client, "call_market_api", SEARCH, "approvals.approve"
            )
            assert runtime.broker.get(request_id).agent == "http-bot"
            assert runtime.broker.get(request_id).agent_verified is True
            assert result.is_error is False
        async with httpx2.AsyncClient(headers={"Authorization": "Bearer wrong"}) as other:
            assert (await other.post(url, json={})).status_code == 401
    finally:
        # The wrapper alone would leave the bridge running, a child of nobody, serving on.
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=20)


async def eventually_async(probe: Any, timeout: float = 30.0) -> None:
    with anyio.fail_after(timeout):
        while not await probe():
            await anyio.sleep(0.05)
