"""The digest of a request's facts as the operator is shown them: the same for the same facts
however they were read, another for any change a decision must not survive, never moved by the
clock."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from svc_console.core.models import Estimate, RiskFlag, Severity, SpendRequest, Verdict
from svc_console.core.shown_facts import (
    DIGEST,
    approval_ceiling,
    ceiling,
    changed_since_shown,
    facts_digest,
    shown_facts,
)
from svc_console.core.states import State
from svc_console.sandbox.catalog import catalog


def waiting(request_id: str = "req_a", **changes: Any) -> SpendRequest:
    """A web search waiting for the operator, as intake leaves it."""
    record = catalog().get("ep_websearch_basic")
    assert record is not None
    request = SpendRequest(
        id=request_id,
        agent="twin-bot",
        agent_verified=True,
        kind="market_call",
        endpoint_id=record.id,
        inputs={"query": "the same"},
        purpose="the same",
        max_usdc=Decimal("0.50"),
        state=State.pending,
        created_at=1000.0,
        updated_at=1000.0,
        expires_at=1900.0,
        endpoint=record,
        estimate=Estimate(
            amount_usdc=Decimal("0.01"),
            min_usdc=Decimal("0.01"),
            max_usdc=Decimal("0.02"),
            chain="base",
            protocol="x402",
        ),
        risk=[RiskFlag(code="first_use", severity=Severity.info, reason="first call")],
        verdict=Verdict(outcome="ask", summary="the operator decides"),
    )
    return request.model_copy(update=changes)


def test_a_digest_is_a_sha256_and_the_same_for_the_same_facts():
    digest = facts_digest(waiting())
    assert DIGEST.match(digest)
    # Read again (a copy through JSON, as the operator socket carries it): the same digest.
    again = SpendRequest.model_validate_json(waiting().model_dump_json())
    assert facts_digest(again) == digest


def test_the_clock_moves_no_digest():
    shown = waiting()
    later = shown.model_copy(update={"updated_at": 1500.0, "expires_at": 2500.0})
    assert facts_digest(later) == facts_digest(shown)


@pytest.mark.parametrize(
    "change",
    [
        {"id": "req_b"},  # another request with the same agent, inputs and purpose
        {"agent": "twin-bot2"},
        {"agent_verified": False},
        {"kind": "dataset"},
        {"endpoint_id": "ep_other"},
        {"dataset_id": "ds_other"},
        {"max_usdc": Decimal("0.015")},  # the ceiling falls below the estimate's bound
        {"verdict": Verdict(outcome="ask", summary="over the warn level")},
        {"verdict": Verdict(outcome="deny", summary="the operator decides")},
        {"verdict": None},
        {"risk": []},
        {"risk": [RiskFlag(code="first_use", severity=Severity.warn, reason="first call")]},
        {"state": State.approved},
        {"reason": "the provider asked 0.03 USDC, above the approved 0.02; nothing was paid"},
        {"estimate": None},
    ],
    ids=lambda change: next(iter(change)),
)
def test_any_change_of_a_shown_fact_changes_the_digest(change: dict[str, Any]):
    assert facts_digest(waiting(**change)) != facts_digest(waiting())


def test_the_provider_is_bound():
    shown = waiting()
    assert shown.endpoint is not None
    other = shown.endpoint.model_copy(update={"provider_name": "Someone Else", "verified": False})
    assert facts_digest(shown.model_copy(update={"endpoint": other})) != facts_digest(shown)


def test_every_field_of_the_estimate_is_bound():
    """The estimate is digested whole: a field added to it (the quoted recipient, asset,
    network) is bound without a change here."""
    shown = waiting()
    estimate = shown.estimate
    assert estimate is not None
    for name in type(estimate).model_fields:
        value = getattr(estimate, name)
        if isinstance(value, Decimal):
            other: Any = value + Decimal("0.01")
        elif name == "protocol":
            other = "mpp" if value == "x402" else "x402"
        elif isinstance(value, str):
            other = f"{value}-changed"
        elif value is None:
            continue  # unset here, and so in either digest
        else:
            pytest.fail(f"no other value for the estimate's {name} ({value!r}): teach the test")
        changed = shown.model_copy(update={"estimate": estimate.model_copy(update={name: other})})
        assert facts_digest(changed) != facts_digest(shown), name


def test_repricing_changes_the_digest():
    shown = waiting()
    dearer = Estimate(amount_usdc=Decimal("0.03"), chain="base", protocol="x402")
    repriced = shown.model_copy(update={"estimate": dearer})
    assert facts_digest(repriced) != facts_digest(shown)
    assert shown_facts(repriced)["ceiling_usdc"] == "0.03"


def test_the_ceiling_is_the_estimates_upper_bound_never_above_the_agents_max():
    ranged = Estimate(
        amount_usdc=Decimal("0.01"), max_usdc=Decimal("0.02"), chain="base", protocol="x402"
    )
    for max_usdc, expected in (
        (None, Decimal("0.02")),
        (Decimal("0.015"), Decimal("0.015")),
        (Decimal("9"), Decimal("0.02")),
    ):
        request = waiting(max_usdc=max_usdc, estimate=ranged)
        assert ceiling(request) == approval_ceiling(request, ranged) == expected
    assert ceiling(waiting(estimate=None)) is None


def test_the_refusal_says_what_the_request_is_now():
    now = waiting(estimate=Estimate(amount_usdc=Decimal("0.03"), chain="base", protocol="x402"))
    assert changed_since_shown(now) == (
        "req_a changed since it was shown: it is now pending, up to 0.03 USDC on base (x402),"
        " verdict ask, 1 risk flag; nothing was decided"
    )
    hostile = waiting(
        estimate=Estimate(amount_usdc=Decimal("1"), chain="\x1b[31mbase\u202e", protocol="mpp")
    )
    said = changed_since_shown(hostile)
    assert "\x1b" not in said and "\u202e" not in said
