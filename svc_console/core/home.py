"""The one folder that holds all of svc-console's state: SVC_CONSOLE_HOME, else the platform's user
data folder. In core because both the configuration (`config.paths`) and the sandbox, which may
import nothing but core, place their files under it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path


def home_folder(env: Mapping[str, str] | None = None) -> tuple[Path, bool]:
    """The home folder, and whether SVC_CONSOLE_HOME chose it (rather than the platform)."""
    env = os.environ if env is None else env
    if env.get("SVC_CONSOLE_HOME"):
        return Path(env["SVC_CONSOLE_HOME"]).expanduser().absolute(), True
    import platformdirs

    return Path(platformdirs.user_data_dir("svc-console", appauthor=False)), False
