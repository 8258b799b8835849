"""Where a team's ledger lives: `SVC_LEDGER_URL`, else `[ledger] url` in settings.toml, names a
PostgreSQL database (`postgresql://...`) that holds the whole ledger in place of the local file.

It applies to the real ledger only, the one kept when a service is configured: sandbox play stays
in its own local file and never mixes with real spend. A password is better left out of the URL
(libpq reads ~/.pgpass and PGPASSWORD); where one is in it, it is never shown or logged.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from svc_console.config.errors import SettingsError
from svc_console.config.paths import Paths
from svc_console.config.settings_file import read_settings

SCHEMES = ("postgresql://", "postgres://")


def ledger_url(paths: Paths, env: Mapping[str, str] | None = None) -> str | None:
    """The configured PostgreSQL URL of the ledger, None for the local SQLite file."""
    env = os.environ if env is None else env
    url = env.get("SVC_LEDGER_URL") or None
    where = "SVC_LEDGER_URL"
    if url is None:
        section = read_settings(paths.settings).get("ledger", {})
        if not isinstance(section, dict) or set(section) - {"url"}:
            raise SettingsError(f"{paths.settings}: [ledger] takes only url")
        url = section.get("url") or None
        where = f"{paths.settings}: [ledger] url"
    if url is None:
        return None
    if not isinstance(url, str) or not url.startswith(SCHEMES):
        raise SettingsError(f"{where} must be a postgresql:// URL")
    return url
