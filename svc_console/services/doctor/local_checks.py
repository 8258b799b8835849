"""The doctor's checks of this machine: whose user the console runs as and what that leaves an
agent of the same user, the home and socket folders, same-user agents and operator credentials,
where secrets are kept, and whether every policy file loads."""

from __future__ import annotations

import os
import pwd
import stat
from pathlib import Path

from svc_console.broker.agent_access import APART
from svc_console.broker.socket_folder import unsafe
from svc_console.config.agents import AgentSettings, agent_settings
from svc_console.config.errors import SettingsError
from svc_console.config.operator_accounts import OperatorAccounts
from svc_console.config.operator_passphrase import OperatorPassphrase
from svc_console.config.paths import Paths
from svc_console.config.service import configured_ledger
from svc_console.services.doctor.findings import Finding, note, ok, serious, warning

SAME_USER_CAN = (
    "any program of that user, an agent included, can read the console's home (the ledger, the"
    " policies, the wallet config, the passphrase's and tokens' slow hashes), change its files"
    " for its next start, stop it or replace the program; it cannot decide over the operator"
    " socket without the passphrase or an operator account's token"
)
OWN_USER_FIX = (
    "run the console as a system user of its own that owns SVC_CONSOLE_HOME, and agents as"
    " other users (README: Keeping agents apart)"
)


def examine(paths: Paths) -> list[Finding]:
    found = [mode(os.getuid()), *_home(paths)]
    try:
        settings = agent_settings(paths.settings)
    except SettingsError as exc:
        return [*found, serious("settings", str(exc), f"correct {paths.settings}")]
    found += _sockets(paths, settings)
    found.append(_same_user(paths, settings))
    found.append(_secrets(paths))
    found.append(_policies(paths))
    found.append(_broker(paths))
    return found


def _login_uid_min() -> int:
    try:
        for line in Path("/etc/login.defs").read_text().splitlines():
            words = line.split()
            if len(words) == 2 and words[0] == "UID_MIN":
                return int(words[1])
    except (OSError, ValueError):
        pass
    return 1000


def system_user(entry: pwd.struct_passwd) -> bool:
    """A user no one logs in as: below the login uids, or with no login shell."""
    shell = os.path.basename(entry.pw_shell or "")
    return 0 < entry.pw_uid < _login_uid_min() or shell in ("nologin", "false")


def mode(uid: int) -> Finding:
    """Which of the two ways a console running as `uid` runs, and what an agent of that user
    can do."""
    try:
        entry = pwd.getpwuid(uid)
    except KeyError:
        return note("mode", f"the console runs as uid {uid}, a user with no name here")
    who = f"{entry.pw_name} (uid {uid})"
    if uid == 0:
        return warning(
            "mode",
            f"the console runs as root: {SAME_USER_CAN}, and whatever takes it over owns the"
            " machine",
            OWN_USER_FIX,
        )
    if system_user(entry):
        return note(
            "mode",
            f"the console runs as {who}, a system user of its own: agents of your user reach"
            " only the agents' socket (where [agents] opens it to them), submit and follow their"
            " own requests, and cannot read its home, ledger, keys or wallet config",
        )
    return Finding(
        "mode",
        "note",
        f"the console runs as your own user {who}: {SAME_USER_CAN}",
        OWN_USER_FIX,
    )


def _home(paths: Paths) -> list[Finding]:
    home = paths.home
    if not home.is_dir():
        return [note("home", f"{home} does not exist yet: made owner-only at the first start")]
    info = home.stat()
    if info.st_uid != os.getuid():
        return [
            serious(
                "home",
                f"{home} belongs to uid {info.st_uid}, not to the user running this (uid"
                f" {os.getuid()})",
                "run the console, and doctor, as the user that owns its home",
            )
        ]
    found = []
    mode = stat.S_IMODE(info.st_mode)
    if mode & 0o077:
        found.append(
            serious(
                "home",
                f"{home} is open to others (mode {mode:o}): they may read the ledger and keys",
                f"chmod 700 {home}",
            )
        )
    for path in sorted(home.iterdir()):
        if path.is_symlink() or not path.is_file():
            continue
        mode = stat.S_IMODE(path.stat().st_mode)
        if mode & 0o077:
            found.append(
                serious(
                    "files",
                    f"{path} is readable or writable by others (mode {mode:o})",
                    f"chmod 600 {path}",
                )
            )
    return found or [ok("home", f"{home} and the files in it are owner-only")]


def _sockets(paths: Paths, settings: AgentSettings) -> list[Finding]:
    found = []
    folder = paths.socket.parent.absolute()
    inside_home = folder == paths.home or paths.home in folder.parents
    if inside_home and settings.opened:
        found.append(
            serious(
                "sockets",
                f"the agents' socket {paths.socket} is inside SVC_CONSOLE_HOME, which only you"
                " can enter, yet [agents] opens it to other users",
                "put it where agents can reach it: SVC_CONSOLE_SOCKET=/run/svc-console/agents.sock",
            )
        )
    elif not inside_home and folder.exists():
        problem = unsafe(folder)
        if problem is not None:
            found.append(
                serious(
                    "sockets",
                    f"the agents' socket folder is not safe: {problem}",
                    "another user could put their own socket in the console's place: fix the"
                    " folder's owner and mode, or set SVC_CONSOLE_SOCKET to a safe one",
                )
            )
    operator = paths.operator_socket
    if operator.exists() and stat.S_IMODE(operator.stat().st_mode) & 0o077:
        mode = stat.S_IMODE(operator.stat().st_mode)
        found.append(
            serious(
                "sockets",
                f"the operator socket {operator} is open to others (mode {mode:o})",
                "restart the console (it binds the socket owner-only)",
            )
        )
    return found or [ok("sockets", f"the socket folders are safe ({folder})")]


def _sandbox(paths: Paths) -> bool:
    return configured_ledger(paths) == paths.ledger(sandbox=True)


def _same_user(paths: Paths, settings: AgentSettings) -> Finding:
    enrolment = settings.enrolment_for(sandbox=_sandbox(paths))
    if not (enrolment == "open" or settings.allow_same_user):
        return ok("same-user", "agents of your own user are refused on the agents' socket")
    why = "open enrolment" if enrolment == "open" else "[agents] allow_same_user"
    try:
        credential = (
            OperatorPassphrase(paths.operator_passphrase).is_set()
            or OperatorAccounts(paths.operator_accounts).any()
        )
    except (OSError, ValueError) as exc:
        return serious(
            "same-user",
            f"the operator credentials cannot be read: {exc}",
            f"check {paths.operator_accounts}",
        )
    if not credential:
        return serious(
            "same-user",
            f"agents of your own user are accepted ({why}) and no operator credential is set:"
            " every decision outside the open console is refused until one is",
            f"set one: svc-console operators passwd (or operators add NAME); and {APART}",
        )
    return warning(
        "same-user",
        f"agents of your own user are accepted ({why}); an operator credential is set, so they"
        f" cannot decide, but {SAME_USER_CAN.split('; it cannot')[0]}",
        APART,
    )


def _secrets(paths: Paths) -> Finding:
    from svc_console.config.credentials import Credentials

    try:
        where = Credentials(paths).where
    except Exception as exc:  # a keyring backend that fails to load is a finding, not a crash
        return warning("keyring", f"the OS keyring cannot be used: {exc}", "check its set-up")
    return note("keyring", f"secrets are kept in {where}")


def _policies(paths: Paths) -> Finding:
    from svc_console.config.policy_files import policy_files
    from svc_console.policy.errors import PolicyInvalid
    from svc_console.policy.loader import load, read

    try:
        files, optional = policy_files(paths)
    except SettingsError as exc:
        return serious("policy", str(exc), f"correct [policy] in {paths.settings}")
    present = [path for path in files if path.is_file()]
    missing = [path for path in files if not path.is_file()]
    if missing and not optional:
        return serious(
            "policy",
            f"the policy file {missing[0]} is missing",
            "create it, or name the files in force in [policy] files of settings.toml",
        )
    if not present:
        return note("policy", f"no policy file ({files[0]}): the operator decides every request")
    try:
        load([read(path, str(path)) for path in present])
    except PolicyInvalid as exc:
        count = len(exc.errors)
        return serious(
            "policy",
            f"the policy does not load ({count} error{'s' if count > 1 else ''}; first:"
            f" {exc.errors[0]}): the last valid one stays in force, auto-approval suspended",
            "svc-console policy check " + " ".join(str(path) for path in present),
        )
    except OSError as exc:
        return serious("policy", f"a policy file cannot be read: {exc}", "check its mode")
    names = ", ".join(path.name for path in present)
    return ok("policy", f"the policy loads ({names})")


def _broker(paths: Paths) -> Finding:
    from svc_console.services.broker_probe import running_broker

    hello = running_broker(paths.operator_socket)
    if hello is None:
        return note("broker", "no broker is running for this home")
    return note("broker", f"a broker answers on {paths.operator_socket}")
