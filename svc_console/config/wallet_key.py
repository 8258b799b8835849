"""The account wallet's EVM key, as the first login saved it (`~/.svc-wallet.json`, or the
keyring): read by the signer alone (market/signer.py), once, at start. An import-linter contract
in pyproject.toml keeps every other module from importing this one.
"""

from __future__ import annotations

from svc_console.config.credentials import Credentials
from svc_console.config.paths import Paths


def account_wallet_key(paths: Paths) -> str | None:
    """The saved EVM private key, None when no wallet was saved."""
    wallet = Credentials(paths).wallet_config() or {}
    evm = wallet.get("evm") if isinstance(wallet.get("evm"), dict) else {}
    key = evm.get("privateKey")
    return key if isinstance(key, str) and key else None
