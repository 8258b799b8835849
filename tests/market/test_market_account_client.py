"""The console's account client (`market.account`) against the sandbox over real HTTP: typed
answers, typed refusals, and secrets that never show in a repr or an error."""

from __future__ import annotations

import itertools
import tempfile
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path

import pytest
from eth_account import Account
from helpers import proxy_execute
from pydantic import SecretStr

from svc_console.core.account import AgentLogin
from svc_console.market import errors
from svc_console.market.account import (
    AccountClient,
    CodeRefused,
    InvalidRequest,
    OAuthError,
    TooManyCodes,
    UsernameTaken,
)
from svc_console.market.wallet import WalletClient
from svc_console.sandbox.catalog import WEBSEARCH_ID
from svc_console.sandbox.server import SandboxServer

_numbers = itertools.count(1)


def new_email() -> str:
    return f"client{next(_numbers)}@example.com"


@pytest.fixture(scope="module")
def server() -> Iterator[SandboxServer]:
    folder = Path(tempfile.mkdtemp(prefix="svc-accc-"))
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SVC_CONSOLE_HOME", str(folder))
        with SandboxServer() as running:
            yield running


def code(server: SandboxServer, email: str, purpose: str = "login") -> str:
    found = server.state.accounts.outbox.latest_code(email, purpose)
    assert found is not None
    return found


async def sign_in(server: SandboxServer, email: str) -> AgentLogin:
    async with AccountClient(server.base_url) as client:
        sent = await client.send_otp(email)
        assert sent.sent and sent.email == email and sent.expires_in_seconds == 600
        return await client.verify_otp(email, code(server, email))


async def test_login_is_typed_and_keeps_its_secrets_hidden(server: SandboxServer):
    login = await sign_in(server, new_email())
    key = login.api_key.get_secret_value()
    assert key.startswith("sk_live_") and login.first_login
    assert login.mcp_server_url == f"{server.base_url}/api/mcp"
    config = login.wallet_config
    assert config is not None
    private = config.evm.private_key.get_secret_value()
    assert Account.from_key(private).address == config.evm.address
    for shown in (repr(login), str(login), login.model_dump_json()):
        assert key not in shown and private not in shown
    revealed = config.reveal()
    assert revealed["evm"]["privateKey"] == private
    assert set(revealed) == {"evm", "solana", "chains"}


async def test_refused_codes_say_why(server: SandboxServer):
    email = new_email()
    async with AccountClient(server.base_url) as client:
        await client.send_otp(email)
        right = code(server, email)
        wrong = f"{(int(right) + 1) % 1_000_000:06d}"
        with pytest.raises(CodeRefused) as refused:
            await client.verify_otp(email, SecretStr(wrong))
        assert refused.value.code == "OTP_INVALID" and refused.value.attempts_left == 4
        assert not refused.value.needs_new_code
        assert wrong not in str(refused.value)
        await client.verify_otp(email, right)
        with pytest.raises(CodeRefused) as again:
            await client.verify_otp(email, right)
        assert again.value.code == "OTP_USED" and again.value.needs_new_code
        with pytest.raises(InvalidRequest) as bad:
            await client.send_otp("not an address")
        assert bad.value.field == "email"
        for _ in range(4):  # five in all with the first
            await client.send_otp(email)
        with pytest.raises(TooManyCodes) as flood:
            await client.send_otp(email)
        assert flood.value.retry_after_s and flood.value.retry_after_s > 0


async def test_connect_is_typed_and_a_taken_username_is_clear(server: SandboxServer):
    email = new_email()
    async with AccountClient(server.base_url) as client:
        await client.connect_start(email)
        connection = await client.connect_complete(
            email, "desk-one", code(server, email, "connect")
        )
        token = connection.api_token.get_secret_value()
        assert connection.api_base == server.base_url
        assert connection.funding_url == f"{server.base_url}/fund/desk-one"
        assert set(connection.wallets) == {"base", "solana", "ethereum", "tempo"}
        assert token not in repr(connection)
        other = new_email()
        await client.connect_start(other)
        with pytest.raises(UsernameTaken):
            await client.connect_complete(other, "desk-one", code(server, other, "connect"))


async def test_wallets_usage_and_policies_are_typed(server: SandboxServer):
    state = server.state
    login = await sign_in(server, new_email())
    async with AccountClient(server.base_url, api_key=login.api_key) as client:
        wallets = await client.wallets()
        assert wallets.agent_id == login.agent_id
        assert wallets.address("base") == login.wallet_config.evm.address
        assert wallets.balance_usdc == state.balance and wallets.pooled

        proxy = WalletClient(server.base_url, state.username, state.api_token)
        try:
            for n in range(3):
                await proxy_execute(
                    proxy,
                    "x402",
                    WEBSEARCH_ID,
                    {"query": f"page {n}"},
                    ceiling_usdc=Decimal(1),
                    chain="base",
                    idempotency_key=f"client-usage-{n}",
                )
        finally:
            await proxy.aclose()
        first = await client.usage(limit=2)
        assert len(first.charges) == 2 and first.next_cursor is not None
        rest = await client.usage(cursor=first.next_cursor)
        charges = [*first.charges, *rest.charges]
        assert [c.idempotency_key for c in charges[-3:]] == [f"client-usage-{n}" for n in range(3)]
        assert all(c.resource == WEBSEARCH_ID and c.receipt for c in charges[-3:])
        since = await client.usage(since=charges[-1].at)
        assert [c.id for c in since.charges] == [charges[-1].id]

        policy = await client.policies()
        assert policy.source == "SKILLS.md" and policy.valid and policy.blocks
        assert policy.policy["per_call_max_usdc"] == 0.25


async def test_oauth_tokens_are_typed(server: SandboxServer):
    async with AccountClient(server.base_url, api_key=server.state.api_key) as client:
        token = await client.oauth_token()
        assert token.scopes == {"mcp:tools"} and token.token_type == "Bearer"
        assert token.access_token.get_secret_value() not in repr(token)
        read = await client.oauth_token(scope="account:read")
        async with AccountClient(server.base_url, api_key=read.access_token) as reader:
            assert (await reader.policies()).valid
        with pytest.raises(OAuthError) as bad_scope:
            await client.oauth_token(scope="admin")
        assert bad_scope.value.code == "invalid_scope"
        with pytest.raises(errors.Unauthorized):
            await client.oauth_token(api_key="sk_live_wrong")


async def test_missing_and_wrong_keys_are_unauthorized(server: SandboxServer):
    async with AccountClient(server.base_url) as client:
        with pytest.raises(errors.Unauthorized):
            await client.wallets()
    async with AccountClient(server.base_url, api_key="sk_live_wrong") as client:
        with pytest.raises(errors.Unauthorized) as refused:
            await client.usage()
        assert "sk_live_wrong" not in str(refused.value) and "sk_live_wrong" not in repr(client)


async def test_an_unreachable_service_is_said_so(refused_url: str):
    async with AccountClient(refused_url) as client:
        with pytest.raises(errors.ServiceUnreachable):
            await client.send_otp("a@example.com")
