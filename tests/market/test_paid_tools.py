"""The charged MCP tools end to end: the console quotes them by their x402 challenge, the operator
approves, and the console signs and pays exactly what was approved (real EIP-712 signatures,
verified by the sandbox over real HTTP)."""

from __future__ import annotations

import json
import time
from decimal import Decimal

import pytest
from eth_account import Account
from helpers import eventually, submit
from mandates import mandate

from svc_console.agent import AsyncAgent
from svc_console.broker.params import ApproveParams
from svc_console.core.states import State
from svc_console.market.mcp import McpClient, PaymentRefused
from svc_console.market.signer import Signer
from svc_console.sandbox.x402 import SANDBOX_PAY_TO

STANDARD = "ds_news_headlines_2024"  # 0.25 USDC
FREE = "ds_fx_daily_rates"
MERGE_YAML = """merge_method: linear
models:
  - model: org/alpha
  - model: org/beta
"""


async def in_state(runtime, request_id, *states):
    return await eventually(
        lambda: (r := runtime.broker.get(request_id)).state in states and r, timeout=20
    )


async def ask(runtime, kind, **fields):
    params = {"kind": kind, "endpoint_id": None, "inputs": {}, **fields}
    ticket = await submit(runtime, **params)
    return ticket["request_id"]


def charged_for(sandbox, what):
    return [c for c in sandbox.state.charges if what in c.endpoint_id]


async def test_a_paid_dataset_is_quoted_by_its_challenge_and_bought_after_approval(
    runtime, sandbox
):
    request_id = await ask(runtime, "dataset", dataset_id=STANDARD)
    request = await in_state(runtime, request_id, State.pending)
    assert request.estimate.amount_usdc == Decimal("0.25")
    assert (request.estimate.chain, request.estimate.protocol) == ("base", "x402")
    # The challenge pinned where the money goes, for the operator to see and the mandate to hold.
    assert request.estimate.pay_to == SANDBOX_PAY_TO
    assert (request.estimate.network, request.estimate.scheme) == ("eip155:8453", "exact")
    assert request.endpoint.product_class == "B2" and request.endpoint.name
    assert "standard tier" in request.skill
    assert sandbox.state.charges == []  # quoting spent nothing

    await runtime.broker.approve(ApproveParams(request_id=request_id))
    done = await in_state(runtime, request_id, State.succeeded, State.failed)
    assert done.state == State.succeeded, done.reason
    assert done.outcome.charged_usdc == Decimal("0.25")
    assert done.outcome.receipt.protocol == "x402"
    assert done.outcome.receipt.network == "eip155:8453"
    body = json.loads(done.outcome.body)
    assert body["datasetId"] == STANDARD and body["content"]
    charges = charged_for(sandbox, STANDARD)
    assert [c.price_usdc for c in charges] == [Decimal("0.25")]
    assert done.outcome.receipt.transaction == body["payment"]["transaction"]


async def test_a_free_dataset_costs_nothing_and_signs_nothing(runtime, sandbox):
    request_id = await ask(runtime, "dataset", dataset_id=FREE)
    request = await in_state(runtime, request_id, State.pending)
    assert request.estimate.amount_usdc == 0
    await runtime.broker.approve(ApproveParams(request_id=request_id))
    done = await in_state(runtime, request_id, State.succeeded, State.failed)
    assert done.state == State.succeeded, done.reason
    assert done.outcome.charged_usdc == 0
    assert sandbox.state.charges == []


@pytest.mark.parametrize(
    ("kind", "inputs", "price"),
    [
        ("breed_agent", {"target_task": "summarization"}, Decimal(10)),
        ("merge_models", {"config_yaml": MERGE_YAML}, Decimal(15)),
    ],
)
async def test_compute_jobs_pay_exactly_their_price(runtime, sandbox, kind, inputs, price):
    request_id = await ask(runtime, kind, inputs=inputs)
    request = await in_state(runtime, request_id, State.pending)
    assert request.estimate.amount_usdc == price
    assert request.endpoint.product_class == "B3"
    sandbox.state.set_balance(100)
    # Above the confirmation threshold: the amount is typed.
    await runtime.broker.approve(ApproveParams(request_id=request_id, confirm_amount=price))
    done = await in_state(runtime, request_id, State.succeeded, State.failed)
    assert done.state == State.succeeded, done.reason
    assert done.outcome.charged_usdc == price
    assert json.loads(done.outcome.body)["jobId"]
    assert [c.price_usdc for c in sandbox.state.charges] == [price]


async def test_an_invalid_merge_config_is_rejected_before_the_operator(runtime, sandbox):
    request_id = await ask(runtime, "merge_models", inputs={"config_yaml": "models: [unclosed"})
    request = await in_state(runtime, request_id, State.rejected)
    assert "merge_models" in request.reason and "YAML" in request.reason
    assert sandbox.state.charges == []


async def test_an_agent_cannot_slip_in_its_own_payment(runtime, sandbox):
    request_id = await ask(
        runtime, "breed_agent", inputs={"target_task": "qa", "payment_signature": "abc"}
    )
    request = await in_state(runtime, request_id, State.rejected)
    assert "payment_signature" in request.reason and "console signs" in request.reason


async def test_a_challenge_above_the_approval_is_not_paid_and_goes_back_repriced(runtime, sandbox):
    request_id = await ask(runtime, "dataset", dataset_id=STANDARD)
    await in_state(runtime, request_id, State.pending)
    # The next MCP call (the challenge at execution) asks twice the quoted price.
    sandbox.state.faults.add("reprice", routes=["mcp"], count=1, factor=2)
    await runtime.broker.approve(ApproveParams(request_id=request_id))
    request = await eventually(
        lambda: (
            (r := runtime.broker.get(request_id)).state == State.pending
            and r.estimate.amount_usdc == Decimal("0.5")
            and r
        ),
        timeout=20,
    )
    assert "0.50" in request.reason and "nothing was paid" in request.reason
    assert sandbox.state.charges == []


async def test_a_compute_tool_asking_other_than_its_fixed_price_is_never_paid(runtime, sandbox):
    request_id = await ask(runtime, "breed_agent", inputs={"target_task": "summarization"})
    await in_state(runtime, request_id, State.pending)
    sandbox.state.faults.add("reprice", routes=["mcp"], count=1, factor=2)
    await runtime.broker.approve(ApproveParams(request_id=request_id, confirm_amount="10"))
    done = await in_state(runtime, request_id, State.failed, State.succeeded)
    assert done.state == State.failed
    assert done.reason.startswith("the amount changed from exactly 10.00 to 20.00 USDC")
    assert "nothing was signed or paid" in done.reason
    assert sandbox.state.charges == []


async def test_an_unfunded_wallet_waits_then_pays_once_after_funding(runtime, sandbox):
    sandbox.state.set_balance("0.10")
    request_id = await ask(runtime, "dataset", dataset_id=STANDARD)
    await in_state(runtime, request_id, State.pending)
    await runtime.broker.approve(ApproveParams(request_id=request_id))
    waiting = await in_state(runtime, request_id, State.awaiting_funds, State.failed)
    assert waiting.state == State.awaiting_funds, waiting.reason
    assert waiting.funding_url and "0.25" in waiting.reason
    assert sandbox.state.charges == []

    sandbox.state.credit(Decimal(5))
    await runtime.broker.retry_funded(request_id)
    done = await in_state(runtime, request_id, State.succeeded, State.failed)
    assert done.state == State.succeeded, done.reason
    assert len(charged_for(sandbox, STANDARD)) == 1


async def test_a_replayed_signature_is_refused_with_its_reason(sandbox):
    mcp = McpClient(f"{sandbox.base_url}/api/mcp", credential=sandbox.state.api_key)
    signer = Signer.with_key(Account.create().key.hex(), time.time)
    async with mcp:
        try:
            await mcp.call_tool("get_dataset", {"dataset_id": STANDARD})
        except Exception as exc:  # the challenge comes back as a tool error
            challenge = exc.payment_required  # type: ignore[attr-defined]
        signed = signer.x402(mandate(recipient=SANDBOX_PAY_TO), challenge)
        paid = {"dataset_id": STANDARD, "payment_signature": signed.header}
        first = await mcp.call_tool("get_dataset", paid)
        assert first.data()["chargedUsdc"] == "0.25"
        with pytest.raises(PaymentRefused) as refused:
            await mcp.call_tool("get_dataset", paid)
    assert refused.value.reason == "nonce_reused"
    assert len(charged_for(sandbox, STANDARD)) == 1


async def test_agents_wait_on_a_dataset_purchase_like_any_other(runtime, sandbox):
    async with AsyncAgent("analyst", runtime.paths.socket) as agent:
        ticket = await agent.submit(
            kind="dataset", dataset_id=FREE, inputs={}, purpose="fx history"
        )
        await in_state(runtime, ticket["request_id"], State.pending)
        await runtime.broker.approve(ApproveParams(request_id=ticket["request_id"]))
        done = await agent.wait_for_outcome(ticket["request_id"], timeout_s=20)
    assert done["state"] == "succeeded"
    assert done["outcome"]["receipt"]["protocol"] == "x402"


async def test_a_challenge_on_another_chain_is_not_paid_and_goes_back(runtime, sandbox):
    request_id = await ask(runtime, "dataset", dataset_id=STANDARD)
    await in_state(runtime, request_id, State.pending)
    sandbox.state.faults.add("reprice", routes=["mcp"], count=1, chain="ethereum")
    await runtime.broker.approve(ApproveParams(request_id=request_id))
    request = await eventually(
        lambda: (
            (r := runtime.broker.get(request_id)).state == State.pending
            and r.estimate.chain == "ethereum"
            and r
        ),
        timeout=20,
    )
    assert request.estimate.amount_usdc == Decimal("0.25")
    assert "ethereum" in request.reason and "nothing was paid" in request.reason
    assert sandbox.state.charges == []


async def test_a_market_call_whose_challenge_moves_chain_goes_back_to_the_operator(
    runtime, sandbox
):
    ticket = await submit(runtime)
    await in_state(runtime, ticket["request_id"], State.pending)
    sandbox.state.faults.add("reprice", routes=["proxy"], count=1, chain="solana")
    await runtime.broker.approve(ApproveParams(request_id=ticket["request_id"]))
    request = await eventually(
        lambda: (
            (r := runtime.broker.get(ticket["request_id"])).state == State.pending
            and r.estimate.chain == "solana"
            and r
        ),
        timeout=20,
    )
    assert "solana" in request.reason and "nothing was paid" in request.reason
    assert sandbox.state.charges == []
