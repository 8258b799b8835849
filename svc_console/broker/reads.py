"""What an agent may read of the marketplace through the console, for free: the service's
discovery and evaluation tools, and the status of a compute job one of its own requests started.

The console holds the only credential, so an agent (or the MCP bridge acting for one) reads
through here as it spends through here. Nothing is charged, so nothing is queued for the operator;
each read is still recorded in the audit chain (who read which tool, a digest of the arguments)
so the ledger tells what each agent looked at before it asked to spend. What comes back is the
service's answer as data, untrusted, never rewritten into instructions.
"""

from __future__ import annotations

import hashlib
import json
import time
from typing import Any

from svc_console.broker import errors
from svc_console.broker.secret_refusal import refuse_secrets_in
from svc_console.broker.service import Broker
from svc_console.core.canonical_json import canonical_json
from svc_console.core.models import Kind, SpendRequest
from svc_console.core.states import State
from svc_console.market import errors as market_errors
from svc_console.market.mcp import ToolError

FREE_TOOLS = ("list_datasets", "search_datasets", "list_market_apis", "try_dataset")
# The service's paid tools: their schemas are shown to agents, their calls go through spend.*.
PAID_TOOLS = ("get_dataset", "svc_breed_agent", "merge_models")
COMPUTE = frozenset({Kind.breed_agent, Kind.merge_models})


class Reads:
    def __init__(self, broker: Broker):
        self.broker = broker
        self._tools: list[dict[str, Any]] | None = None

    async def tools(self) -> list[dict[str, Any]]:
        """The service's free and paid tools, as its `tools/list` describes them (cached)."""
        if self._tools is None:
            listed = await self._market(self.broker.market.mcp.list_tools())
            wanted = set(FREE_TOOLS) | set(PAID_TOOLS)
            self._tools = [
                spec.model_dump(mode="json", by_alias=True, exclude_none=True)
                for spec in listed
                if spec.name in wanted
            ]
        return self._tools

    async def read(self, agent: str, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """One free tool's answer: {is_error, structured, content}."""
        if tool not in FREE_TOOLS:
            raise errors.InvalidParams(
                f"{tool[:60]!r} is not a free tool: one of {', '.join(FREE_TOOLS)}"
                " (paid tools are asked for with spend.submit)"
            )
        market = self.broker.market
        refuse_secrets_in({"arguments": arguments}, market.secrets, agent, market.signer.key_forms)
        self._record(agent, tool, arguments)
        try:
            result = await self._market(self.broker.market.mcp.call_tool(tool, arguments))
        except ToolError as refused:
            return {"is_error": True, "structured": refused.structured, "content": []}
        return {"is_error": False, "structured": result.structured, "content": result.content}

    async def job(self, agent: str, request: SpendRequest) -> dict[str, Any]:
        """The compute job a breed or merge request of `agent` started, as the service says."""
        if request.kind not in COMPUTE:
            raise errors.InvalidParams(f"request {request.id} is not a breed or merge job")
        job_id = _job_id(request)
        if job_id is None:
            raise errors.WrongState(f"request {request.id} is {request.state}: no job started")
        self._record(agent, "job_status", {"request_id": request.id})
        return {
            "request_id": request.id,
            "job": await self._market(self.broker.market.rest.job(job_id)),
        }

    def _record(self, agent: str, tool: str, arguments: dict[str, Any]) -> None:
        digest = hashlib.sha256(canonical_json(arguments).encode()).hexdigest()
        ledger = self.broker.ledger
        with ledger.transaction():
            data = {"agent": agent, "tool": tool, "arguments_sha256": digest}
            ledger.event(None, "read", data, time.time())

    @staticmethod
    async def _market(call: Any) -> Any:
        try:
            return await call
        except market_errors.MarketError as exc:
            raise errors.MarketFailed(f"the marketplace did not answer: {exc}") from None


def _job_id(request: SpendRequest) -> str | None:
    if request.state != State.succeeded or request.outcome is None:
        return None
    try:
        body = json.loads(request.outcome.body)
    except ValueError:
        return None
    job_id = body.get("jobId") if isinstance(body, dict) else None
    return job_id if isinstance(job_id, str) and job_id else None
