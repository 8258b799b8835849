"""Every secret the console holds is refused at the socket in every common spelling, and nothing
of the refused submission is kept.

The secrets: the API key, the wallet token, the account wallet's EVM and Solana keys (the wallet
config sandbox play saved), the web console's token, an agent's token and an operator's token
(known by their marks: only their hashes are kept). The spellings: plain, base64, base64url (also
behind other text, so at every alignment), hex, URL-encoded (every byte), the raw key bytes of a
wallet key in base64 and hex and as a list of numbers; and a secret split across two fields, the
second half sent first. Over the real socket, against a broker logging at DEBUG to its file;
afterwards no request, no event, and no file under the home holds what was sent.
"""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Callable

import base58
import pytest
from test_secret_inputs import ENDPOINT, REFUSAL_TAIL, counts, stored_holding
from test_secret_inputs import runtime as runtime  # the fixture: the broker logging at DEBUG

from svc_console.agent import AgentError, AsyncAgent
from svc_console.config.agent_registry import AgentRegistry
from svc_console.config.credentials import Credentials
from svc_console.config.operator_accounts import OperatorAccounts
from svc_console.config.paths import Paths
from svc_console.core import secrets_scan
from svc_console.runtime import Runtime
from svc_console.tui.web.login import login_token

EVM_KEY = "0x" + os.urandom(32).hex()
SOLANA_KEY = base58.b58encode(os.urandom(64)).decode()


@pytest.fixture
def make_runtime(make_runtime: Callable[..., Runtime], paths: Paths) -> Callable[..., Runtime]:
    """Before the broker starts: a wallet config saved by sandbox play (its EVM and Solana keys)
    and the web console's token, as the console would hold them."""
    Credentials.for_sandbox(paths).save_wallet_config(
        {
            "evm": {"address": "0x" + "1" * 40, "privateKey": EVM_KEY},
            "solana": {"address": "So1" + "1" * 40, "privateKey": SOLANA_KEY},
        }
    )
    login_token(paths.home)
    return make_runtime


def held(runtime: Runtime) -> dict[str, str]:
    """Every secret this console holds, by name."""
    paths, state = runtime.paths, runtime.sandbox.state
    web_token, _made = login_token(paths.home)
    return {
        "API key": state.api_key,
        "wallet token": state.api_token,
        "EVM key": EVM_KEY,
        "Solana key": SOLANA_KEY,
        "payer key": "0x" + bytes(runtime.market.signer._account.made().key).hex(),
        "web token": web_token,
        "agent token": AgentRegistry(paths.agent_registry).add("someone-else"),
        "operator token": OperatorAccounts(paths.operator_accounts).add("alice"),
    }


def spellings(secret: str) -> dict[str, str]:
    """One secret as an agent might send it on."""
    data = secret.encode()
    raw = bytes.fromhex(secret[2:]) if secret.startswith("0x") else None
    if secret == SOLANA_KEY:
        raw = base58.b58decode(secret)
    forms = {
        "plain": secret,
        "base64": base64.b64encode(data).decode(),
        "base64 after other text": base64.b64encode(b"key: " + data).decode(),
        "base64url, unpadded": base64.urlsafe_b64encode(b"k=" + data).decode().rstrip("="),
        "hex": data.hex(),
        "HEX": data.hex().upper(),
        "URL-encoded": "".join(f"%{byte:02X}" for byte in data),
        "base64, URL-encoded": base64.b64encode(data).decode().replace("+", "%2B"),
    }
    if raw is not None:
        forms |= {
            "its bytes in base64": base64.b64encode(raw).decode(),
            "its bytes in hex": raw.hex(),
            "its bytes as numbers": json.dumps(list(raw)),
        }
    return forms


def recorded(runtime: Runtime, text: str) -> list[str]:
    """Where the console keeps `text`, but for the files that hold its own secrets on purpose
    (the wallet config, the web console's token)."""
    kept = ("web.token", ".svc-wallet.json")
    return [place for place in stored_holding(runtime, text) if not place.endswith(kept)]


async def refused(agent: AsyncAgent, **fields: object) -> dict[str, str]:
    with pytest.raises(AgentError) as refusal:
        await agent.submit(endpoint_id=ENDPOINT, **fields)
    assert refusal.value.reason == "invalid_params"
    assert refusal.value.message.endswith(REFUSAL_TAIL)
    return refusal.value.data


async def test_every_secret_the_console_holds_is_refused_in_every_spelling(runtime: Runtime):
    secrets = held(runtime)
    before = counts(runtime)
    sent: list[str] = []
    async with AsyncAgent("spelling-bot", runtime.paths.socket) as agent:
        for name, secret in secrets.items():
            for spelling, value in spellings(secret).items():
                sent.append(value)
                data = await refused(agent, inputs={"query": f"see {value} ok"}, purpose="p")
                assert data["field"] == "inputs.query", (name, spelling)
                # The API key is an sk_live_ key: plain, known by its shape first.
                assert data["kind"] in (secrets_scan.OWN_KEY, "api_key"), (name, spelling)
    assert counts(runtime) == before
    for value in sent:
        assert recorded(runtime, value) == []


async def test_a_secret_split_across_two_fields_is_refused(runtime: Runtime):
    secrets = held(runtime)
    before = counts(runtime)
    async with AsyncAgent("split-bot", runtime.paths.socket) as agent:
        for name, secret in secrets.items():
            half = len(secret) // 2
            head, tail = secret[:half], secret[half:]
            # The second half sent first: known by a half of it, wherever it is.
            if name not in ("agent token", "operator token"):
                data = await refused(agent, inputs={"b": tail, "a": head}, purpose="p")
                assert data["field"] in ("inputs.b", "inputs.a"), name
            # Cut inside its first letters, in the order sent: the two fields read as one.
            data = await refused(
                agent, inputs={"a": f"x {secret[:4]}", "b": secret[4:]}, purpose="p"
            )
            assert data == {
                "reason": "invalid_params",
                "field": "inputs.a (with inputs.b)",
                "kind": secrets_scan.OWN_KEY,
            }, name
            # And across the inputs and the purpose.
            data = await refused(agent, inputs={"note": secret[:4]}, purpose=secret[4:])
            assert data["field"] == "inputs.note (with purpose)", name
    assert counts(runtime) == before
    for secret in secrets.values():
        assert recorded(runtime, secret[len(secret) // 2 :]) == []


async def test_what_only_resembles_a_secret_still_passes(runtime: Runtime):
    """Hex digests, base64 data and ordinary text go through as before."""
    async with AsyncAgent("honest-bot", runtime.paths.socket) as agent:
        for query in (
            "0x" + os.urandom(32).hex(),  # a transaction hash
            base64.b64encode(os.urandom(300)).decode(),  # an image
            "svc console operators and agents tokens",
            "prices in www.example.org and 100%25 of them",
        ):
            ticket = await agent.submit(endpoint_id=ENDPOINT, inputs={"query": query}, purpose="p")
            assert ticket["state"] == "received"


async def test_an_agent_name_holding_a_secret_is_refused_and_not_logged(
    runtime: Runtime, paths: Paths
):
    secret = runtime.sandbox.state.api_token
    name = secret[:40]  # an agent name may hold 64 letters of it
    before = counts(runtime)
    async with AsyncAgent(name, runtime.paths.socket) as agent:
        data = await refused(agent, inputs={"query": "q"}, purpose="p")
    assert data["field"] == "agent"
    assert counts(runtime) == before
    log_text = (paths.logs / "svc-console.log").read_text()
    assert "refused a submission from an agent whose name holds a secret: agent" in log_text
    assert recorded(runtime, secret[:20]) == []
