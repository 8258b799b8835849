"""Which marketplace svc-console speaks to and with which credentials: the environment first
(DESIGN.md, Environment), then the `[service]` table of settings.toml, then what `login` and
`connect` saved. No base URL anywhere means the embedded sandbox.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from svc_console.config.errors import SettingsError
from svc_console.config.paths import Paths
from svc_console.config.settings_file import read_settings


@dataclass(frozen=True)
class ServiceConfig:
    """A real marketplace to speak to. Absent means the embedded sandbox."""

    base_url: str
    wallet_api_base: str
    api_key: str
    username: str
    api_token: str

    def __repr__(self) -> str:  # never let a credential reach a log line or a traceback
        return f"ServiceConfig(base_url={self.base_url!r}, username={self.username!r})"


def service_section(path: Path) -> dict[str, str]:
    """The `[service]` table of settings.toml: where the marketplace is (never its secrets)."""
    section = read_settings(path).get("service", {})
    allowed = {"base_url", "wallet_api_base", "wallet_config"}
    if not isinstance(section, dict) or set(section) - allowed:
        unknown = ", ".join(sorted(set(section) - allowed)) if isinstance(section, dict) else ""
        raise SettingsError(
            f"{path}: [service] takes only {', '.join(sorted(allowed))}"
            + (f"; unknown: {unknown}" if unknown else "")
        )
    if not all(isinstance(value, str) for value in section.values()):
        raise SettingsError(f"{path}: the values of [service] must be strings")
    return section


def wallet_config_file(paths: Paths, env: Mapping[str, str] | None = None) -> Path | None:
    """The wallet connection's file when it is not the spec's default: SVC_WALLET_CONFIG, then
    the `[service]` table's `wallet_config` (None: `~/.svc-agentwallet/config.json`)."""
    env = os.environ if env is None else env
    section = service_section(paths.settings)
    value = env.get("SVC_WALLET_CONFIG") or section.get("wallet_config")
    return Path(value) if value else None


def service_config(paths: Paths, env: Mapping[str, str] | None = None) -> ServiceConfig | None:
    """The configured service, or None for the embedded sandbox (no base URL anywhere).

    Each value comes from the environment first, then the `[service]` table of settings.toml;
    the secrets from SVC_API_KEY or what `login` and `connect` saved."""
    from svc_console.config.credentials import Credentials

    env = os.environ if env is None else env
    section = service_section(paths.settings)
    base_url = (env.get("SVC_BASE_URL") or section.get("base_url") or "").rstrip("/")
    if not base_url:
        return None
    creds = Credentials(paths, connection_file=wallet_config_file(paths, env))
    api_key = env.get("SVC_API_KEY")
    if not api_key:
        account = creds.account()
        if account is None or account.base_url.rstrip("/") != base_url:
            raise SettingsError(f"no API key for {base_url}: run svc-console login")
        api_key = account.api_key
    if not creds.connection_file.exists():
        raise SettingsError(f"no wallet config at {creds.connection_file}; run svc-console connect")
    connection = creds.connection()
    if connection is None:
        raise SettingsError(
            f"{creds.connection_file} is not a complete wallet config (username, apiToken and"
            " apiBase are needed); run svc-console connect"
        )
    api_base = env.get("SVC_WALLET_API_BASE") or section.get("wallet_api_base")
    return ServiceConfig(
        base_url=base_url,
        wallet_api_base=(api_base or connection.api_base).rstrip("/"),
        api_key=api_key,
        username=connection.username,
        api_token=connection.api_token,
    )


def configured_ledger(paths: Paths, env: Mapping[str, str] | None = None) -> Path:
    """The ledger the console would open: the real one when a service is configured (by
    SVC_BASE_URL or settings.toml), else the sandbox's. Reading it needs no credential, so an
    unreadable settings file counts as no service rather than an error: there is still a ledger
    to read."""
    env = os.environ if env is None else env
    base_url = env.get("SVC_BASE_URL")
    if not base_url:
        try:
            base_url = service_section(paths.settings).get("base_url")
        except SettingsError:
            base_url = None
    return paths.ledger(sandbox=not base_url)


def configured_ledger_url(paths: Paths, env: Mapping[str, str] | None = None) -> str | None:
    """The PostgreSQL URL of the ledger `configured_ledger` names, None for its local file: only
    the real ledger goes to PostgreSQL (`ledger_url`)."""
    from svc_console.config.ledger_url import ledger_url

    if configured_ledger(paths, env) == paths.ledger(sandbox=True):
        return None
    return ledger_url(paths, env)
