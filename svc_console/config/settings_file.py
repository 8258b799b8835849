"""`settings.toml` under SVC_CONSOLE_HOME: the operator's own settings, read as TOML.

Each table is validated by the module it configures; this one only reads the file and words a
broken one as a `SettingsError`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from svc_console.config.errors import SettingsError


def read_settings(path: Path) -> dict[str, Any]:
    """The whole file as a dict; an absent file is empty settings."""
    import tomllib

    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise SettingsError(f"{path}: {exc}") from None
