"""Secrets go to the OS keyring when there is one, else to owner-only files."""

from __future__ import annotations

import json
import stat

import pytest
from keyring.backend import KeyringBackend

from svc_console.credentials import Account, Credentials, CredentialsError, WalletConnection
from svc_console.settings import SettingsError

API_KEY = "sk_live_" + "k" * 32
API_TOKEN = "tok_" + "t" * 40
EVM_KEY = "0x" + "ab" * 32
WALLET_CONFIG = {
    "evm": {"address": "0x" + "12" * 20, "privateKey": EVM_KEY},
    "solana": {"address": "So1ana" + "1" * 38, "privateKey": "S" * 88},
}


class MemoryKeyring(KeyringBackend):
    """Stands in for an OS keyring backend, which this machine does not have."""

    priority = 1  # type: ignore[assignment]

    def __init__(self):
        super().__init__()
        self.items: dict[tuple[str, str], str] = {}

    def get_password(self, service, username):
        return self.items.get((service, username))

    def set_password(self, service, username, password):
        self.items[(service, username)] = password

    def delete_password(self, service, username):
        self.items.pop((service, username), None)


def _account() -> Account:
    return Account("https://svc.example", "agent-1", "https://svc.example/api/mcp", API_KEY)


def _connection() -> WalletConnection:
    return WalletConnection(
        username="ops",
        api_base="https://wallet.example",
        api_token=API_TOKEN,
        funding_url="https://fund.example/ops",
        addresses={"base": "0x" + "34" * 20},
    )


def _mode(path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_without_a_keyring_secrets_live_in_owner_only_files(paths):
    creds = Credentials(paths, backend=None)
    assert "owner-only files" in creds.where
    creds.save_account(_account())
    creds.save_connection(_connection())
    creds.save_wallet_config(WALLET_CONFIG)
    for path in (creds.account_file, creds.connection_file, creds.wallet_file):
        assert _mode(path) == 0o600
        assert _mode(path.parent) == 0o700
    assert json.loads(creds.connection_file.read_text())["apiToken"] == API_TOKEN
    assert creds.account().api_key == API_KEY
    assert creds.connection().api_token == API_TOKEN
    assert creds.wallet_config() == WALLET_CONFIG


def test_the_spec_files_live_under_the_console_home_when_it_is_set(paths):
    creds = Credentials(paths, backend=None)
    assert creds.connection_file == paths.home / ".svc-agentwallet" / "config.json"
    assert creds.wallet_file == paths.home / ".svc-wallet.json"


def test_with_a_keyring_the_files_hold_no_secret(paths):
    ring = MemoryKeyring()
    creds = Credentials(paths, backend=ring)
    assert "keyring" in creds.where
    creds.save_account(_account())
    creds.save_connection(_connection())
    creds.save_wallet_config(WALLET_CONFIG)
    on_disk = "".join(
        p.read_text() for p in (creds.account_file, creds.connection_file, creds.wallet_file)
    )
    for secret in (API_KEY, API_TOKEN, EVM_KEY, WALLET_CONFIG["solana"]["privateKey"]):
        assert secret not in on_disk
    assert set(ring.items.values()) >= {API_KEY, API_TOKEN, EVM_KEY}
    again = Credentials(paths, backend=ring)
    assert again.account().api_key == API_KEY
    assert again.connection().api_token == API_TOKEN
    assert again.wallet_config() == WALLET_CONFIG


def test_files_that_keep_secrets_in_a_keyring_that_is_gone_are_refused_clearly(paths):
    Credentials(paths, backend=MemoryKeyring()).save_connection(_connection())
    with pytest.raises(CredentialsError, match="keyring"):
        Credentials(paths, backend=None).connection()


def test_a_file_readable_by_others_is_refused_with_the_fix(paths):
    creds = Credentials(paths, backend=None)
    creds.save_connection(_connection())
    creds.connection_file.chmod(0o644)
    with pytest.raises(SettingsError) as caught:
        creds.connection()
    assert f"chmod 600 {creds.connection_file}" in str(caught.value)
    assert API_TOKEN not in str(caught.value)


def test_onboarding_is_needed_until_username_token_and_base_are_all_saved(paths):
    creds = Credentials(paths, backend=None)
    assert creds.connection() is None
    creds.connection_file.parent.mkdir(mode=0o700, parents=True)
    creds.connection_file.write_text(json.dumps({"username": "ops", "apiBase": "https://w"}))
    creds.connection_file.chmod(0o600)
    assert creds.connection() is None
    creds.save_connection(_connection())
    assert creds.connection().username == "ops"


def test_wallet_config_is_written_once_and_never_replaced(paths):
    creds = Credentials(paths, backend=None)
    creds.save_wallet_config(WALLET_CONFIG)
    with pytest.raises(CredentialsError, match="written once"):
        creds.save_wallet_config({"evm": {"address": "0x0", "privateKey": "0x1"}})
    assert creds.wallet_config() == WALLET_CONFIG


def test_a_broken_file_is_reported_not_crashed_on(paths):
    creds = Credentials(paths, backend=None)
    creds.save_connection(_connection())
    creds.connection_file.write_text("{not json")
    with pytest.raises(CredentialsError, match="not valid JSON"):
        creds.connection()


def test_secrets_never_appear_in_reprs(paths):
    creds = Credentials(paths, backend=None)
    account = _account()
    assert API_KEY not in repr(account)
    assert API_TOKEN not in repr(_connection())
    assert API_KEY not in repr(creds)
