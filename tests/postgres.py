"""A real PostgreSQL for the tests, started by them: `initdb` and `pg_ctl` of the PostgreSQL found
under /usr/lib/postgresql (or on PATH), a cluster in a temporary folder listening only on a Unix
socket in it, fast and unsafe (no fsync: nothing of it outlives the session). Each test gets a
database of its own (`new_database`). Where no PostgreSQL is installed, `start` raises
`Unavailable` with the reason, and the tests that need one are skipped with it.

PostgreSQL refuses to run as root: run as root (as the CI is), the server runs as `postgres`.
"""

from __future__ import annotations

import itertools
import os
import pwd
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

ENGINES = ("sqlite", "postgresql")
# The engine of the tests' runtimes (the `make_runtime` fixture): the sandbox's SQLite file, or
# a database of the tests' own server with SVC_TESTS_LEDGER=postgresql.
RUNTIME_ENGINE = os.environ.get("SVC_TESTS_LEDGER", "sqlite")


def engines_of(node: Any) -> tuple[str, ...]:
    """The engines a test can run on: those its `engines` mark names, else every one."""
    mark = node.get_closest_marker("engines")
    if mark is None:
        return ENGINES
    unknown = set(mark.args) - set(ENGINES)
    if unknown or not mark.args:
        raise ValueError(f"{node.nodeid}: engines() takes some of {ENGINES}, not {mark.args}")
    return tuple(mark.args)


# The ledger of the runtimes each test's home starts (conftest's `runtime_ledger_url`), so that
# what a test writes or reads there itself (`runtime_ledger_of`) is what its runtimes see, on
# either engine.
_RUNTIME_LEDGERS: dict[Path, str | None] = {}


def runtime_ledger_is(home: Path, url: str | None) -> None:
    _RUNTIME_LEDGERS[home] = url


def runtime_ledger_gone(home: Path) -> None:
    _RUNTIME_LEDGERS.pop(home, None)


def runtime_ledger_of(home: Path) -> str | None:
    """The URL of the ledger the runtimes of `home` open (None: the sandbox's SQLite file)."""
    return _RUNTIME_LEDGERS.get(home)


def url_for(request: Any, engine: str) -> str | None:
    """The URL of a fresh database of `engine` for a test (None: the SQLite file), from the
    session's server; the test is skipped, with the reason, where there is none."""
    if engine == "sqlite":
        return None
    return request.getfixturevalue("postgres").new_database()


class Unavailable(Exception):
    """No PostgreSQL could be started here; the message says why."""


def _binaries() -> Path:
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/pg_ctl"), reverse=True)
    if found:
        return found[0].parent
    on_path = shutil.which("pg_ctl")
    if on_path and shutil.which("initdb"):
        return Path(on_path).parent
    raise Unavailable("no PostgreSQL binaries (initdb, pg_ctl) in /usr/lib/postgresql or on PATH")


class PostgresServer:
    def __init__(self) -> None:
        self.folder: Path | None = None
        self._names = itertools.count(1)
        self._user: str | None = None

    def _run(self, *argv: str) -> None:
        done = subprocess.run(argv, user=self._user, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise Unavailable(f"{Path(argv[0]).name} failed: {done.stderr.strip()[-500:]}")

    def start(self) -> None:
        bin_dir = _binaries()
        if os.geteuid() == 0:
            try:
                self._user = pwd.getpwnam("postgres").pw_name
            except KeyError:
                raise Unavailable("running as root and there is no postgres user") from None
        # Short: the socket's path must fit in 107 bytes.
        self.folder = Path(tempfile.mkdtemp(prefix="pg-"))
        if self._user is not None:
            shutil.chown(self.folder, self._user)
        data = self.folder / "data"
        self._run(
            str(bin_dir / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust",
            "--encoding=UTF8", "--locale=C", "--no-sync",
        )  # fmt: skip
        # No autovacuum: a table is analysed only when a test says so, so the plans the tests
        # read are a fresh ledger's however long a module runs (its statistics would change them).
        options = (
            f"-c listen_addresses='' -c unix_socket_directories='{self.folder}'"
            " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
            " -c max_connections=200 -c autovacuum=off"
        )
        self._run(
            str(bin_dir / "pg_ctl"), "-D", str(data), "-o", options, "-w", "-t", "60",
            "-l", str(self.folder / "log"), "start",
        )  # fmt: skip
        self._pg_ctl = bin_dir / "pg_ctl"

    def url(self, database: str) -> str:
        return f"postgresql://postgres@/{database}?host={self.folder}"

    def new_database(self) -> str:
        """A fresh, empty database; its URL."""
        import psycopg

        name = f"ledger_{next(self._names)}"
        with psycopg.connect(self.url("postgres"), autocommit=True) as admin:
            admin.execute(f'CREATE DATABASE "{name}" TEMPLATE template0 STRATEGY file_copy')
        return self.url(name)

    def stop(self) -> None:
        if self.folder is None:
            return
        subprocess.run(
            [str(self._pg_ctl), "-D", str(self.folder / "data"), "-m", "immediate", "stop"],
            user=self._user, capture_output=True, check=False,
        )  # fmt: skip
        shutil.rmtree(self.folder, ignore_errors=True)
        self.folder = None
