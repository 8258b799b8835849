"""The mandate as a record: what each kind of approval pins, its canonical JSON and digest (the
same however it is indented, another once anything is edited), its times written as UTC, and
the recipient line the screens and the command line print."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest
from mandates import mandate
from pydantic import ValidationError

from svc_console.core.mandate import (
    LIFETIME_S,
    Mandate,
    MandateDecider,
    inputs_digest,
    mandate_for,
    pays_to,
    short_address,
)
from svc_console.core.models import Estimate, Evidence, Kind, SpendRequest
from svc_console.core.states import State
from svc_console.sandbox.catalog import WEBSEARCH_ID, catalog

RECORD = catalog().get(WEBSEARCH_ID)
PAY_TO = "0x5A9dB0C5a9dB0c5a9db0C5a9dB0C5A9db0C5A9D0"
AT = 1_795_000_000.5


def request(kind: Kind, **fields: object) -> SpendRequest:
    return SpendRequest(
        id="req_1",
        agent="scout",
        agent_verified=True,
        kind=kind,
        inputs={"query": "heat pumps"},
        purpose="p",
        state=State.pending,
        created_at=AT,
        updated_at=AT,
        **fields,
    )


DECIDERS = [MandateDecider(by="alice", evidence=Evidence(channel="tui", uid=1000))]


def test_a_market_call_is_the_proxys_to_sign_and_names_no_recipient():
    assert RECORD is not None
    estimate = Estimate(amount_usdc="0.01", chain="base", protocol="x402")
    terms = mandate_for(
        request(Kind.market_call, endpoint_id=WEBSEARCH_ID),
        RECORD,
        estimate,
        ceiling=Decimal("0.01"),
        deciders=DECIDERS,
        at=AT,
    )
    assert (terms.signed_by, terms.scheme, terms.recipient) == ("wallet_proxy", "x402/fetch", None)
    assert (terms.network, terms.provider) == ("eip155:8453", "prov_searchly")
    assert terms.asset == "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913"  # USDC on base
    assert terms.inputs_sha256 == inputs_digest({"query": "heat pumps"})
    assert (terms.approved_at, terms.valid_until) == (int(AT), int(AT) + LIFETIME_S)


@pytest.mark.parametrize(("kind", "price"), [(Kind.breed_agent, 10), (Kind.merge_models, 15)])
def test_a_compute_tool_pays_exactly_its_price_whatever_was_quoted(kind: Kind, price: int):
    assert RECORD is not None
    quoted = Estimate(amount_usdc="3", chain="base", protocol="x402", pay_to=PAY_TO, scheme="exact")
    terms = mandate_for(request(kind), RECORD, quoted, ceiling=Decimal(3), deciders=DECIDERS, at=AT)
    assert (terms.max_usdc, terms.exact) == (Decimal(price), True)
    assert (terms.signed_by, terms.recipient) == ("console", PAY_TO)


def test_the_digest_is_of_the_canonical_json_however_it_is_printed():
    terms = mandate(at=AT)
    printed = terms.printed()
    assert printed.startswith("{\n  ") and "\n" in printed
    again = Mandate.parse(printed)
    assert again.digest == terms.digest
    data = json.loads(printed)
    assert data["valid_until"] == "2026-11-18T12:06:40Z"
    assert data["max_usdc"] == "0.25"  # a decimal string, never a float
    assert Mandate.parse(json.dumps(data, separators=(",", ":"))).digest == terms.digest
    for field, value in (("recipient", "0x" + "ab" * 20), ("max_usdc", "0.26")):
        assert Mandate.parse(json.dumps({**data, field: value})).digest != terms.digest


def test_text_an_agent_wrote_is_printed_escaped():
    terms = mandate(agent="bot\x1b[2J\u202eevil")
    assert "\x1b" not in terms.printed() and "\u202e" not in terms.printed()
    assert Mandate.parse(terms.printed()) == terms


@pytest.mark.parametrize(
    "change",
    [{"valid_until": "tomorrow"}, {"surprise": 1}, {"max_usdc": "-1"}, {"version": 2}],
)
def test_what_is_not_a_mandate_is_refused(change: dict[str, object]):
    data = {**json.loads(mandate(at=AT).printed()), **change}
    with pytest.raises(ValidationError):
        Mandate.parse(json.dumps(data))


def test_the_recipient_line():
    assert RECORD is not None
    search = Estimate(amount_usdc="0.01", chain="base", protocol="x402")
    assert pays_to(Kind.market_call, search, RECORD) == (
        "none in the quote: the wallet proxy pays Searchly itself"
    )
    paid = search.model_copy(update={"pay_to": PAY_TO})
    assert pays_to(Kind.dataset, paid, RECORD) == "0x5A9d…A9D0 (Searchly)"
    free = search.model_copy(update={"amount_usdc": Decimal(0)})
    assert pays_to(Kind.dataset, free, RECORD) == "nothing to pay"
    assert short_address(None) == "none"
