"""The pure domain: money, the state machine, inert text, secret patterns, risk flags."""

from __future__ import annotations

from decimal import Decimal

import pytest

from svc_console.core import risk, secrets_scan
from svc_console.core.models import EndpointRecord, Estimate
from svc_console.core.money import format_usdc, from_atomic, parse_usdc, to_atomic
from svc_console.core.sanitize import inert, inert_line
from svc_console.core.states import FINAL, IllegalTransition, State, check_transition


@pytest.mark.parametrize(
    ("raw", "expected"), [("0.01", "0.01"), (1, "1.00"), ("2.5", "2.50"), ("0.0035", "0.0035")]
)
def test_usdc_round_trips_exactly(raw, expected):
    amount = parse_usdc(raw)
    assert format_usdc(amount) == expected
    assert from_atomic(to_atomic(amount)) == amount


@pytest.mark.parametrize("raw", ["-1", "NaN", "Infinity", "0.0000001", "two", True, None, "1e9"])
def test_bad_usdc_amounts_are_refused(raw):
    with pytest.raises(ValueError):
        parse_usdc(raw)


def test_state_machine_refuses_execution_without_approval():
    check_transition(State.approved, State.executing)
    for start in (State.received, State.inspecting, State.pending, State.denied):
        with pytest.raises(IllegalTransition):
            check_transition(start, State.executing)
    for final in FINAL:
        with pytest.raises(IllegalTransition):
            check_transition(final, State.pending)


@pytest.mark.parametrize(
    ("hostile", "visible"),
    [
        ("\x1b[31mred", "<ESC>[31mred"),
        ("\x1b]52;c;SGVsbG8=\x07", "<ESC>]52;c;SGVsbG8=<BEL>"),
        ("\x1b]8;;https://evil.example\x1b\\link", "<ESC>]8;;https://evil.example<ESC>\\link"),
        ("abc\u202edef", "abc<U+202E>def"),
        ("zero\u200bwidth", "zero<U+200B>width"),
        ("over\rwrite", "over<CR>write"),
        ("\x9b2J", "<CSI>2J"),
        ("tag\U000e0041", "tag<U+E0041>"),
        ("line\u2028break", "line<U+2028>break"),
    ],
)
def test_inert_makes_control_sequences_visible(hostile, visible):
    assert inert(hostile) == visible


def test_inert_keeps_markup_literal_and_cuts_long_values():
    assert inert("[@click=app.quit]x[/]") == "[@click=app.quit]x[/]"
    cut = inert("a" * 50, limit=10)
    assert cut == "aaaaaaaaaa… [40 more characters]"
    assert inert_line("two\nlines\tand tab") == "two⏎lines and tab"


def test_secret_patterns_find_and_mask_keys_but_show_emails():
    inputs = {
        "key": "0x" + "ab" * 32,
        "nested": [{"auth": "Bearer abcdefghijklmnopqrstuvwxyz"}],
        "api": "sk_live_abcdefghijkl",
        "contact": "jane@example.org",
        "query": "plain words",
    }
    kinds = {(path, kind) for path, kind, _ in secrets_scan.find(inputs)}
    assert kinds == {
        ("key", "evm_private_key"),
        ("nested[0].auth", "bearer_token"),
        ("api", "api_key"),
        ("contact", "email"),
    }
    masked = secrets_scan.mask(inputs)
    assert "ab" * 32 not in str(masked) and "abcdefghijkl" not in masked["api"]
    assert masked["contact"] == "jane@example.org" and masked["query"] == "plain words"


def _endpoint(**overrides) -> EndpointRecord:
    record = {
        "id": "ep_x", "name": "X", "provider": "prov_x", "providerName": "Prov X",
        "origin": "publisher", "domain_type": "A7", "product_class": "B1", "chains": ["base"],
        "protocols": ["x402"], "pricing": {"model": "fixed", "amountUsdc": "0.01"},
        "verified": True, "qualityScore": 0.95, "reliability": 0.99,
    }  # fmt: skip
    return EndpointRecord.model_validate({**record, **overrides})


def test_risk_of_a_clean_verified_endpoint_is_only_first_use():
    estimate = Estimate(amount_usdc=Decimal("0.01"), chain="base", protocol="x402")
    flags = risk.assess(_endpoint(), estimate, {"query": "q"}, first_use_of_provider=True)
    assert [f.code for f in flags] == ["first_use"]
    assert risk.assess(_endpoint(), estimate, {}, first_use_of_provider=False) == []


def test_risk_flags_origin_quality_domain_price_secrets_and_balance():
    endpoint = _endpoint(
        verified=False, origin="registry", qualityScore=0.5, reliability=0.8, domain_type="A8"
    )
    estimate = Estimate(
        amount_usdc=Decimal("0.05"),
        min_usdc=Decimal("0.02"),
        max_usdc=Decimal("0.10"),
        chain="base",
        protocol="x402",
    )
    flags = risk.assess(
        endpoint,
        estimate,
        {"url": "https://x.example/?k=sk_live_abcdefghijk"},
        first_use_of_provider=False,
        agent_max_usdc=Decimal("0.05"),
        balance_usdc=Decimal("0.01"),
    )
    by_code = {f.code: f for f in flags}
    assert set(by_code) == {
        "unverified", "ingested", "low_quality", "unreliable", "domain_A8", "dynamic_price",
        "above_agent_max", "low_balance", "input_api_key",
    }  # fmt: skip
    assert by_code["input_api_key"].severity == "high"
    assert "0.02-0.10" in by_code["dynamic_price"].reason
