"""Where svc-console keeps its state and which service it speaks to, from the environment.

Everything lives under one home folder (SVC_CONSOLE_HOME, else the platform's user data dir),
created owner-only. The spec's own files (`~/.svc-agentwallet/config.json`, `~/.svc-wallet.json`)
are read from the user's home, or from SVC_CONSOLE_HOME when that is set.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

# sun_path of a Unix socket holds 108 bytes on Linux, including the terminating NUL.
MAX_SOCKET_PATH = 107


class SettingsError(Exception):
    """A setting or a settings file is wrong; the message says how to fix it."""


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
    def operator_token(self) -> Path:
        return self.home / "operator.token"

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


@dataclass(frozen=True)
class ServiceConfig:
    """A real marketplace to speak to. Absent means the embedded sandbox."""

    base_url: str
    wallet_api_base: str
    api_key: str
    username: str
    api_token: str

    def __repr__(self) -> str:  # never let a credential reach a log line or a traceback
        return f"ServiceConfig(base_url={self.base_url!r}, username={self.username!r})"


def resolve_paths(env: Mapping[str, str] | None = None) -> Paths:
    env = os.environ if env is None else env
    explicit = bool(env.get("SVC_CONSOLE_HOME"))
    if explicit:
        home = Path(env["SVC_CONSOLE_HOME"]).expanduser().absolute()
    else:
        import platformdirs

        home = Path(platformdirs.user_data_dir("svc-console", appauthor=False))
    socket = Path(env["SVC_CONSOLE_SOCKET"]) if env.get("SVC_CONSOLE_SOCKET") else home / "svc.sock"
    return Paths(home=home, socket=socket.expanduser().absolute(), explicit_home=explicit)


def ensure_private_dir(path: Path) -> Path:
    """Create a folder readable by its owner only, tightening it if it already exists."""
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    if stat.S_IMODE(path.stat().st_mode) != 0o700:
        path.chmod(0o700)
    return path


def write_private(path: Path, text: str) -> None:
    """Write a file that only its owner can read, atomically (never a half-written secret).

    The temporary file is created afresh (O_EXCL, no symlink followed), so a leftover one with a
    wider mode can never lend it that mode."""
    ensure_private_dir(path.parent)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with contextlib.suppress(FileNotFoundError):
        tmp.unlink()
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise


def read_private(path: Path) -> str:
    """Read an owner-only file; refuse one that others can read (it may hold a secret)."""
    mode = stat.S_IMODE(path.stat().st_mode)
    if mode & 0o077:
        raise SettingsError(f"{path} is readable by others (mode {mode:o}); run: chmod 600 {path}")
    return path.read_text()


def _service_section(path: Path) -> dict[str, str]:
    """The `[service]` table of settings.toml: where the marketplace is (never its secrets)."""
    import tomllib

    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise SettingsError(f"{path}: {exc}") from None
    section = data.get("service", {})
    allowed = {"base_url", "wallet_api_base", "wallet_config"}
    if not isinstance(section, dict) or set(section) - allowed:
        unknown = ", ".join(sorted(set(section) - allowed)) if isinstance(section, dict) else ""
        raise SettingsError(
            f"{path}: [service] takes only {', '.join(sorted(allowed))}"
            + (f"; unknown: {unknown}" if unknown else "")
        )
    if not all(isinstance(value, str) for value in section.values()):
        raise SettingsError(f"{path}: the values of [service] must be strings")
    return section


def policy_files(
    paths: Paths, explicit: Sequence[str] = (), env: Mapping[str, str] | None = None
) -> tuple[list[Path], bool]:
    """The SKILLS.md files in force, and whether they are optional (may be absent): `--policy`
    options, else SVC_CONSOLE_POLICY (paths separated by the OS's path separator), else the
    `[policy]` table's `files` in settings.toml (relative to the home folder), else
    `$SVC_CONSOLE_HOME/SKILLS.md`, the only optional one (absent: the operator decides all)."""
    import tomllib

    env = os.environ if env is None else env
    named = list(explicit) or [p for p in env.get("SVC_CONSOLE_POLICY", "").split(os.pathsep) if p]
    if not named:
        settings = paths.home / "settings.toml"
        try:
            table = tomllib.loads(settings.read_text(encoding="utf-8")).get("policy", {})
        except FileNotFoundError:
            table = {}
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise SettingsError(f"{settings}: {exc}") from None
        files = table.get("files", []) if isinstance(table, dict) else None
        if not isinstance(files, list) or not all(isinstance(f, str) for f in files):
            raise SettingsError(
                f'{settings}: [policy] files must be a list of paths, ["SKILLS.md"]'
            )
        named = [str(paths.home / Path(f).expanduser()) for f in files]
    if not named:
        return [paths.home / "SKILLS.md"], True
    return [Path(name).expanduser().absolute() for name in named], False


def wallet_config_file(paths: Paths, env: Mapping[str, str] | None = None) -> Path | None:
    """The wallet connection's file when it is not the spec's default: SVC_WALLET_CONFIG, then
    the `[service]` table's `wallet_config` (None: `~/.svc-agentwallet/config.json`)."""
    env = os.environ if env is None else env
    section = _service_section(paths.home / "settings.toml")
    value = env.get("SVC_WALLET_CONFIG") or section.get("wallet_config")
    return Path(value) if value else None


def service_config(paths: Paths, env: Mapping[str, str] | None = None) -> ServiceConfig | None:
    """The configured service, or None for the embedded sandbox (no base URL anywhere).

    Each value comes from the environment first (DESIGN.md, Environment), then the `[service]`
    table of settings.toml; the secrets from SVC_API_KEY or what `login` and `connect` saved."""
    from svc_console.credentials import Credentials

    env = os.environ if env is None else env
    section = _service_section(paths.home / "settings.toml")
    base_url = (env.get("SVC_BASE_URL") or section.get("base_url") or "").rstrip("/")
    if not base_url:
        return None
    creds = Credentials(paths, connection_file=wallet_config_file(paths, env))
    api_key = env.get("SVC_API_KEY")
    if not api_key:
        account = creds.account()
        if account is None or account.base_url.rstrip("/") != base_url:
            raise SettingsError(f"no API key for {base_url}: run svc-console login")
        api_key = account.api_key
    if not creds.connection_file.exists():
        raise SettingsError(f"no wallet config at {creds.connection_file}; run svc-console connect")
    connection = creds.connection()
    if connection is None:
        raise SettingsError(
            f"{creds.connection_file} is not a complete wallet config (username, apiToken and"
            " apiBase are needed); run svc-console connect"
        )
    api_base = env.get("SVC_WALLET_API_BASE") or section.get("wallet_api_base")
    return ServiceConfig(
        base_url=base_url,
        wallet_api_base=(api_base or connection.api_base).rstrip("/"),
        api_key=api_key,
        username=connection.username,
        api_token=connection.api_token,
    )
