"""The console as a system service, running as a user of its own: where it lives, the systemd unit
that runs it (and launchd's equivalent), the settings that open its sockets to the operator, and
whether such an install is present. Pure text from a layout: `service install --dry-run` prints
it, the tests check it, and only `cli/service.py` writes it anywhere.

The keys and the ledger then belong to that user, in a folder no one else can enter, and agents
of the operator's user reach the console only through its sockets: they can ask, never read a key
or spend past a decision.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from svc_console.config.paths import SERVICE_AGENTS_SOCKET, SERVICE_OPERATOR_SOCKET

SERVICE_USER = "svc-console"
SERVICE_HOME = Path("/var/lib/svc-console")
UNIT_PATH = Path("/etc/systemd/system/svc-console.service")
SYSTEMD_BOOTED = Path("/run/systemd/system")
PLIST_PATH = Path("/Library/LaunchDaemons/com.svc-console.serve.plist")
# A program under these is out of the service's reach (ProtectHome) or gone at logout.
UNREACHABLE = (Path("/home"), Path("/root"), Path("/run/user"))


@dataclass(frozen=True)
class ServiceLayout:
    """Where the service's parts go. Tests make one under a temporary folder."""

    program: tuple[str, ...]  # how to run svc-console: an absolute interpreter and its module
    user: str = SERVICE_USER
    home: Path = SERVICE_HOME
    agents_socket: Path = SERVICE_AGENTS_SOCKET
    operator_socket: Path = SERVICE_OPERATOR_SOCKET
    unit_path: Path = UNIT_PATH
    environment: dict[str, str] = field(default_factory=dict)  # more of the service's (a URL)

    @property
    def env(self) -> dict[str, str]:
        return {
            "SVC_CONSOLE_HOME": str(self.home),
            "SVC_CONSOLE_SOCKET": str(self.agents_socket),
            "SVC_CONSOLE_OPERATOR_SOCKET": str(self.operator_socket),
            "HOME": str(self.home),
            **self.environment,
        }


def program_problem(program: tuple[str, ...]) -> str | None:
    """Why the service could not run `program`, or None."""
    first = Path(program[0])
    if not first.is_absolute():
        return f"{first} is not an absolute path"
    for place in UNREACHABLE:
        if any(p == place or place in p.parents for p in (first, first.resolve())):
            return (
                f"svc-console runs from {first}, under {place}, which the service cannot reach"
                " (ProtectHome): install it system-wide first, e.g. `sudo pipx install --global"
                " svc-console`, and run that one"
            )
    return None


def systemd_problem(booted: Path = SYSTEMD_BOOTED) -> str | None:
    """Why systemd could not start the unit here, or None: systemd is not this machine's init
    (`booted`, the folder it makes at boot, is how sd_booted(3) tells)."""
    if booted.is_dir():
        return None
    return (
        f"systemd is not running on this machine (no {booted}), so it could not start the"
        " service; nothing was done (`--dry-run` shows the steps; docs/laptop.md has the same"
        " set-up by hand)"
    )


def unit_text(layout: ServiceLayout) -> str:
    """The systemd system unit that runs `svc-console serve` as the service's user."""
    runtime = layout.agents_socket.parent
    environment = "".join(
        f'Environment="{key}={value}"\n' for key, value in sorted(layout.env.items())
    )
    return f"""[Unit]
Description=svc-console: the broker agents ask before they spend
After=network-online.target
Wants=network-online.target

[Service]
Type=simple
User={layout.user}
Group={layout.user}
ExecStart={" ".join(layout.program)} serve
{environment}UMask=0077
RuntimeDirectory={runtime.name}
RuntimeDirectoryMode=0711
ReadWritePaths={layout.home}
NoNewPrivileges=yes
ProtectHome=yes
ProtectSystem=strict
PrivateTmp=yes
PrivateDevices=yes
ProtectKernelTunables=yes
ProtectControlGroups=yes
RestrictSUIDSGID=yes
Restart=on-failure

[Install]
WantedBy=multi-user.target
"""


def plist_text(layout: ServiceLayout) -> str:
    """launchd's equivalent, for macOS (documented, not tested here: docs/laptop.md)."""
    arguments = "".join(f"    <string>{part}</string>\n" for part in (*layout.program, "serve"))
    environment = "".join(
        f"    <key>{key}</key><string>{value}</string>\n"
        for key, value in sorted(layout.env.items())
    )
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<plist version="1.0">
<dict>
  <key>Label</key><string>com.svc-console.serve</string>
  <key>UserName</key><string>_{layout.user.replace("-", "")}</string>
  <key>ProgramArguments</key>
  <array>
{arguments}  </array>
  <key>EnvironmentVariables</key>
  <dict>
{environment}  </dict>
  <key>Umask</key><integer>63</integer>
  <key>RunAtLoad</key><true/>
  <key>KeepAlive</key><true/>
</dict>
</plist>
"""


def with_access(text: str, uid: int, group: str | None = None) -> str:
    """settings.toml's text with the service's access: the agents' socket open to `uid` (or to
    `group`), the operator socket to `uid`; the rest of the file as it was. Raises ValueError
    when the file already says otherwise."""
    read = tomllib.loads(text)
    agents = ("group", f'"{group}"') if group is not None else ("uids", f"[{uid}]")
    for table, (key, value) in (("agents", agents), ("operator", ("uids", f"[{uid}]"))):
        held = read.get(table, {}).get(key)
        if held is None:
            text = _set_key(text, table, f"{key} = {value}")
        elif held != tomllib.loads(f"v = {value}")["v"]:
            raise ValueError(
                f"settings.toml already sets [{table}] {key} = {held!r}: make it {value}, or"
                " remove it, and run this again"
            )
    tomllib.loads(text)  # what was written still reads
    return text


def without_access(text: str, uid: int) -> str:
    """settings.toml's text without what `with_access` set for `uid` (the operator socket open to
    other uids: refused in the operator's own home), the rest as it was."""
    lines, table = [], None
    for line in text.splitlines(keepends=True):
        header = re.match(r"^\[([a-z_]+)\]", line)
        if header is not None:
            table = header.group(1)
        ours = (table == "operator" and re.match(r"^uids\s*=", line)) or (
            table == "agents" and line.strip() == f"uids = [{uid}]"
        )
        if not ours:
            lines.append(line)
    return _without_empty_tables("".join(lines), ("agents", "operator"))


def _without_empty_tables(text: str, tables: tuple[str, ...]) -> str:
    """`text` without those of `tables` left holding nothing (as `with_access` made them, into a
    file that had none): the file reads as it did before the install."""
    kept = re.sub(
        rf"^\[(?:{'|'.join(tables)})\][ \t]*\n(?:[ \t]*\n)*(?=\[|\Z)", "", text, flags=re.MULTILINE
    )
    return kept.rstrip("\n") + "\n" if kept.strip() else ""


def _set_key(text: str, table: str, line: str) -> str:
    header = re.search(rf"^\[{table}\][ \t]*(#.*)?$", text, flags=re.MULTILINE)
    if header is None:
        return f"{text.rstrip()}\n\n[{table}]\n{line}\n".lstrip()
    return f"{text[: header.end()]}\n{line}{text[header.end() :]}"


@dataclass(frozen=True)
class ServiceInstall:
    """A service install found on this machine, as its unit says."""

    unit: Path
    user: str
    home: Path
    agents_socket: Path
    operator_socket: Path


def installed_service(unit: Path = UNIT_PATH) -> ServiceInstall | None:
    """The service install present (its unit, written by `service install`), or None. For
    `doctor`, which names the mode the console runs in."""
    try:
        text = unit.read_text()
    except OSError:
        return None
    found = dict(re.findall(r'^Environment="(SVC_CONSOLE_[A-Z_]+)=(.*)"$', text, re.MULTILINE))
    user = re.search(r"^User=(.+)$", text, re.MULTILINE)
    if user is None or "SVC_CONSOLE_HOME" not in found:
        return None
    return ServiceInstall(
        unit,
        user.group(1),
        Path(found["SVC_CONSOLE_HOME"]),
        Path(found.get("SVC_CONSOLE_SOCKET", SERVICE_AGENTS_SOCKET)),
        Path(found.get("SVC_CONSOLE_OPERATOR_SOCKET", SERVICE_OPERATOR_SOCKET)),
    )
