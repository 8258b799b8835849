"""The spec's two onboarding flows, for `svc-console login` / `connect` and the Account screen:

- login: e-mail one-time code → the API key (and, on the first login only, `walletConfig`);
- connect: e-mail one-time code and a chosen username → the wallet proxy's `apiToken`.

Each saves what it received through `Credentials` (keyring, else owner-only files) at once, so a
secret shown once by the service is never lost, and returns only what may be shown: where things
were saved and which store holds the secrets. The code itself comes from `read_code`, so the CLI
can prompt for it and tests can read the sandbox's outbox.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

from svc_console.config.credentials import Account, Credentials, WalletConnection
from svc_console.market.account import AccountClient

ReadCode = Callable[[], str | Awaitable[str]]


@dataclass(frozen=True)
class Saved:
    """What an onboarding flow did, in words and paths safe to print."""

    summary: str
    files: tuple[Path, ...]
    secrets_in: str
    skipped: bool = False


async def _code(read_code: ReadCode) -> str:
    code = read_code()
    if inspect.isawaitable(code):
        code = await code
    return str(code).strip()


async def login(
    client: AccountClient, creds: Credentials, *, base_url: str, email: str, read_code: ReadCode
) -> Saved:
    await client.send_otp(email)
    result = await client.verify_otp(email, await _code(read_code))
    files = [
        creds.save_account(
            Account(
                base_url=base_url,
                agent_id=result.agent_id,
                mcp_server_url=result.mcp_server_url,
                api_key=result.api_key.get_secret_value(),
            )
        )
    ]
    summary = f"signed in as agent {result.agent_id}"
    if result.wallet_config is not None:
        # Shown exactly once by the service: saved before anything else can fail.
        files.append(creds.save_wallet_config(_plain(result.wallet_config)))
        summary += "; the account wallet's keys were saved and will not be shown"
    return Saved(summary=summary, files=tuple(files), secrets_in=creds.where)


def already_connected(creds: Credentials) -> Saved | None:
    """The spec skips onboarding when the config already holds username, apiToken and apiBase."""
    existing = creds.connection()
    if existing is None:
        return None
    return Saved(
        summary=f"already connected as {existing.username}; onboarding skipped",
        files=(creds.connection_file,),
        secrets_in=creds.where,
        skipped=True,
    )


async def connect(
    client: AccountClient,
    creds: Credentials,
    *,
    email: str,
    username: str,
    read_code: ReadCode,
) -> Saved:
    skipped = already_connected(creds)
    if skipped is not None:
        return skipped
    await client.connect_start(email)
    result = await client.connect_complete(email, username, await _code(read_code))
    path = creds.save_connection(
        WalletConnection(
            username=result.username,
            api_base=result.api_base,
            api_token=result.api_token.get_secret_value(),
            funding_url=result.funding_url,
            addresses=dict(result.wallets),
        )
    )
    return Saved(
        summary=f"wallet connected as {result.username}", files=(path,), secrets_in=creds.where
    )


def _plain(wallet_config: object) -> dict[str, object]:
    """The wallet config with its secrets revealed, for the owner-only store only."""
    dumped = wallet_config.model_dump(by_alias=True, mode="python")  # type: ignore[attr-defined]
    for pair in ("evm", "solana"):
        key = dumped[pair]["privateKey"]
        dumped[pair]["privateKey"] = (
            key.get_secret_value() if hasattr(key, "get_secret_value") else key
        )
    return dumped
