"""The most an agent will pay (`max_usdc`) is taken only as a plain decimal string with at most
6 decimals, over the socket as on the command line: "1_000", " 1", full-width digits, an
exponent or a JSON number are refused naming the field, and nothing is recorded."""

from __future__ import annotations

from decimal import Decimal

import pytest

from svc_console.agent import AgentError, AsyncAgent
from svc_console.core.money import PLAIN_RULE

REFUSED = ["1_000", " 1", "1 ", "\uff11", "\u0661", "1e3", "+1", "-1", "0.0000001", "", 1000, 0.5]


def count_requests(runtime) -> int:
    return runtime.ledger.db.execute("SELECT count(*) FROM requests").fetchone()[0]


def submission(max_usdc: object) -> dict[str, object]:
    return {
        "kind": "market_call",
        "endpoint_id": "ep_websearch_basic",
        "inputs": {"query": "heat pumps"},
        "purpose": "market sizing",
        "max_usdc": max_usdc,
    }


@pytest.mark.parametrize("amount", REFUSED, ids=repr)
async def test_anything_but_a_plain_decimal_string_is_refused(runtime, amount):
    async with AsyncAgent("amount-bot", runtime.paths.socket) as agent:
        with pytest.raises(AgentError) as refused:
            await agent.call("spend.submit", submission(amount))
    assert refused.value.reason == "invalid_params"
    assert "max_usdc" in refused.value.message and PLAIN_RULE in refused.value.message
    assert count_requests(runtime) == 0


@pytest.mark.parametrize("amount", ["0.05", "12", "0.000001", "1000000"])
async def test_a_plain_decimal_string_is_taken_as_written(runtime, amount):
    async with AsyncAgent("amount-bot", runtime.paths.socket) as agent:
        ticket = await agent.call("spend.submit", submission(amount))
    assert runtime.broker.get(ticket["request_id"]).max_usdc == Decimal(amount)
