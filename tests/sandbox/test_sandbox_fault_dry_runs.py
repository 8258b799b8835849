"""Dry runs spend no fault counts: a fault armed with a count on the wallet proxy is meant for the
next payments, so the dry run a request makes at intake neither fires it nor uses it up, and the
payment meets it. `dryRun` aims a fault at dry runs instead, or at payments whatever its count;
a fault with neither (weather) meets both. Over real HTTP, then through the console."""

from __future__ import annotations

from decimal import Decimal

import httpx
import pytest
from helpers import eventually, operator, submit
from test_sandbox_faults import SEARCH_INPUTS, wallet

from svc_console.core.states import State
from svc_console.market import errors
from svc_console.market.wallet import WalletClient
from svc_console.sandbox.catalog import WEBSEARCH_ID

__all__ = ["wallet"]  # a fixture, shared with the fault switch's tests


async def pay(wallet: WalletClient, key: str):
    return await wallet.execute(
        "x402", WEBSEARCH_ID, SEARCH_INPUTS, ceiling_usdc=Decimal("0.01"), chain="base",
        idempotency_key=key,
    )  # fmt: skip


def fault(sandbox) -> dict:
    [only] = sandbox.state.faults.list()
    return only


@pytest.mark.parametrize("kind", ["error", "drop"])
async def test_a_counted_fault_passes_the_dry_run_and_meets_the_payment(wallet, sandbox, kind):
    sandbox.state.faults.add(kind, routes=["proxy"], count=1)
    dry = await wallet.dry_run("x402", WEBSEARCH_ID, SEARCH_INPUTS)
    assert dry.estimated_usdc == Decimal("0.01")
    assert (fault(sandbox)["fired"], fault(sandbox)["remaining"]) == (0, 1)
    expected = errors.UpstreamError if kind == "error" else errors.OutcomeUnknown
    with pytest.raises(expected):
        await pay(wallet, "meant-for-this")
    assert (fault(sandbox)["fired"], fault(sandbox)["remaining"]) == (1, 0)
    charged = len(sandbox.state.charges_for("meant-for-this"))
    assert charged == (0 if kind == "error" else 1)  # a drop cuts an answer already charged
    outcome = await pay(wallet, "after-it")
    assert outcome.charged_usdc == Decimal("0.01")


async def test_dry_run_true_aims_a_fault_at_dry_runs_only(wallet, sandbox):
    sandbox.state.faults.add("error", routes=["proxy"], count=1, dry_run=True)
    assert (await pay(wallet, "paid")).charged_usdc == Decimal("0.01")
    assert fault(sandbox)["fired"] == 0 and fault(sandbox)["dryRun"] is True
    with pytest.raises(errors.UpstreamError):
        await wallet.dry_run("x402", WEBSEARCH_ID, SEARCH_INPUTS)
    assert fault(sandbox)["remaining"] == 0


async def test_weather_meets_both_and_dry_run_false_only_payments(wallet, sandbox):
    sandbox.state.faults.add("error", routes=["proxy"])
    with pytest.raises(errors.UpstreamError):
        await wallet.dry_run("x402", WEBSEARCH_ID, SEARCH_INPUTS)
    with pytest.raises(errors.UpstreamError):
        await pay(wallet, "k-1")
    assert fault(sandbox)["fired"] == 2 and fault(sandbox)["dryRun"] is None
    sandbox.state.faults.set("error", routes=["proxy"], dry_run=False)
    assert (await wallet.dry_run("x402", WEBSEARCH_ID, SEARCH_INPUTS)).estimated_usdc
    with pytest.raises(errors.UpstreamError):
        await pay(wallet, "k-2")


def test_the_switch_takes_dry_run_in_camel_case(sandbox):
    admin = {"Authorization": f"Bearer {sandbox.state.api_key}"}
    with httpx.Client(base_url=sandbox.base_url, timeout=10) as http:
        armed = http.post(
            "/sandbox/faults", json={"kind": "drop", "count": 2, "dryRun": True}, headers=admin
        )
    assert armed.status_code == 201
    assert armed.json()["fault"]["dryRun"] is True


async def test_a_fault_armed_before_the_request_fails_its_payment_not_its_intake(runtime, sandbox):
    """Through the console: the error armed for the payment lets the dry run pass (the request
    waits for the operator, priced), then fails the approved call, nothing charged."""
    sandbox.state.faults.add("error", routes=["proxy"], count=1, status=502)
    ticket = await submit(runtime)
    request_id = ticket["request_id"]
    pending = await eventually(
        lambda: (r := runtime.broker.get(request_id)).state == State.pending and r
    )
    assert pending.estimate is not None and fault(sandbox)["fired"] == 0
    async with operator(runtime) as console:
        await console.call("approvals.approve", {"request_id": request_id})
    failed = await eventually(
        lambda: (r := runtime.broker.get(request_id)).state == State.failed and r
    )
    assert "502" in (failed.reason or "")
    assert fault(sandbox)["remaining"] == 0 and sandbox.state.charges == []
