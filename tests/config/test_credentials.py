"""Secrets go to the OS keyring when there is one, else to owner-only files."""

from __future__ import annotations

import json
import stat

import pytest
from keyring.backend import KeyringBackend

from svc_console.config.credentials import Account, Credentials, CredentialsError, WalletConnection
from svc_console.config.errors import SettingsError
from svc_console.config.service import service_config

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


# --- which service the console speaks to -------------------------------------------------------


def _logged_in(paths, base_url="https://svc.example") -> Credentials:
    creds = Credentials(paths, backend=None)
    creds.save_account(Account(base_url, "agent-1", f"{base_url}/api/mcp", API_KEY))
    creds.save_connection(_connection())
    return creds


def test_no_base_url_anywhere_means_the_sandbox(paths):
    assert service_config(paths, env={}) is None


def test_what_login_and_connect_saved_configures_the_service(paths):
    _logged_in(paths)
    config = service_config(paths, env={"SVC_BASE_URL": "https://svc.example/"})
    assert config.base_url == "https://svc.example"
    assert config.api_key == API_KEY and config.api_token == API_TOKEN
    assert config.wallet_api_base == "https://wallet.example" and config.username == "ops"
    assert API_KEY not in repr(config) and API_TOKEN not in repr(config)


def test_the_settings_file_names_the_service_and_the_environment_wins(paths):
    _logged_in(paths)
    (paths.home / "settings.toml").write_text(
        '[service]\nbase_url = "https://svc.example"\nwallet_api_base = "https://w2.example"\n'
    )
    config = service_config(paths, env={})
    assert config.base_url == "https://svc.example"
    assert config.wallet_api_base == "https://w2.example"
    env = {"SVC_WALLET_API_BASE": "https://w3.example", "SVC_API_KEY": "sk_live_env"}
    config = service_config(paths, env=env)
    assert config.wallet_api_base == "https://w3.example" and config.api_key == "sk_live_env"


def test_a_key_saved_for_another_service_is_not_sent_to_this_one(paths):
    _logged_in(paths, base_url="https://other.example")
    with pytest.raises(SettingsError, match=r"no API key for https://svc\.example"):
        service_config(paths, env={"SVC_BASE_URL": "https://svc.example"})


def test_svc_wallet_config_points_at_another_wallet_file(paths):
    creds = _logged_in(paths)
    elsewhere = paths.home / "wallets" / "team.json"
    Credentials(paths, backend=None, connection_file=elsewhere).save_connection(
        WalletConnection(username="team", api_base="https://wt.example", api_token="t2")
    )
    env = {"SVC_BASE_URL": "https://svc.example", "SVC_WALLET_CONFIG": str(elsewhere)}
    config = service_config(paths, env=env)
    assert config.username == "team" and config.api_token == "t2"
    assert creds.connection().username == "ops"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("[service\n", "settings.toml"),
        (
            '[service]\nbase_url = "https://svc.example"\napi_key = "sk_live_x"\n',
            "unknown: api_key",
        ),
        ("[service]\nbase_url = 3\n", "must be strings"),
    ],
)
def test_a_wrong_settings_file_is_a_clear_error(paths, text, expected):
    (paths.home / "settings.toml").write_text(text)
    with pytest.raises(SettingsError, match=expected):
        service_config(paths, env={})


def test_an_incomplete_wallet_config_says_to_connect(paths):
    creds = _logged_in(paths)
    creds.connection_file.write_text(json.dumps({"username": "ops"}))
    with pytest.raises(SettingsError, match="run svc-console connect"):
        service_config(paths, env={"SVC_BASE_URL": "https://svc.example"})
