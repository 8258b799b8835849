"""`svc-console login` and `connect` end to end against the sandbox; codes come from its outbox."""

from __future__ import annotations

import json
import stat

from eth_account import Account as EthAccount

from svc_console import cli
from svc_console.config.credentials import Credentials
from svc_console.sandbox.outbox import Outbox

EMAIL = "ops@example.com"


class OutboxStdin:
    """A non-terminal stdin whose next line is the newest code the sandbox mailed, read only at the
    moment the CLI asks for it (after it has requested the code)."""

    def __init__(self, sandbox, *lines: str):
        self.outbox = Outbox(sandbox.state.outbox_dir)
        self.lines = list(lines)

    def isatty(self) -> bool:
        return False

    def readline(self) -> str:
        if self.lines:
            return self.lines.pop(0) + "\n"
        return (self.outbox.latest_code(EMAIL) or "") + "\n"


def _mode(path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_login_stores_the_key_and_the_wallet_config_once(sandbox, paths, monkeypatch, capsys):
    monkeypatch.setattr("sys.stdin", OutboxStdin(sandbox))
    assert cli.main(["login", "--email", EMAIL, "--base-url", sandbox.base_url]) == 0
    out = capsys.readouterr()
    creds = Credentials(paths)
    account = creds.account()
    assert account.api_key.startswith("sk_live_")
    assert account.base_url == sandbox.base_url
    wallet = creds.wallet_config()
    # A real EVM key: its address derives from the private key.
    assert EthAccount.from_key(wallet["evm"]["privateKey"]).address == wallet["evm"]["address"]
    assert _mode(creds.account_file) == _mode(creds.wallet_file) == 0o600
    assert "owner-only files" in out.out
    for secret in (account.api_key, wallet["evm"]["privateKey"], wallet["solana"]["privateKey"]):
        assert secret not in out.out + out.err

    # The second login returns a fresh key but no walletConfig: the wallet file is untouched.
    before = creds.wallet_file.read_text()
    monkeypatch.setattr("sys.stdin", OutboxStdin(sandbox))
    assert cli.main(["login", "--email", EMAIL, "--base-url", sandbox.base_url]) == 0
    assert creds.wallet_file.read_text() == before
    assert "will not be shown" not in capsys.readouterr().out


def test_a_wrong_code_is_refused_and_nothing_is_saved(sandbox, paths, monkeypatch, capsys):
    monkeypatch.setattr("sys.stdin", OutboxStdin(sandbox, "000000"))
    code = cli.main(["login", "--email", EMAIL, "--base-url", sandbox.base_url])
    err = capsys.readouterr().err
    assert code == 1
    assert err.splitlines()[-1].startswith("svc-console: login failed: the code is wrong")
    assert "Traceback" not in err
    creds = Credentials(paths)
    assert not creds.account_file.exists() and not creds.wallet_file.exists()


def test_connect_writes_the_spec_config_then_skips_onboarding(sandbox, paths, monkeypatch, capsys):
    monkeypatch.setattr("sys.stdin", OutboxStdin(sandbox))
    args = ["connect", "--email", EMAIL, "--username", "ops-team", "--base-url", sandbox.base_url]
    assert cli.main(args) == 0
    out = capsys.readouterr().out
    creds = Credentials(paths)
    config = json.loads(creds.connection_file.read_text())
    assert config["username"] == "ops-team"
    assert config["apiBase"] and config["fundingUrl"]
    assert set(config["wallets"]) >= {"base", "solana", "ethereum", "tempo"}
    assert _mode(creds.connection_file) == 0o600
    assert config["apiToken"] not in out

    # Complete config: no code is asked for, nothing is sent.
    sent = len(Outbox(sandbox.state.outbox_dir).messages())
    monkeypatch.setattr("sys.stdin", OutboxStdin(sandbox, "should-not-be-read"))
    assert cli.main(args) == 0
    assert "onboarding skipped" in capsys.readouterr().out
    assert len(Outbox(sandbox.state.outbox_dir).messages()) == sent
    assert json.loads(creds.connection_file.read_text()) == config


def test_login_without_a_marketplace_says_how_to_name_one(paths, monkeypatch, capsys):
    monkeypatch.delenv("SVC_BASE_URL", raising=False)
    assert cli.main(["login", "--email", EMAIL]) == 1
    assert "--base-url" in capsys.readouterr().err


def test_connect_saves_where_svc_wallet_config_says_and_serve_reads_it_there(
    sandbox, paths, monkeypatch, capsys, tmp_path
):
    from svc_console.config.service import service_config

    elsewhere = tmp_path / "wallets" / "ops.json"
    monkeypatch.setenv("SVC_WALLET_CONFIG", str(elsewhere))
    monkeypatch.setattr("sys.stdin", OutboxStdin(sandbox))
    args = ["connect", "--email", EMAIL, "--username", "ops-team", "--base-url", sandbox.base_url]
    assert cli.main(args) == 0
    assert json.loads(elsewhere.read_text())["username"] == "ops-team"
    assert not Credentials(paths).connection_file.exists()  # not the default as well
    env = {
        "SVC_BASE_URL": sandbox.base_url,
        "SVC_WALLET_CONFIG": str(elsewhere),
        "SVC_API_KEY": "k",
    }
    assert service_config(paths, env).username == "ops-team"
