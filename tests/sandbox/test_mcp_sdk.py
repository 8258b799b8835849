"""A standard MCP client (the `mcp` Python SDK: Streamable HTTP transport and `ClientSession`)
connects to the sandbox over real HTTP, lists the nine tools and calls them."""

from __future__ import annotations

import tempfile
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx2
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from svc_console.sandbox.server import SandboxServer

NINE = {
    "svc_auth_start",
    "svc_auth_complete",
    "list_datasets",
    "search_datasets",
    "list_market_apis",
    "try_dataset",
    "get_dataset",
    "svc_breed_agent",
    "merge_models",
}


@pytest.fixture(scope="module")
def server() -> Iterator[SandboxServer]:
    folder = Path(tempfile.mkdtemp(prefix="svc-sdk-"))
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SVC_CONSOLE_HOME", str(folder))
        with SandboxServer() as running:
            yield running


@asynccontextmanager
async def session(server: SandboxServer, key: str | None) -> AsyncIterator[ClientSession]:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as http,
        streamable_http_client(f"{server.base_url}/api/mcp", http_client=http) as (read, write),
        ClientSession(read, write) as client,
    ):
        yield client


async def test_the_sdk_client_lists_the_nine_tools_and_calls_one(server: SandboxServer):
    async with session(server, server.state.api_key) as client:
        hello = await client.initialize()
        assert hello.server_info.name == "svc-console-sandbox"
        assert hello.capabilities.tools is not None
        listed = await client.list_tools()
        assert {tool.name for tool in listed.tools} == NINE
        breed = next(tool for tool in listed.tools if tool.name == "svc_breed_agent")
        assert breed.annotations.destructive_hint is True
        search = next(tool for tool in listed.tools if tool.name == "list_datasets")
        assert search.annotations.read_only_hint is True
        assert search.input_schema["properties"]["limit"]["maximum"] == 100

        result = await client.call_tool("list_market_apis", {"domain_type": "A7", "limit": 3})
        assert result.is_error is False
        apis = result.structured_content["apis"]
        assert len(apis) == 3 and all(api["domain_type"] == "A7" for api in apis)

        paid = await client.call_tool("svc_breed_agent", {})
        assert paid.is_error is True
        assert paid.structured_content["error"]["code"] == "PAYMENT_REQUIRED"


async def test_without_a_key_the_sdk_client_can_sign_in_but_not_call_other_tools(
    server: SandboxServer,
):
    async with session(server, None) as client:
        await client.initialize()
        assert len((await client.list_tools()).tools) == 9
        sent = await client.call_tool("svc_auth_start", {"email": "sdk@example.com"})
        assert sent.is_error is False and sent.structured_content["sent"] is True
        with pytest.raises(MCPError) as refused:
            await client.call_tool("list_datasets", {})
        assert refused.value.error.code == -32001


async def test_bad_arguments_reach_the_sdk_client_as_invalid_params(server: SandboxServer):
    async with session(server, server.state.api_key) as client:
        await client.initialize()
        with pytest.raises(MCPError) as refused:
            await client.call_tool("list_datasets", {"limit": 101})
        assert refused.value.error.code == -32602
        assert "limit" in refused.value.error.message
