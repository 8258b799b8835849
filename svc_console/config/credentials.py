"""Where the console keeps the marketplace's secrets: the OS keyring when one works, otherwise the
owner-only files of the spec, and it always says which.

Three records, each in the file the spec names (under SVC_CONSOLE_HOME when that is set):

- the account from the e-mail login (`apiKey`, `agentId`, `mcpServerUrl`, the service's address):
  `<home>/credentials.json`, svc-console's own file;
- the wallet connection (`username`, `apiToken`, `apiBase`, `fundingUrl`, addresses):
  `~/.svc-agentwallet/config.json`;
- the account wallet from the first login's `walletConfig` (addresses and private keys):
  `~/.svc-wallet.json`, written once and never again.

With a keyring, the secret fields (`apiKey`, `apiToken`, private keys) go to the keyring and the
files keep everything else, with `"secretsIn": "keyring"` so a reader knows where to look. Without
one, the files hold the secrets too; they are created 0600 and a file that others can read is
refused with the command that fixes it. Nothing here prints or logs a secret.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from svc_console.config.errors import SettingsError
from svc_console.config.paths import Paths
from svc_console.core.private_files import NotPrivate, read_private, write_private

KEYRING_SERVICE = "svc-console"
SECRET_FIELDS = {"apiKey", "apiToken", "privateKey", "evmPrivateKey", "solanaPrivateKey"}


class CredentialsError(SettingsError):
    """A credential cannot be stored or read; the message says what to do."""


def usable_keyring() -> Any | None:
    """The OS keyring backend, or None when there is none (headless machines, CI)."""
    import keyring
    from keyring.backends import fail

    backend = keyring.get_keyring()
    if isinstance(backend, fail.Keyring) or getattr(backend, "priority", 0) <= 0:
        return None
    return backend


@dataclass(frozen=True)
class WalletConnection:
    """The wallet proxy's credential and addresses, as the connection flow returned them."""

    username: str
    api_base: str
    api_token: str = field(repr=False)
    funding_url: str | None = None
    addresses: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Account:
    """The marketplace account of the e-mail login."""

    base_url: str
    agent_id: str
    mcp_server_url: str
    api_key: str = field(repr=False)


class Credentials:
    def __init__(
        self,
        paths: Paths,
        backend: Any | None = ...,  # type: ignore[assignment]
        *,
        connection_file: Path | None = None,
    ):
        """`backend`: a keyring backend, None for files only; default: the OS keyring if any.
        `connection_file`: the wallet config at another path (SVC_WALLET_CONFIG)."""
        self.paths = paths
        self.backend = usable_keyring() if backend is ... else backend
        self._connection_file = connection_file

    @classmethod
    def for_sandbox(cls, paths: Paths) -> Credentials:
        """Accounts made against the sandbox: kept apart under its folder, in files only, so
        sandbox play never overwrites (or skips the onboarding of) the real ones."""
        root = paths.sandbox / "accounts"
        return cls(Paths(home=root, socket=paths.socket, explicit_home=True), backend=None)

    # --- where things are ------------------------------------------------------------------

    @property
    def account_file(self) -> Path:
        return self.paths.home / "credentials.json"

    @property
    def connection_file(self) -> Path:
        default = self.paths.user_home / ".svc-agentwallet" / "config.json"
        return self._connection_file or default

    @property
    def wallet_file(self) -> Path:
        return self.paths.user_home / ".svc-wallet.json"

    @property
    def where(self) -> str:
        """One line for the operator: which store holds the secrets."""
        if self.backend is not None:
            return f"the OS keyring ({type(self.backend).__name__})"
        return "owner-only files (mode 600): no OS keyring is available"

    # --- the account (e-mail login) --------------------------------------------------------

    def save_account(self, account: Account) -> Path:
        record = {
            "baseUrl": account.base_url,
            "agentId": account.agent_id,
            "mcpServerUrl": account.mcp_server_url,
            "apiKey": account.api_key,
        }
        self._write(self.account_file, record)
        return self.account_file

    def account(self) -> Account | None:
        record = self._read(self.account_file)
        if record is None:
            return None
        try:
            return Account(
                base_url=record["baseUrl"],
                agent_id=record["agentId"],
                mcp_server_url=record["mcpServerUrl"],
                api_key=record["apiKey"],
            )
        except KeyError as exc:
            raise CredentialsError(
                f"{self.account_file} lacks {exc.args[0]}; run svc-console login"
            ) from None

    # --- the wallet connection --------------------------------------------------------------

    def save_connection(self, connection: WalletConnection) -> Path:
        record = {
            "username": connection.username,
            "apiToken": connection.api_token,
            "apiBase": connection.api_base,
            "fundingUrl": connection.funding_url,
            "wallets": dict(connection.addresses),
        }
        self._write(self.connection_file, record)
        return self.connection_file

    def connection(self) -> WalletConnection | None:
        """The saved connection, or None when onboarding is still needed (the spec skips it only
        when `username`, `apiToken` and `apiBase` are all there)."""
        record = self._read(self.connection_file)
        if record is None or not all(record.get(k) for k in ("username", "apiToken", "apiBase")):
            return None
        wallets = record.get("wallets")
        return WalletConnection(
            username=record["username"],
            api_base=record["apiBase"],
            api_token=record["apiToken"],
            funding_url=record.get("fundingUrl"),
            addresses=wallets if isinstance(wallets, dict) else {},
        )

    # --- the account wallet (walletConfig, first login only) -------------------------------

    def save_wallet_config(self, wallet_config: dict[str, Any]) -> Path:
        """Write `walletConfig` once. A second write is refused: the keys it holds were shown
        exactly once and overwriting them would lose the wallet."""
        if self.wallet_file.exists():
            raise CredentialsError(
                f"{self.wallet_file} already exists; it is written once and never replaced"
            )
        self._write(self.wallet_file, wallet_config)
        return self.wallet_file

    def wallet_config(self) -> dict[str, Any] | None:
        return self._read(self.wallet_file)

    # --- storage ----------------------------------------------------------------------------

    @staticmethod
    def _name(path: Path, dotted: str) -> str:
        return f"{path.name}:{dotted}"

    def _write(self, path: Path, record: dict[str, Any]) -> None:
        if self.backend is not None:
            record = self._to_keyring(path, record, "")
            record["secretsIn"] = "keyring"
        write_private(path, json.dumps(record, indent=2) + "\n")

    def _to_keyring(self, path: Path, value: Any, prefix: str) -> Any:
        if isinstance(value, dict):
            kept = {}
            for key, item in value.items():
                dotted = f"{prefix}{key}"
                if key in SECRET_FIELDS and isinstance(item, str):
                    self.backend.set_password(KEYRING_SERVICE, self._name(path, dotted), item)
                    continue
                kept[key] = self._to_keyring(path, item, dotted + ".")
            return kept
        return value

    def _from_keyring(self, path: Path, value: Any, prefix: str) -> Any:
        if not isinstance(value, dict):
            return value
        merged = {k: self._from_keyring(path, v, f"{prefix}{k}.") for k, v in value.items()}
        for key in SECRET_FIELDS:
            secret = self.backend.get_password(KEYRING_SERVICE, self._name(path, prefix + key))
            if secret is not None:
                merged[key] = secret
        return merged

    def _read(self, path: Path) -> dict[str, Any] | None:
        if not path.exists():
            return None
        try:
            record = json.loads(read_private(path))
        except NotPrivate as exc:
            raise CredentialsError(str(exc)) from None
        except ValueError:
            raise CredentialsError(f"{path} is not valid JSON; fix or remove it") from None
        if not isinstance(record, dict):
            raise CredentialsError(f"{path} must hold a JSON object")
        if record.pop("secretsIn", None) == "keyring":
            if self.backend is None:
                raise CredentialsError(
                    f"{path} keeps its secrets in the OS keyring, which is not available now"
                )
            record = self._from_keyring(path, record, "")
        return record
