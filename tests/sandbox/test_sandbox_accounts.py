"""The sandbox's accounts over real HTTP: one-time codes in the outbox (and nowhere else), login,
wallet connection, OAuth client credentials, wallets, usage and the SKILLS.md policy."""

from __future__ import annotations

import base64
import hashlib
import itertools
import json
import stat
import tempfile
from collections.abc import Iterator
from decimal import Decimal
from email import policy
from email.parser import BytesParser
from pathlib import Path
from typing import Any

import base58
import httpx
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from eth_account import Account
from helpers import FakeClock
from signing import sign_x402

from svc_console.config.paths import resolve_paths
from svc_console.sandbox import skills
from svc_console.sandbox.accounts import CODE_LIFETIME_S, TOKEN_LIFETIME_S
from svc_console.sandbox.catalog import WEBSEARCH_ID
from svc_console.sandbox.server import SandboxServer
from svc_console.sandbox.state import SandboxState

_addresses = itertools.count(1)


def new_email() -> str:
    return f"operator{next(_addresses)}@example.com"


@pytest.fixture(scope="module")
def server() -> Iterator[SandboxServer]:
    folder = Path(tempfile.mkdtemp(prefix="svc-acc-"))
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SVC_CONSOLE_HOME", str(folder))
        with SandboxServer() as running:
            running.state.set_balance(1000)
            yield running


@pytest.fixture(scope="module")
def state(server: SandboxServer) -> SandboxState:
    return server.state


@pytest.fixture(scope="module")
def http(server: SandboxServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.base_url, timeout=10) as client:
        yield client


@pytest.fixture
def clock(state: SandboxState) -> Iterator[FakeClock]:
    """The accounts' clock, moved by hand; the real one comes back after the test."""
    fake, real = FakeClock(), state.accounts.clock
    state.accounts.clock = fake
    yield fake
    state.accounts.clock = real


def bearer(secret: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {secret}"}


def code_for(state: SandboxState, email: str, purpose: str = "login") -> str:
    code = state.accounts.outbox.latest_code(email, purpose)
    assert code is not None
    return code


def login(http: httpx.Client, state: SandboxState, email: str | None = None) -> dict[str, Any]:
    email = email or new_email()
    assert http.post("/api/agent/auth/send-otp", json={"email": email}).status_code == 200
    answer = http.post(
        "/api/agent/auth/verify-otp", json={"email": email, "otp_code": code_for(state, email)}
    )
    assert answer.status_code == 200, answer.text
    return answer.json()


def refusal(response: httpx.Response, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    body = response.json()
    assert body["sandbox"] is True
    return body["error"]


# --- the outbox ------------------------------------------------------------------------------


def test_the_outbox_lives_under_svc_console_home(home: Path):
    assert resolve_paths().sandbox_outbox == home / "sandbox" / "outbox"
    assert SandboxState().outbox_dir == home / "sandbox" / "outbox"
    assert SandboxState(outbox=home / "elsewhere").outbox_dir == home / "elsewhere"


def test_a_code_is_one_eml_file_in_the_outbox_and_nowhere_else(home: Path):
    with SandboxServer() as running, httpx.Client(base_url=running.base_url) as http:
        answer = http.post("/api/agent/auth/send-otp", json={"email": "Ops@Example.COM "})
        outbox = home / "sandbox" / "outbox"
        files = list(outbox.iterdir())
    assert answer.status_code == 200
    assert answer.json() == {
        "sent": True,
        "email": "ops@example.com",
        "expiresInSeconds": 600,
        "delivery": "sandbox outbox (no e-mail leaves this machine)",
        "sandbox": True,
    }
    assert len(files) == 1 and files[0].suffix == ".eml"
    assert stat.S_IMODE(files[0].stat().st_mode) == 0o600
    assert stat.S_IMODE(outbox.stat().st_mode) == 0o700
    with open(files[0], "rb") as handle:
        message = BytesParser(policy=policy.default).parse(handle)
    assert message["To"] == "ops@example.com"
    assert "sandbox" in message["From"]
    assert message["Subject"] and message["Date"] and message["Message-ID"]
    assert message["X-Sandbox-Purpose"] == "login"
    text = message.get_body(preferencelist=("plain",)).get_content()
    code = text.split(" is ")[1][:6]
    assert code.isdigit() and len(code) == 6
    # The code is in that one file: not in the answer, not anywhere else under the home folder.
    assert code not in answer.text
    holders = [p for p in home.rglob("*") if p.is_file() and code.encode() in p.read_bytes()]
    assert holders == files


def test_each_code_is_its_own_message(http: httpx.Client, state: SandboxState):
    email = new_email()
    before = len(state.accounts.outbox.messages())
    for _ in range(2):
        http.post("/api/agent/auth/send-otp", json={"email": email})
    http.post("/api/connect/start", json={"email": email})
    messages = state.accounts.outbox.messages()[before:]
    assert len(messages) == 3
    purposes = [state.accounts.outbox.read(p)["X-Sandbox-Purpose"] for p in messages]
    assert purposes == ["login", "login", "connect"]


# --- login -------------------------------------------------------------------------------------


def test_first_login_returns_a_key_and_a_real_wallet_config_once(
    http: httpx.Client, state: SandboxState, server: SandboxServer
):
    email = new_email()
    first = login(http, state, email)
    assert first["apiKey"].startswith("sk_live_")
    assert first["agentId"].startswith("agent_")
    assert first["mcpServerUrl"] == server.base_url + "/api/mcp"
    assert first["firstLogin"] is True and first["sandbox"] is True
    config = first["walletConfig"]
    evm = Account.from_key(config["evm"]["privateKey"])
    assert evm.address == config["evm"]["address"]
    secret = base58.b58decode(config["solana"]["privateKey"])
    assert len(secret) == 64
    private = Ed25519PrivateKey.from_private_bytes(secret[:32])
    public = private.public_key().public_bytes(
        serialization.Encoding.Raw, serialization.PublicFormat.Raw
    )
    assert public == secret[32:] == base58.b58decode(config["solana"]["address"])
    assert set(config["chains"]) == {"base", "solana", "ethereum", "tempo"}

    second = login(http, state, email)
    assert "walletConfig" not in second and second["firstLogin"] is False
    assert second["agentId"] == first["agentId"]
    assert second["apiKey"] != first["apiKey"]
    # Both keys work, beside the state's own.
    for key in (first["apiKey"], second["apiKey"], state.api_key):
        assert http.get(f"/api/endpoints/{WEBSEARCH_ID}", headers=bearer(key)).status_code == 200
        assert http.get("/api/agent/wallets", headers=bearer(key)).status_code == 200
    # The private keys are gone from the sandbox once shown.
    assert config["evm"]["privateKey"] not in repr(vars(state.accounts))


def test_wrong_codes_are_refused_and_a_code_locks_after_five(
    http: httpx.Client, state: SandboxState
):
    email = new_email()
    http.post("/api/agent/auth/send-otp", json={"email": email})
    right = code_for(state, email)
    wrong = f"{(int(right) + 1) % 1_000_000:06d}"
    for left in (4, 3, 2, 1, 0):
        answer = http.post("/api/agent/auth/verify-otp", json={"email": email, "otp_code": wrong})
        error = refusal(answer, 400)
        assert error["code"] == "OTP_INVALID"
        assert error["attemptsLeft"] == left
    answer = http.post("/api/agent/auth/verify-otp", json={"email": email, "otp_code": right})
    assert refusal(answer, 400)["code"] == "OTP_LOCKED"


def test_a_used_code_is_refused(http: httpx.Client, state: SandboxState):
    email = new_email()
    login(http, state, email)
    used = code_for(state, email)
    answer = http.post("/api/agent/auth/verify-otp", json={"email": email, "otp_code": used})
    error = refusal(answer, 400)
    assert error["code"] == "OTP_USED"
    assert "already used" in error["message"]


def test_a_code_expires_after_ten_minutes(
    http: httpx.Client, state: SandboxState, clock: FakeClock
):
    late, in_time = new_email(), new_email()
    for email in (late, in_time):
        http.post("/api/agent/auth/send-otp", json={"email": email})
    clock.advance(CODE_LIFETIME_S - 1)
    body = {"email": in_time, "otp_code": code_for(state, in_time)}
    assert http.post("/api/agent/auth/verify-otp", json=body).status_code == 200
    clock.advance(1)
    body = {"email": late, "otp_code": code_for(state, late)}
    error = refusal(http.post("/api/agent/auth/verify-otp", json=body), 400)
    assert error["code"] == "OTP_EXPIRED"
    assert "10 minutes" in error["message"]


def test_only_the_newest_code_works(http: httpx.Client, state: SandboxState):
    email = new_email()
    http.post("/api/agent/auth/send-otp", json={"email": email})
    older = code_for(state, email)
    http.post("/api/agent/auth/send-otp", json={"email": email})
    newer = code_for(state, email)
    if older == newer:  # one chance in a million: the older code is then the newer one too
        pytest.skip("the two codes happen to be equal")
    answer = http.post("/api/agent/auth/verify-otp", json={"email": email, "otp_code": older})
    assert refusal(answer, 400)["code"] == "OTP_SUPERSEDED"
    answer = http.post("/api/agent/auth/verify-otp", json={"email": email, "otp_code": newer})
    assert answer.status_code == 200


def test_a_code_works_only_for_its_own_flow(http: httpx.Client, state: SandboxState):
    email = new_email()
    http.post("/api/agent/auth/send-otp", json={"email": email})
    body = {"email": email, "username": f"u{next(_addresses)}x", "otp": code_for(state, email)}
    error = refusal(http.post("/api/connect/complete", json=body), 400)
    assert error["code"] == "OTP_NOT_REQUESTED"
    unknown = {"email": new_email(), "otp_code": "123456"}
    error = refusal(http.post("/api/agent/auth/verify-otp", json=unknown), 400)
    assert error["code"] == "OTP_NOT_REQUESTED"


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/api/agent/auth/send-otp", {"email": "not-an-address"}, "email"),
        ("/api/agent/auth/send-otp", {}, "email"),
        ("/api/agent/auth/send-otp", {"email": 7}, "email"),
        ("/api/agent/auth/verify-otp", {"email": "a@example.com", "otp_code": "12345"}, "otp_code"),
        ("/api/agent/auth/verify-otp", {"email": "a@example.com", "otp_code": 123456}, "otp_code"),
        ("/api/agent/auth/verify-otp", {"email": "a@example.com"}, "otp_code"),
        ("/api/connect/complete", {"email": "a@example.com", "otp": "123456"}, "username"),
        (
            "/api/connect/complete",
            {"email": "a@example.com", "username": "No Spaces!", "otp": "123456"},
            "username",
        ),
    ],
)
def test_bad_fields_are_refused_by_name(http: httpx.Client, path, body, field):
    error = refusal(http.post(path, json=body), 400)
    assert error["code"] == "INVALID_PARAMS"
    assert error["message"].startswith(field)


def test_unknown_fields_and_bodies_that_are_not_objects_are_refused(http: httpx.Client):
    body = {"email": "a@example.com", "password": "x"}
    error = refusal(http.post("/api/agent/auth/send-otp", json=body), 400)
    assert "password" in error["message"]
    assert refusal(http.post("/api/agent/auth/send-otp", content=b"[1]"), 400)["code"] == (
        "INVALID_PARAMS"
    )


def test_an_address_gets_at_most_five_codes_in_ten_minutes(http: httpx.Client, state: SandboxState):
    email = new_email()
    for _ in range(5):
        assert http.post("/api/agent/auth/send-otp", json={"email": email}).status_code == 200
    error = refusal(http.post("/api/agent/auth/send-otp", json={"email": email}), 429)
    assert error["code"] == "TOO_MANY_CODES"
    assert 0 < error["retryAfterSeconds"] <= CODE_LIFETIME_S + 1
    # The last code sent still works.
    body = {"email": email, "otp_code": code_for(state, email)}
    assert http.post("/api/agent/auth/verify-otp", json=body).status_code == 200


# --- the wallet connection ----------------------------------------------------------------------


def connect(http: httpx.Client, state: SandboxState, email: str, username: str) -> httpx.Response:
    assert http.post("/api/connect/start", json={"email": email}).status_code == 200
    body = {"email": email, "username": username, "otp": code_for(state, email, "connect")}
    return http.post("/api/connect/complete", json=body)


def test_connect_returns_a_token_the_wallet_proxy_accepts_for_that_username(
    http: httpx.Client, state: SandboxState, server: SandboxServer
):
    email = new_email()
    answer = connect(http, state, email, "quant-desk")
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["username"] == "quant-desk"
    assert body["apiBase"] == server.base_url
    assert body["fundingUrl"] == f"{server.base_url}/fund/quant-desk"
    assert set(body["wallets"]) == {"base", "solana", "ethereum", "tempo"}
    evm = body["wallets"]["base"]
    assert evm.startswith("0x") and body["wallets"]["ethereum"] == evm == body["wallets"]["tempo"]
    assert len(base58.b58decode(body["wallets"]["solana"])) == 32
    assert http.get("/fund/quant-desk").status_code == 200

    token = body["apiToken"]
    proxy = {"endpointId": WEBSEARCH_ID, "inputs": {"query": "usdc"}, "dryRun": True}
    own = "/api/wallets/quant-desk/actions/x402/fetch"
    assert http.post(own, json=proxy, headers=bearer(token)).status_code == 200
    other = f"/api/wallets/{state.username}/actions/x402/fetch"
    assert refusal(http.post(other, json=proxy, headers=bearer(token)), 403)["code"] == (
        "NOT_YOUR_WALLET"
    )
    # The state's own token keeps working for its own wallet.
    assert http.post(other, json=proxy, headers=bearer(state.api_token)).status_code == 200
    # The same account logging in later sees the same addresses.
    wallets = http.get("/api/agent/wallets", headers=bearer(login(http, state, email)["apiKey"]))
    assert {w["chain"]: w["address"] for w in wallets.json()["wallets"]} == body["wallets"]
    assert "quant-desk" in wallets.json()["usernames"]


def test_a_username_of_another_account_is_refused_without_spending_the_code(
    http: httpx.Client, state: SandboxState
):
    assert connect(http, state, new_email(), "taken-name").status_code == 200
    email = new_email()
    answer = connect(http, state, email, "taken-name")
    assert refusal(answer, 409)["code"] == "USERNAME_TAKEN"
    body = {"email": email, "username": "free-name", "otp": code_for(state, email, "connect")}
    assert http.post("/api/connect/complete", json=body).status_code == 200
    answer = connect(http, state, new_email(), state.username)
    assert refusal(answer, 409)["code"] == "USERNAME_TAKEN"


# --- OAuth ---------------------------------------------------------------------------------------


def token(http: httpx.Client, secret: str, scope: str | None = None, basic: bool = True):
    data = {"grant_type": "client_credentials"}
    headers = {}
    if scope is not None:
        data["scope"] = scope
    if basic:
        headers["Authorization"] = "Basic " + base64.b64encode(f":{secret}".encode()).decode()
    else:
        data["client_secret"] = secret
    return http.post("/oauth/token", data=data, headers=headers)


def test_client_credentials_give_a_token_with_the_scope_asked(
    http: httpx.Client, state: SandboxState
):
    for basic in (True, False):
        answer = token(http, state.api_key, basic=basic)
        assert answer.status_code == 200
        assert answer.headers["cache-control"] == "no-store"
        body = answer.json()
        assert body["token_type"] == "Bearer" and body["scope"] == "mcp:tools"
        assert body["expires_in"] == TOKEN_LIFETIME_S
    read = token(http, state.api_key, "account:read").json()
    assert read["scope"] == "account:read"
    assert http.get("/api/agent/policies", headers=bearer(read["access_token"])).status_code == 200
    tools = token(http, state.api_key).json()["access_token"]
    assert http.get("/api/agent/policies", headers=bearer(tools)).status_code == 401
    # A token is not an API key: the REST catalogue still wants the key.
    assert http.get(f"/api/endpoints/{WEBSEARCH_ID}", headers=bearer(tools)).status_code == 401


CREDENTIALS = {"grant_type": "client_credentials", "client_secret": "KEY"}


@pytest.mark.parametrize(
    ("data", "status", "error"),
    [
        ({**CREDENTIALS, "client_secret": "sk_live_nope"}, 401, "invalid_client"),
        ({"grant_type": "client_credentials"}, 401, "invalid_client"),
        ({**CREDENTIALS, "grant_type": "password"}, 400, "unsupported_grant_type"),
        ({"client_secret": "KEY"}, 400, "invalid_request"),
        ({**CREDENTIALS, "scope": "admin"}, 400, "invalid_scope"),
    ],
)
def test_the_token_endpoint_refuses_as_rfc_6749_says(
    http: httpx.Client, state: SandboxState, data, status, error
):
    data = {k: state.api_key if v == "KEY" else v for k, v in data.items()}
    answer = http.post("/oauth/token", data=data)
    assert answer.status_code == status
    assert answer.json()["error"] == error
    assert state.api_key not in answer.text


def test_a_token_expires(http: httpx.Client, state: SandboxState, clock: FakeClock):
    access = token(http, state.api_key, "account:read").json()["access_token"]
    assert http.get("/api/agent/wallets", headers=bearer(access)).status_code == 200
    clock.advance(TOKEN_LIFETIME_S)
    assert http.get("/api/agent/wallets", headers=bearer(access)).status_code == 401


def test_oauth_metadata_names_the_token_endpoint_and_scopes(
    http: httpx.Client, server: SandboxServer
):
    meta = http.get("/.well-known/oauth-authorization-server").json()
    assert meta["token_endpoint"] == server.base_url + "/oauth/token"
    assert meta["grant_types_supported"] == ["client_credentials"]
    assert {"mcp:tools", "account:read"} <= set(meta["scopes_supported"])
    resource = http.get("/.well-known/oauth-protected-resource/api/mcp").json()
    assert resource["resource"] == server.base_url + "/api/mcp"
    assert resource["scopes_supported"] == ["mcp:tools"]


# --- wallets, usage, policies --------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/api/agent/wallets", "/api/agent/usage", "/api/agent/policies"])
@pytest.mark.parametrize("credential", [None, "sk_live_wrong", "not-a-key"])
def test_account_routes_need_a_key(http: httpx.Client, path, credential):
    headers = bearer(credential) if credential else {}
    answer = http.get(path, headers=headers)
    assert refusal(answer, 401)["code"] == "UNAUTHORIZED"
    assert answer.headers["www-authenticate"].startswith("Bearer")


def test_wallets_show_the_login_addresses_and_the_balance(http: httpx.Client, state: SandboxState):
    first = login(http, state)
    body = http.get("/api/agent/wallets", headers=bearer(first["apiKey"])).json()
    assert body["agentId"] == first["agentId"]
    chains = {w["chain"]: w for w in body["wallets"]}
    assert set(chains) == {"base", "solana", "ethereum", "tempo"}
    assert chains["base"]["address"] == first["walletConfig"]["evm"]["address"]
    assert chains["base"]["network"] == "eip155:8453"
    assert chains["solana"]["address"] == first["walletConfig"]["solana"]["address"]
    assert Decimal(body["balanceUsdc"]) == state.balance and body["pooled"] is True
    assert "privateKey" not in json.dumps(body)


def test_usage_lists_every_charge_with_its_receipt_and_pages(
    http: httpx.Client, state: SandboxState
):
    start = len(state.charges)
    proxy = {
        "endpointId": WEBSEARCH_ID,
        "inputs": {"query": "usage history"},
        "dryRun": False,
        "approved": True,
        "idempotencyKey": "usage-test-1",
    }
    path = f"/api/wallets/{state.username}/actions/x402/fetch"
    paid = http.post(path, json=proxy, headers=bearer(state.api_token)).json()
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call"}
    mcp = {"Authorization": f"Bearer {state.api_key}", "Content-Type": "application/json"}
    params = {"name": "svc_breed_agent", "arguments": {}}
    challenge = http.post("/api/mcp", json={**call, "params": params}, headers=mcp).json()
    required = challenge["result"]["structuredContent"]["paymentRequired"]
    params["arguments"]["payment_signature"] = sign_x402(required)
    job = http.post("/api/mcp", json={**call, "params": params}, headers=mcp).json()
    settled = job["result"]["structuredContent"]["payment"]

    key = bearer(state.api_key)
    everything = http.get("/api/agent/usage", params={"limit": 200}, headers=key).json()
    charges = everything["charges"][start:]
    assert [c["kind"] for c in charges] == ["market_call", "breed_agent"]
    market, breed = charges
    assert market["resourceId"] == WEBSEARCH_ID and market["provider"]
    assert market["amountUsdc"] == paid["chargedUsdc"]
    assert market["idempotencyKey"] == "usage-test-1"
    assert market["receipt"] == paid["receipt"]["transaction"]
    assert market["protocol"] == "x402" and market["chain"] == paid["chain"]
    assert breed["resourceId"] == "svc_breed_agent" and breed["amountUsdc"] == "10.00"
    assert breed["receipt"] == settled["transaction"] and breed["network"] == "eip155:8453"
    assert breed["createdAt"].endswith("Z")
    assert everything["total"] == len(state.charges)

    seen, cursor = [], None
    while True:
        params = {"limit": 1, **({"cursor": cursor} if cursor else {})}
        page = http.get("/api/agent/usage", params=params, headers=key).json()
        seen += [c["id"] for c in page["charges"]]
        cursor = page["nextCursor"]
        if cursor is None:
            break
    assert seen == [c["id"] for c in everything["charges"]]
    later = http.get("/api/agent/usage", params={"since": breed["createdAt"]}, headers=key)
    assert [c["id"] for c in later.json()["charges"]] == [breed["id"]]


@pytest.mark.parametrize(
    "params", [{"limit": 0}, {"limit": 201}, {"limit": "x"}, {"since": "yesterday"},
               {"cursor": "ch_nope"}, {"page": 2}]
)  # fmt: skip
def test_usage_refuses_bad_parameters(http: httpx.Client, state: SandboxState, params):
    answer = http.get("/api/agent/usage", params=params, headers=bearer(state.api_key))
    assert refusal(answer, 400)["code"] == "INVALID_PARAMS"


def test_policies_come_from_the_default_skills_md(http: httpx.Client, state: SandboxState):
    body = http.get("/api/agent/policies", headers=bearer(state.api_key)).json()
    text = skills.DEFAULT_SKILLS_MD
    assert body["source"] == "SKILLS.md" and body["sandbox"] is True and body["valid"] is True
    assert body["sha256"] == hashlib.sha256(text.encode()).hexdigest()
    fences = [n for n, line in enumerate(text.splitlines(), 1) if line == "```policy"]
    assert [b["line"] for b in body["blocks"]] == fences
    assert body["policy"]["per_call_max_usdc"] == 0.25
    assert body["policy"]["budgets"][0]["per"] == "agent"


def test_policies_follow_the_skills_md_the_state_holds(http: httpx.Client, state: SandboxState):
    custom = (
        "# Agent rules\n\nSome prose.\n\n"
        "```policy\ndeny:\n  chains: [solana]\ncaps:\n  per_call_usdc: 1\n```\n\n"
        "~~~policy\ndeny:\n  chains: [stellar]\n  domain_types: [A8]\ncaps:\n  daily_usdc: 5\n"
        "window: 2026-01-01\n~~~\n"
        "```yaml\nnot: a policy\n```\n"
    )
    original = state.accounts.skills_md
    state.accounts.skills_md = custom
    try:
        body = http.get("/api/agent/policies", headers=bearer(state.api_key)).json()
        assert [b["line"] for b in body["blocks"]] == [5, 12]
        assert body["policy"] == {
            "deny": {"chains": ["solana", "stellar"], "domain_types": ["A8"]},
            "caps": {"per_call_usdc": 1, "daily_usdc": 5},
            "window": "2026-01-01",
        }
        state.accounts.skills_md = "```policy\ncaps: [unclosed\n```\n"
        broken = http.get("/api/agent/policies", headers=bearer(state.api_key)).json()
        assert broken["valid"] is False and broken["policy"] is None
        assert broken["errors"][0]["line"] == 2
    finally:
        state.accounts.skills_md = original


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        ("intro\n```policy\ncaps: {}\n", 2, "never closed"),
        ("```policy\n- a list\n```\n", 1, "mapping"),
        ("x\n\n```policy\nok: 1\nbad: [\n```\n", 5, ""),
    ],
)
def test_a_broken_policy_block_is_reported_with_its_line(text, line, words):
    with pytest.raises(skills.SkillsError) as caught:
        skills.parse_blocks(text)
    assert caught.value.line == line
    assert words in caught.value.message


def test_skills_md_must_be_text_of_bounded_size(state: SandboxState):
    with pytest.raises(ValueError):
        state.accounts.skills_md = "x" * (skills.MAX_SKILLS_BYTES + 1)
