"""A hostile marketplace (tests/hostile_market.py) between the console and the sandbox rewrites,
after the operator approved, what the console is asked to pay, on every way the console pays: the
charged MCP tools (`get_dataset` on a paid tier, `svc_breed_agent` and `merge_models` at their
fixed prices), the funding retry, and the wallet proxy's market calls (from an agent, and from the
MCP bridge's `call_market_api`). Each rewrite is refused before anything is signed: the request
goes back to the operator with the difference in words, or, where no approval could ever cover
it, fails; and the hostile marketplace sees no signed payment at all.

Two controls show the recorder sees payments: with nothing rewritten, the same paths pay, and the
proxy records the signature (or the proxy's `approved: true`) each time.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from decimal import Decimal
from typing import Any

import anyio
import pytest
from helpers import SEARCH, eventually
from hostile_market import HostileMarket
from test_mcp_bridge import bridge, pending_one

from svc_console.agent import AsyncAgent
from svc_console.broker import BrokerConfig
from svc_console.broker.params import ApproveParams, DenyParams
from svc_console.core.networks import USDC_ASSETS
from svc_console.core.states import State
from svc_console.runtime import Runtime

EVIL = "0xdEaD000000000000000000000000000000bEEf01"
STANDARD = "ds_news_headlines_2024"  # 0.25 USDC
MERGE_YAML = "merge_method: linear\nmodels:\n  - model: org/alpha\n  - model: org/beta\n"
PAID_TOOLS = {
    "get_dataset": {"kind": "dataset", "dataset_id": STANDARD, "inputs": {}},
    "svc_breed_agent": {"kind": "breed_agent", "inputs": {"target_task": "summarization"}},
    "merge_models": {"kind": "merge_models", "inputs": {"config_yaml": MERGE_YAML}},
}
# Each rewrite of a challenge's options, and the words the operator reads. Back: the request
# goes back to the operator (an approval of the new terms can pay it); else it fails (none can).
REWRITES: dict[str, tuple[dict[str, Any], str, bool]] = {
    "recipient": ({"payTo": EVIL}, "the recipient changed from 0x5A9d…A9D0 to 0xdEaD…Ef01", True),
    "asset": (
        {"asset": "0x" + "77" * 20},
        "the asset changed from USDC (0x8335…2913) to 0x7777…7777",
        False,
    ),
    "network": (
        {"network": "eip155:1", "asset": USDC_ASSETS["eip155:1"]},
        "the network changed from base (eip155:8453) to ethereum (eip155:1)",
        True,
    ),
    "amount": ({"amount": lambda units: str(int(units) * 2)}, "the amount ", True),
    "scheme": ({"scheme": "upto"}, "the scheme changed from exact to upto", False),
    "validity window": ({"maxTimeoutSeconds": 30 * 86_400}, "past the mandate's", False),
    "EIP-712 domain": (
        {"extra": {"name": "USD Coin", "version": "1"}},
        "the EIP-712 domain changed from USD Coin version 2 to USD Coin version 1",
        False,
    ),
}
AMOUNT_WORDS = {
    "get_dataset": "the amount rose from at most 0.25 to 0.50 USDC",
    "svc_breed_agent": "the amount changed from exactly 10.00 to 20.00 USDC",
    "merge_models": "the amount changed from exactly 15.00 to 30.00 USDC",
}
# What an endpoint record read again before the wallet proxy pays may say instead.
MOVED = {
    "provider": (
        {"provider": "prov_evil", "providerName": "Evil Search"},
        "the provider changed from Searchly (prov_searchly) to Evil Search (prov_evil)",
    ),
    "chain": ({"chains": ["solana"]}, "the chain changed from base to solana"),
    "price": (
        {"pricing": {"model": "fixed", "amountUsdc": "0.05"}},
        "the price rose from at most 0.01 to at least 0.05 USDC",
    ),
}


@pytest.fixture
def market(sandbox: Any) -> AsyncIterator[HostileMarket]:
    hostile = HostileMarket(sandbox)
    yield hostile
    hostile.stop()


@pytest.fixture
async def runtime(paths: Any, market: HostileMarket, keep_started: Any) -> Runtime:
    """A console whose marketplace is the hostile one."""
    return await keep_started(Runtime(paths=paths, sandbox=market, config=BrokerConfig()))


async def submitted(runtime: Runtime, **fields: Any) -> str:
    async with AsyncAgent("buyer", runtime.paths.socket) as agent:
        ticket = await agent.submit(purpose="what the operator approves", **fields)
    await eventually(lambda: runtime.broker.get(ticket["request_id"]).state == State.pending)
    return ticket["request_id"]


async def approve(runtime: Runtime, request_id: str) -> None:
    request = runtime.broker.get(request_id)
    confirm = runtime.broker.confirmation_needed(request)
    await runtime.broker.approve(ApproveParams(request_id=request_id, confirm_amount=confirm))


async def attempted(runtime: Runtime, request_id: str) -> Any:
    """The request once its approved attempt has ended, however it ended."""
    ended = lambda: runtime.broker.get(request_id).state not in (State.approved, State.executing)  # noqa: E731
    await eventually(ended, timeout=30)
    return runtime.broker.get(request_id)


def words_for(tool: str, rewrite: str) -> tuple[dict[str, Any], str, bool]:
    changes, words, back = REWRITES[rewrite]
    if rewrite == "amount":
        words, back = AMOUNT_WORDS[tool], tool == "get_dataset"
    return changes, words, back


def assert_refused_unsigned(
    request: Any, market: HostileMarket, words: str, back: bool, charges: int, sandbox: Any
) -> None:
    assert market.rewritten > 0  # the console was asked
    assert market.signed == []  # and signed nothing
    assert request.state == (State.pending if back else State.failed), request.reason
    assert words in request.reason, request.reason
    assert "nothing was signed" in request.reason
    assert len(sandbox.state.charges) == charges


@pytest.mark.parametrize("rewrite", list(REWRITES))
@pytest.mark.parametrize("tool", list(PAID_TOOLS))
async def test_a_paid_tools_challenge_rewritten_after_approval_is_not_signed(
    runtime: Runtime, market: HostileMarket, sandbox: Any, tool: str, rewrite: str
):
    sandbox.state.set_balance(100)
    request_id = await submitted(runtime, **PAID_TOOLS[tool])
    changes, words, back = words_for(tool, rewrite)
    market.arm(**changes)
    await approve(runtime, request_id)
    request = await attempted(runtime, request_id)
    assert_refused_unsigned(request, market, words, back, 0, sandbox)
    if back and rewrite == "recipient":
        # What the operator is asked to approve now is the new recipient, in sight.
        assert request.estimate.pay_to == EVIL


@pytest.mark.parametrize("rewrite", list(REWRITES))
async def test_the_funding_retry_signs_nothing_the_rewrite_asks(
    runtime: Runtime, market: HostileMarket, sandbox: Any, rewrite: str
):
    sandbox.state.set_balance("0.10")
    request_id = await submitted(runtime, **PAID_TOOLS["get_dataset"])
    await approve(runtime, request_id)
    await eventually(lambda: runtime.broker.get(request_id).state == State.awaiting_funds)
    sandbox.state.credit(Decimal(5))
    changes, words, back = words_for("get_dataset", rewrite)
    market.arm(**changes)  # the first attempt's signature is behind; the retry's is not
    await runtime.broker.retry_funded(request_id)
    request = await runtime.broker.retried(request_id, timeout_s=30)
    assert_refused_unsigned(request, market, words, back, 0, sandbox)


@pytest.mark.parametrize("moved", list(MOVED))
async def test_a_market_call_whose_endpoint_moved_is_not_paid(
    runtime: Runtime, market: HostileMarket, sandbox: Any, moved: str
):
    request_id = await submitted(runtime, kind="market_call", **SEARCH)
    changes, words = MOVED[moved]
    market.arm_records(**changes)
    await approve(runtime, request_id)
    request = await attempted(runtime, request_id)
    assert_refused_unsigned(request, market, words, True, 0, sandbox)
    if moved == "provider":  # the operator now sees who would be paid
        assert request.endpoint.provider == "prov_evil"


@pytest.mark.parametrize("moved", ["provider", "chain"])
async def test_call_market_api_from_the_mcp_bridge_is_not_paid_when_the_endpoint_moved(
    runtime: Runtime, market: HostileMarket, sandbox: Any, moved: str
):
    changes, words = MOVED[moved]
    results: list[Any] = []
    async with bridge(runtime, "--agent", "mcp-bot") as client:

        async def call() -> None:
            arguments = {**SEARCH, "purpose": "market sizing"}
            results.append(await client.call_tool("call_market_api", arguments))

        async with anyio.create_task_group() as group:
            group.start_soon(call)
            request_id = await pending_one(runtime)
            market.arm_records(**changes)
            await approve(runtime, request_id)
            request = await attempted(runtime, request_id)
            assert_refused_unsigned(request, market, words, True, 0, sandbox)
            # The agent's call is still waiting for the operator, who now denies it.
            await runtime.broker.deny(DenyParams(request_id=request_id, reason="moved"))
    assert results and results[0].is_error  # denied: the agent was told, nothing was paid


# -- controls: the recorder sees what an honest marketplace is paid --------------------------------


@pytest.mark.parametrize("tool", list(PAID_TOOLS))
async def test_an_honest_challenge_is_paid_and_the_proxy_sees_the_signature(
    runtime: Runtime, market: HostileMarket, sandbox: Any, tool: str
):
    sandbox.state.set_balance(100)
    request_id = await submitted(runtime, **PAID_TOOLS[tool])
    market.arm()  # nothing rewritten
    await approve(runtime, request_id)
    await eventually(lambda: runtime.broker.get(request_id).state == State.succeeded, timeout=30)
    assert [s.how for s in market.signed] == [f"payment_signature argument of {tool}"]


async def test_an_honest_market_call_is_paid_and_the_proxy_sees_the_approval(
    runtime: Runtime, market: HostileMarket
):
    request_id = await submitted(runtime, kind="market_call", **SEARCH)
    market.arm_records()  # nothing rewritten
    await approve(runtime, request_id)
    await eventually(lambda: runtime.broker.get(request_id).state == State.succeeded, timeout=30)
    assert [s.how for s in market.signed] == ["wallet proxy approved: true"]
