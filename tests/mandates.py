"""Mandates made by hand, for tests of the signer and of what reads them: one approval's terms,
changed where a test says."""

from __future__ import annotations

import time
from decimal import Decimal
from typing import Any

from svc_console.core.mandate import LIFETIME_S, Mandate, MandateDecider, inputs_digest
from svc_console.core.models import Evidence, Kind
from svc_console.core.networks import USDC_ASSETS

BASE = "eip155:8453"
BASE_USDC = USDC_ASSETS[BASE]


def mandate(*, at: float | None = None, inputs: dict[str, Any] | None = None, **changes: Any):
    """A console-signed x402 mandate for 0.25 USDC on base, approved `at` (now) by an operator
    at the TUI; `changes` replace any field."""
    at = time.time() if at is None else at
    fields: dict[str, Any] = {
        "request_id": "req_test",
        "agent": "tester",
        "agent_verified": True,
        "kind": Kind.dataset,
        "dataset_id": "ds_test",
        "inputs_sha256": inputs_digest(inputs or {}),
        "provider": "prov_test",
        "provider_name": "Test Provider",
        "recipient": "0x" + "12" * 19 + "ab",
        "asset": BASE_USDC,
        "network": BASE,
        "chain": "base",
        "scheme": "exact",
        "signed_by": "console",
        "max_usdc": Decimal("0.25"),
        "approved_at": int(at),
        "valid_until": int(at) + LIFETIME_S,
        "deciders": [MandateDecider(by="alice", evidence=Evidence(channel="tui", uid=1000))],
    }
    fields.update(changes)
    return Mandate(**fields)
