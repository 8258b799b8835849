"""The MCP server: tools listed from the service (through the console), free tools answered at
once, paid tools turned into spend requests that wait for the operator.

While a paid call waits, the client hears where it stands (MCP progress, when it sent a progress
token): "waiting for the operator: 0.05 USDC to BazaarHub", "executing". A client's cancellation
cancels the request while nothing has been spent. The result is the provider's answer as content
(data, as the provider wrote it) with the console's facts in `structuredContent`; every other end
is `isError` with what the agent can act on (the operator's words for a denial).
"""

from __future__ import annotations

import contextlib
import json
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server

from svc_console import __version__
from svc_console.agent import AgentError, AsyncAgent
from svc_console.mcp_bridge import tools
from svc_console.mcp_bridge.outcomes import progress_words, result_of

FINAL = frozenset({"succeeded", "failed", "denied", "rejected", "expired", "cancelled", "unknown"})
# Where a paid call stops waiting: a final state, or funds the operator has to add first.
STOPS = FINAL | {"awaiting_funds"}
WAIT_CHUNK_S = 30.0  # a wait returns at each change of state, or after this long


class Bridge:
    """One agent's MCP server over one connection to the console's agents' socket."""

    def __init__(self, agent: AsyncAgent):
        self.agent = agent
        self._tools: list[types.Tool] | None = None

    def server(self) -> Server[Any]:
        return Server(
            "svc-console",
            version=__version__,
            instructions="Marketplace tools through svc-console: free tools answer at once; paid"
            " tools cost USDC and wait for an operator's approval before anything is paid.",
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
        )

    async def _list_tools(self, ctx: Any, params: Any) -> types.ListToolsResult:
        if self._tools is None:
            service = (await self.agent.call("market.tools", {}))["tools"]
            self._tools = [types.Tool.model_validate(tool) for tool in tools.listed(service)]
        return types.ListToolsResult(tools=self._tools)

    async def _call_tool(
        self, ctx: Any, params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        name, arguments = params.name, dict(params.arguments or {})
        try:
            if name in tools.FREE:
                read = await self.agent.call("market.read", {"tool": name, "arguments": arguments})
                return _free(read)
            if name == tools.JOB_STATUS:
                job = await self.agent.call(
                    "market.job", {"request_id": arguments.get("request_id", "")}
                )
                return types.CallToolResult(
                    content=[types.TextContent(text=json.dumps(job, ensure_ascii=False))],
                    structured_content=job,
                )
            if name == tools.MARKET_CALL or name in tools.PAID_KINDS:
                ticket = await self.agent.call("spend.submit", tools.submission(name, arguments))
                return await self._follow(ctx, ticket["request_id"], ticket.get("state"))
        except tools.BadArguments as exc:
            return _error(str(exc))
        except AgentError as exc:
            return _error(f"svc-console refused: {exc.message}", {"reason": exc.reason})
        return _error(f"no tool {name[:60]!r}")

    async def _follow(self, ctx: Any, request_id: str, seen: str | None) -> types.CallToolResult:
        """Wait for the request's outcome, saying where it stands (from `seen`, its state at
        submission: a change since is answered at once); cancelled with the client."""
        said, step = None, 0
        try:
            while True:
                asked = {"request_id": request_id, "timeout_s": WAIT_CHUNK_S, "until": "change"}
                request = await self.agent.call("spend.wait", {**asked, "seen": seen})
                seen = request["state"]
                words = progress_words(request)
                if words != said:
                    said, step = words, step + 1
                    await ctx.session.report_progress(step, None, words)
                if request["state"] in STOPS:
                    return result_of(request)
        except anyio.get_cancelled_exc_class():
            with anyio.CancelScope(shield=True):
                await self._cancel(request_id)
            raise

    async def _cancel(self, request_id: str) -> None:
        """Cancel the request if nothing has been spent yet (the console refuses otherwise)."""
        # Already executing or final: it runs its course, as the console says.
        with contextlib.suppress(AgentError):
            await self.agent.call("spend.cancel", {"request_id": request_id})


def _free(read: dict[str, Any]) -> types.CallToolResult:
    structured = read.get("structured")
    content = read.get("content") or []
    blocks = [
        types.TextContent(text=str(block.get("text", "")))
        for block in content
        if isinstance(block, dict) and block.get("type") == "text"
    ]
    if not blocks and structured is not None:
        blocks = [types.TextContent(text=json.dumps(structured, ensure_ascii=False))]
    return types.CallToolResult(
        content=blocks, structured_content=structured, is_error=bool(read.get("is_error"))
    )


def _error(message: str, structured: dict[str, Any] | None = None) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(text=message)],
        structured_content={"error": message, **(structured or {})},
        is_error=True,
    )
