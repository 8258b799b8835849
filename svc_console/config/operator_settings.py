"""The `[operator]` table of settings.toml: who decides at the console's own terminal.

    [operator]
    name = "alice"    # the TUI's decisions name this operator

The TUI runs in the console owner's process, behind the owner's terminal, so it asks no token:
it decides as this name. Without it, the TUI's decisions name their channel ("tui") and no
operator, which the two-person rule does not count (a console with that rule sets this).
"""

from __future__ import annotations

from pathlib import Path

from svc_console.config.errors import SettingsError
from svc_console.config.settings_file import read_settings
from svc_console.core import names


def console_operator(path: Path) -> str | None:
    """`[operator] name`, checked; None when unset."""
    table = read_settings(path).get("operator", {})
    if not isinstance(table, dict):
        raise SettingsError(f"{path}: [operator] must be a table")
    unknown = set(table) - {"name"}
    if unknown:
        raise SettingsError(f"{path}: [operator] takes only name; unknown: {', '.join(unknown)}")
    name = table.get("name")
    if name is None:
        return None
    wrong = SettingsError(f"{path}: [operator] name {names.AGENT_NAME_RULE}")
    if not isinstance(name, str):
        raise wrong
    try:
        # In the one form operator names are compared in: `Alice` here is account `alice`.
        return names.canonical(name)
    except ValueError:
        raise wrong from None
