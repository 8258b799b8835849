"""The console's one canonical JSON: keys sorted, no spaces, text as it is (not escaped to
ASCII). The audit chain links and seals it, mandates and the facts an operator was shown are
hashed in it, a repeated call is keyed by it, and the sandbox seeds its answers with it. Every
ledger written so far holds these bytes, so they never change (tests/ledger/test_audit.py pins
them).
"""

from __future__ import annotations

import json
from typing import Any

# Made once: json.dumps with options builds this same encoder at every call (several a decision).
_ENCODER = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def canonical_json(value: Any) -> str:
    return _ENCODER.encode(value)
