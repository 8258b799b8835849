"""Which SKILLS.md files are in force, from the command line, the environment or settings.toml."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from svc_console.config.errors import SettingsError
from svc_console.config.paths import Paths
from svc_console.config.settings_file import read_settings


def policy_files(
    paths: Paths, explicit: Sequence[str] = (), env: Mapping[str, str] | None = None
) -> tuple[list[Path], bool]:
    """The SKILLS.md files in force, and whether they are optional (may be absent): `--policy`
    options, else SVC_CONSOLE_POLICY (paths separated by the OS's path separator), else the
    `[policy]` table's `files` in settings.toml (relative to the home folder), else
    `$SVC_CONSOLE_HOME/SKILLS.md`, the only optional one (absent: the operator decides all)."""
    env = os.environ if env is None else env
    named = list(explicit) or [p for p in env.get("SVC_CONSOLE_POLICY", "").split(os.pathsep) if p]
    if not named:
        table = read_settings(paths.settings).get("policy", {})
        files = table.get("files", []) if isinstance(table, dict) else None
        if not isinstance(files, list) or not all(isinstance(f, str) for f in files):
            raise SettingsError(
                f'{paths.settings}: [policy] files must be a list of paths, ["SKILLS.md"]'
            )
        named = [str(paths.home / Path(f).expanduser()) for f in files]
    if not named:
        return [paths.home / "SKILLS.md"], True
    return [Path(name).expanduser().absolute() for name in named], False
