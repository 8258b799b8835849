"""Where svc-console keeps its state, from the environment.

Everything lives under one home folder (SVC_CONSOLE_HOME, else the platform's user data dir),
created owner-only. The spec's own files (`~/.svc-agentwallet/config.json`, `~/.svc-wallet.json`)
are read from the user's home, or from SVC_CONSOLE_HOME when that is set.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from svc_console.core.home import home_folder

# sun_path of a Unix socket holds 108 bytes on Linux, including the terminating NUL.
MAX_SOCKET_PATH = 107


@dataclass(frozen=True)
class Paths:
    home: Path
    socket: Path
    explicit_home: bool

    def ledger(self, *, sandbox: bool) -> Path:
        """Sandbox play never mixes with real spend in finance's history."""
        return self.home / ("ledger-sandbox.db" if sandbox else "ledger.db")

    @property
    def logs(self) -> Path:
        return self.home / "logs"

    @property
    def settings(self) -> Path:
        return self.home / "settings.toml"

    @property
    def operator_socket(self) -> Path:
        """Where the operator's tools (the CLI) reach the broker: owner-only, in the home folder."""
        return self.home / "operator.sock"

    @property
    def operator_passphrase(self) -> Path:
        return self.home / "operator.passphrase"

    @property
    def operator_accounts(self) -> Path:
        return self.home / "operators.json"

    @property
    def agent_registry(self) -> Path:
        return self.home / "agents.json"

    @property
    def sandbox(self) -> Path:
        return self.home / "sandbox"

    @property
    def sandbox_outbox(self) -> Path:
        """Where the sandbox delivers its e-mail (one-time codes), one `.eml` file per message."""
        return self.sandbox / "outbox"

    @property
    def user_home(self) -> Path:
        """What the spec calls `~`: SVC_CONSOLE_HOME when set (tests never touch the real home)."""
        return self.home if self.explicit_home else Path.home()


def resolve_paths(env: Mapping[str, str] | None = None) -> Paths:
    env = os.environ if env is None else env
    home, explicit = home_folder(env)
    socket = Path(env["SVC_CONSOLE_SOCKET"]) if env.get("SVC_CONSOLE_SOCKET") else home / "svc.sock"
    return Paths(home=home, socket=socket.expanduser().absolute(), explicit_home=explicit)
