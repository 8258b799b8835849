"""Every secret this console holds besides its service's credentials and the key it pays with
(the signer's alone, market/signer.py, which spells it for the refusal): the account wallet's
Solana key (and, in sandbox play, whose payments a throwaway key signs, its EVM key too) and the
web console's login token. The
broker refuses any submission that carries one (`broker.secret_refusal`); nothing here is ever
logged or shown.
"""

from __future__ import annotations

import logging
from typing import Any

from svc_console.config.credentials import Credentials, CredentialsError
from svc_console.config.paths import Paths
from svc_console.core.private_files import NotPrivate, read_private

log = logging.getLogger(__name__)

# The web console's login token, owner-only, in the home (`svc-console web` makes it).
WEB_TOKEN_FILE = "web.token"


def held_secrets(paths: Paths, *, sandbox: bool) -> tuple[str, ...]:
    """The wallet's Solana key (sandbox play keeps its wallet apart) and the web console's
    token, as far as they can be read; what cannot be read is said in the log, never fatal."""
    found: list[str] = []
    credentials = Credentials.for_sandbox(paths) if sandbox else Credentials(paths)
    try:
        wallet = credentials.wallet_config() or {}
    except CredentialsError as exc:
        log.warning("the wallet's keys are not known to the secret refusal: %s", exc)
        wallet = {}
    for pair in ("evm", "solana") if sandbox else ("solana",):
        key = _private_key(wallet.get(pair))
        if key:
            found.append(key)
    token_file = paths.home / WEB_TOKEN_FILE
    if token_file.exists():
        try:
            found.append(read_private(token_file).strip())
        except (NotPrivate, OSError) as exc:
            log.warning("the web console's token is not known to the secret refusal: %s", exc)
    return tuple(secret for secret in found if secret)


def _private_key(pair: Any) -> str | None:
    key = pair.get("privateKey") if isinstance(pair, dict) else None
    return key if isinstance(key, str) else None
