"""Where svc-console keeps its state, from the environment.

Everything lives under one home folder (SVC_CONSOLE_HOME, else the platform's user data dir),
created owner-only. The spec's own files (`~/.svc-agentwallet/config.json`, `~/.svc-wallet.json`)
are read from the user's home, or from SVC_CONSOLE_HOME when that is set.

A console installed as a system service (`svc-console service install`) runs as a user of its
own, its sockets in SERVICE_RUNTIME: the operator's tools and agents find them there when the
user's own console's are absent (`client_paths`), so an agent's configuration does not change.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from svc_console.core.home import home_folder

# sun_path of a Unix socket holds 108 bytes on Linux, including the terminating NUL.
MAX_SOCKET_PATH = 107
# Where a console running as its own user (a system service) puts its sockets.
SERVICE_RUNTIME = Path("/run/svc-console")
SERVICE_AGENTS_SOCKET = SERVICE_RUNTIME / "agents.sock"
SERVICE_OPERATOR_SOCKET = SERVICE_RUNTIME / "operator.sock"


@dataclass(frozen=True)
class Paths:
    home: Path
    socket: Path
    explicit_home: bool
    # SVC_CONSOLE_OPERATOR_SOCKET: the operator socket outside the home (a service's, opened to
    # the operators' uids); None: in the home folder.
    operator_socket_at: Path | None = None

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
        """Where the operator's tools (the CLI) reach the broker: owner-only, in the home folder,
        unless SVC_CONSOLE_OPERATOR_SOCKET puts it elsewhere."""
        return self.operator_socket_at or self.home / "operator.sock"

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
    operator = env.get("SVC_CONSOLE_OPERATOR_SOCKET")
    return Paths(
        home=home,
        socket=socket.expanduser().absolute(),
        explicit_home=explicit,
        operator_socket_at=Path(operator).expanduser().absolute() if operator else None,
    )


def client_paths(
    env: Mapping[str, str] | None = None,
    *,
    agents_socket: Path = SERVICE_AGENTS_SOCKET,
    operator_socket: Path = SERVICE_OPERATOR_SOCKET,
) -> Paths:
    """The paths a client (an agent, the operator's CLI) reaches the console by: its own user's
    sockets when they are there or named in the environment, else a service's when that runs."""
    env = os.environ if env is None else env
    paths = resolve_paths(env)
    socket, operator = paths.socket, paths.operator_socket_at
    if not env.get("SVC_CONSOLE_SOCKET"):
        socket = reachable(paths.socket, agents_socket)
    if not env.get("SVC_CONSOLE_OPERATOR_SOCKET"):
        found = reachable(paths.operator_socket, operator_socket)
        operator = None if found == paths.operator_socket else found
    return Paths(paths.home, socket, paths.explicit_home, operator)


def reachable(own: Path, service: Path) -> Path:
    """`own` when it is there or no service's is; else the service's."""
    # os.path.exists: a folder the caller may not enter says "not there", not an error.
    return service if not os.path.exists(own) and os.path.exists(service) else own
