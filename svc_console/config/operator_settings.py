"""The `[operator]` table of settings.toml: who decides at the console's own terminal.

    [operator]
    name = "alice"    # the TUI's decisions name this operator
    uids = [1000]     # these uids may use the operator socket too (a console running as a
                      # user of its own: `svc-console service install` writes it)

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
    table = _table(path)
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


def operator_uids(path: Path) -> frozenset[int]:
    """`[operator] uids`, checked: the uids besides the console's own that the operator socket
    admits (every act there then needs an operator credential: their agents reach it too)."""
    uids = _table(path).get("uids", [])
    if not isinstance(uids, list) or not all(
        isinstance(uid, int) and not isinstance(uid, bool) and uid >= 0 for uid in uids
    ):
        raise SettingsError(f"{path}: [operator] uids must be a list of user ids, [1000]")
    return frozenset(uids)


def _table(path: Path) -> dict:
    table = read_settings(path).get("operator", {})
    if not isinstance(table, dict):
        raise SettingsError(f"{path}: [operator] must be a table")
    unknown = set(table) - {"name", "uids"}
    if unknown:
        raise SettingsError(
            f"{path}: [operator] takes only name and uids; unknown: {', '.join(sorted(unknown))}"
        )
    return table
