"""The console's MCP client (`market.mcp`) against the sandbox over real HTTP: the handshake,
typed results, typed errors, and batches sent as one POST whose answers are matched by id."""

from __future__ import annotations

import json
import tempfile
from collections.abc import AsyncIterator, Iterator
from decimal import Decimal
from pathlib import Path

import httpx
import pytest
from signing import sign_x402

from svc_console.market import errors
from svc_console.market.mcp import (
    Call,
    JsonRpcError,
    McpClient,
    PaymentRefused,
    PaymentRequiredError,
    ToolError,
    ToolResult,
    ToolSpec,
    ToolWalletUnfunded,
)
from svc_console.sandbox.datasets import dataset_catalog
from svc_console.sandbox.server import SandboxServer


@pytest.fixture(scope="module")
def server() -> Iterator[SandboxServer]:
    folder = Path(tempfile.mkdtemp(prefix="svc-mcpc-"))
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SVC_CONSOLE_HOME", str(folder))
        with SandboxServer() as running:
            running.state.set_balance(1000)
            yield running


class Recording(httpx.AsyncHTTPTransport):
    """A real HTTP transport that keeps the requests it sent (and may reverse a JSON array
    answer, as a server is free to order a batch's answers)."""

    def __init__(self, *, reverse: bool = False):
        super().__init__()
        self.sent: list[httpx.Request] = []
        self.reverse = reverse

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.sent.append(request)
        response = await super().handle_async_request(request)
        if not self.reverse:
            return response
        body = json.loads(await response.aread())
        if isinstance(body, list):
            body.reverse()
        headers = {k: v for k, v in response.headers.items() if k != "content-length"}
        return httpx.Response(response.status_code, headers=headers, json=body)


@pytest.fixture
def transport() -> Recording:
    return Recording()


@pytest.fixture
async def client(server: SandboxServer, transport: Recording) -> AsyncIterator[McpClient]:
    url = f"{server.base_url}/api/mcp"
    async with McpClient(url, credential=server.state.api_key, transport=transport) as mcp:
        yield mcp


async def test_the_handshake_and_the_tool_list_are_typed(client: McpClient, transport: Recording):
    hello = await client.initialize()
    assert hello.server_info.name == "svc-console-sandbox"
    assert client.protocol_version == hello.protocol_version == "2025-11-25"
    tools = await client.list_tools()
    assert all(isinstance(t, ToolSpec) for t in tools) and len(tools) == 9
    by_name = {t.name: t for t in tools}
    assert by_name["merge_models"].annotations.destructive_hint is True
    assert by_name["try_dataset"].annotations.read_only_hint is True
    assert by_name["list_datasets"].input_schema["properties"]["limit"]["default"] == 20
    # After the handshake every POST names the negotiated version.
    assert transport.sent[-1].headers["mcp-protocol-version"] == "2025-11-25"
    await client.ping()


async def test_a_batch_is_one_post_and_answers_come_back_in_call_order(
    server: SandboxServer,
):
    transport = Recording(reverse=True)
    url = f"{server.base_url}/api/mcp"
    async with McpClient(url, credential=server.state.api_key, transport=transport) as client:
        answers = await client.batch(
            [
                Call.tool("list_datasets", {"limit": 2}),
                Call.list_tools(),
                Call.tool("list_market_apis", {"limit": 3}),
                Call.tool("list_datasets", {"limit": 500}),
                Call("no/such/method"),
                Call.ping(),
            ]
        )
    assert len(transport.sent) == 1
    sent = json.loads(transport.sent[0].content)
    assert isinstance(sent, list) and len(sent) == 6
    assert len({message["id"] for message in sent}) == 6
    datasets, tools, apis, too_many, unknown, ping = answers
    assert isinstance(datasets, ToolResult) and len(datasets.data()["datasets"]) == 2
    assert [t.name for t in tools][:2] == ["svc_auth_start", "svc_auth_complete"]
    assert len(apis.data()["apis"]) == 3
    assert isinstance(too_many, JsonRpcError) and too_many.rpc_code == -32602
    assert "limit" in too_many.rpc_message
    assert too_many.data["errors"][0]["argument"] == "limit"
    assert isinstance(unknown, JsonRpcError) and unknown.rpc_code == -32601
    assert ping == {}


async def test_tool_failures_are_typed_errors(client: McpClient, server: SandboxServer):
    state = server.state
    with pytest.raises(ToolError) as missing:
        await client.call_tool("try_dataset", {"dataset_id": "ds_missing"})
    assert missing.value.code == "NOT_FOUND" and missing.value.tool == "try_dataset"

    with pytest.raises(PaymentRequiredError) as challenge:
        await client.call_tool("svc_breed_agent", {})
    required = challenge.value.payment_required
    assert required is not None and required["accepts"][0]["amount"] == "10000000"

    signature = sign_x402(required)
    started = await client.call_tool("svc_breed_agent", {"payment_signature": signature})
    assert started.data()["jobId"].startswith("job_")
    with pytest.raises(PaymentRefused) as replay:
        await client.call_tool("svc_breed_agent", {"payment_signature": signature})
    assert replay.value.reason == "nonce_reused"

    dataset = next(d for d in dataset_catalog().datasets if d.paid)
    with pytest.raises(PaymentRequiredError) as challenge:
        await client.call_tool("get_dataset", {"dataset_id": dataset.id})
    balance = state.balance
    state.set_balance(0)
    try:
        with pytest.raises(ToolWalletUnfunded) as unfunded:
            await client.call_tool(
                "get_dataset",
                {
                    "dataset_id": dataset.id,
                    "payment_signature": sign_x402(challenge.value.payment_required),
                },
            )
    finally:
        state.set_balance(balance)
    # The broker's funding retry can treat it like the wallet proxy's WALLET_UNFUNDED.
    assert isinstance(unfunded.value, errors.WalletUnfunded)
    assert unfunded.value.funding_url.endswith(f"/fund/{state.username}")
    assert unfunded.value.required == dataset.price_usdc
    assert unfunded.value.balance == Decimal(0)


async def test_a_missing_or_wrong_credential_is_unauthorized(server: SandboxServer):
    url = f"{server.base_url}/api/mcp"
    for credential in (None, "sk_live_wrong"):
        async with McpClient(url, credential=credential) as client:
            await client.initialize()  # the handshake needs no key
            with pytest.raises(errors.Unauthorized) as refused:
                await client.call_tool("list_datasets", {})
            assert "sk_live_wrong" not in str(refused.value)
            with pytest.raises(errors.Unauthorized):
                await client.batch([Call.tool("svc_auth_start", {"email": "a@example.com"}),
                                    Call.tool("list_datasets")])  # fmt: skip


async def test_the_credential_never_shows(client: McpClient, server: SandboxServer):
    key = server.state.api_key
    assert key not in repr(client) and key not in str(vars(client))


async def test_a_refused_body_and_a_wrong_address_are_clear(server: SandboxServer):
    async with McpClient(f"{server.base_url}/api/nowhere", credential="x") as client:
        with pytest.raises(errors.EndpointNotFound):
            await client.list_tools()
    async with McpClient(f"{server.base_url}/api/mcp") as client:
        with pytest.raises(JsonRpcError) as bad:
            await client.request("initialize", {})
        assert bad.value.rpc_code == -32602 and "protocolVersion" in bad.value.rpc_message
        assert await client.batch([]) == []


async def test_an_unreachable_service_is_said_so(server: SandboxServer, refused_url: str):
    async with McpClient(f"{refused_url}/api/mcp") as client:
        with pytest.raises(errors.ServiceUnreachable):
            await client.list_tools()
