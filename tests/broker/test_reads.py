"""Free reads through the console (`market.*` on the agents' socket): the service's free tools
answered and recorded, never queued; paid tools refused there; a job's status only for the
agent whose request started it; none of it on the operator socket."""

from __future__ import annotations

import json

import pytest
from helpers import operator, submit

from svc_console.agent import AgentError, AsyncAgent


async def test_a_free_tool_is_answered_and_recorded_and_a_paid_one_refused(runtime):
    async with AsyncAgent("reader", runtime.paths.socket) as agent:
        tools = {t["name"] for t in (await agent.call("market.tools", {}))["tools"]}
        assert {"list_datasets", "try_dataset", "get_dataset", "merge_models"} <= tools
        read = await agent.call("market.read", {"tool": "list_datasets", "arguments": {"limit": 2}})
        assert read["is_error"] is False and len(read["structured"]["datasets"]) == 2
        with pytest.raises(AgentError) as paid:
            await agent.call("market.read", {"tool": "get_dataset", "arguments": {}})
        assert paid.value.reason == "invalid_params" and "spend.submit" in paid.value.message
        secret = runtime.market.secrets[0]
        with pytest.raises(AgentError) as leaked:
            await agent.call(
                "market.read", {"tool": "search_datasets", "arguments": {"query": secret}}
            )
        assert leaked.value.reason == "invalid_params" and secret not in leaked.value.message
    rows = runtime.ledger.db.execute("SELECT data FROM events WHERE type = 'read'").fetchall()
    assert [json.loads(r[0])["tool"] for r in rows] == ["list_datasets"]
    assert runtime.broker.pending() == []


async def test_a_jobs_status_is_only_for_the_agent_that_asked_for_it(runtime):
    ticket = await submit(runtime, "owner")
    async with AsyncAgent("other", runtime.paths.socket) as other:
        with pytest.raises(AgentError) as unknown:
            await other.call("market.job", {"request_id": ticket["request_id"]})
        assert unknown.value.reason == "unknown_request"
    async with AsyncAgent("owner", runtime.paths.socket) as owner:
        with pytest.raises(AgentError) as not_a_job:
            await owner.call("market.job", {"request_id": ticket["request_id"]})
        assert not_a_job.value.reason == "invalid_params"


async def test_reads_are_not_served_on_the_operator_socket(runtime):
    async with operator(runtime) as line:
        with pytest.raises(AgentError) as refused:
            await line.call("market.read", {"tool": "list_datasets", "arguments": {}})
        assert refused.value.reason == "not_authorised"
