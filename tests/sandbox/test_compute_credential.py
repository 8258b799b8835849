"""The compute tools check the caller's credential with a real check, before anything is charged,
and the check holds under `python -O` (which drops every `assert`): a signed payment offered by a
caller with no credential is refused, the wallet keeps its balance, and the same signature still
pays once for a caller that has one."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]

ANONYMOUS_PAYMENT = """
import json, sys
from signing import sign_x402
from svc_console.sandbox import tools
from svc_console.sandbox.catalog import catalog
from svc_console.sandbox.state import SandboxState
from svc_console.sandbox.x402 import X402Gate

state = SandboxState()
listing, gate, where = catalog(), X402Gate(state), "http://127.0.0.1:9"
signed_in = tools.Context(state, listing, gate, where, state.accounts.caller(state.api_key))
anonymous = tools.Context(state, listing, gate, where, None)
required = tools.call(signed_in, "svc_breed_agent", {})["structuredContent"]["paymentRequired"]
signature = sign_x402(required)
before = str(state.balance)
refused = tools.call(anonymous, "svc_breed_agent", {"payment_signature": signature})
after = str(state.balance)
paid = tools.call(signed_in, "svc_breed_agent", {"payment_signature": signature})
print(json.dumps({
    "optimize": sys.flags.optimize,
    "refused": refused["structuredContent"], "refused_is_error": refused["isError"],
    "balance": [before, after, str(state.balance)],
    "paid": paid["structuredContent"].get("chargedUsdc"),
}))
"""


def test_a_compute_tool_refuses_a_caller_without_a_credential_even_under_python_o():
    done = subprocess.run(
        [sys.executable, "-O", "-c", ANONYMOUS_PAYMENT],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=TESTS,
    )
    assert done.returncode == 0, done.stderr
    said = json.loads(done.stdout)
    assert said["optimize"] == 1  # asserts were off
    assert said["refused_is_error"] is True
    assert said["refused"]["error"] == {
        "code": "UNAUTHORIZED",
        "message": "svc_breed_agent needs an sk_live_ API key or an OAuth token (mcp:tools)",
    }
    before, after, paid_after = said["balance"]
    assert after == before  # nothing charged for the refused call
    assert said["paid"] == "10.00" and paid_after != before  # the signature was never spent
