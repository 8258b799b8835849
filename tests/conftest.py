"""Shared fixtures: a temporary SVC_CONSOLE_HOME, the sandbox served over real HTTP on loopback,
and a started console runtime (ledger file, broker, Unix socket) against it."""

from __future__ import annotations

import itertools
import os
import shutil
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import FakeClock
from postgres import ENGINES, url_for

from svc_console.broker import BrokerConfig
from svc_console.config.paths import Paths
from svc_console.runtime import Runtime

# A decision's evidence names the deciding process (its /proc comm); screens show it. The same
# name whether the suite was started as `python -m pytest` or as `pytest`, so snapshots agree.
with open("/proc/self/comm", "w") as comm:
    comm.write("python")


@pytest.fixture(autouse=True)
def no_os_keyring() -> Iterator[None]:
    """No test depends on the machine having an OS keyring: tests that want one install a
    stand-in backend themselves."""
    import keyring
    from keyring.backends import fail

    before = keyring.get_keyring()
    keyring.set_keyring(fail.Keyring())
    yield
    keyring.set_keyring(before)


@pytest.fixture
def home(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    # A short path under /tmp: a Unix socket's path may hold at most 107 bytes.
    folder = Path(tempfile.mkdtemp(prefix="svc-"))
    monkeypatch.setenv("SVC_CONSOLE_HOME", str(folder))
    monkeypatch.delenv("SVC_CONSOLE_SOCKET", raising=False)
    for variable in (
        "SVC_BASE_URL", "SVC_WALLET_API_BASE", "SVC_API_KEY", "SVC_WALLET_CONFIG", "SVC_LEDGER_URL",
    ):  # fmt: skip
        monkeypatch.delenv(variable, raising=False)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def paths(home: Path) -> Paths:
    return Paths(home=home, socket=home / "svc.sock", explicit_home=True)


@pytest.fixture
def sandbox() -> Iterator[Any]:
    from svc_console.sandbox.server import SandboxServer

    server = SandboxServer()
    server.start()
    yield server
    server.stop()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def runtime_ledger_url(request: pytest.FixtureRequest) -> str | None:
    """The ledger the tests' runtimes open: the sandbox's file, or with SVC_TESTS_LEDGER=postgresql
    a fresh database of the tests' own PostgreSQL (to run the broker's tests on that engine)."""
    return url_for(request, os.environ.get("SVC_TESTS_LEDGER", "sqlite"))


@pytest.fixture
def make_runtime(
    paths: Paths, sandbox: Any, runtime_ledger_url: str | None
) -> Callable[..., Runtime]:
    """Build (not start) a Runtime against the sandbox; keyword arguments go to BrokerConfig,
    `clock=` and `ids=` replace the broker's clock and request ids."""

    def build(*, clock: Callable[[], float] | None = None, ids: bool = False, **config: Any):
        options: dict[str, Any] = {}
        if clock is not None:
            options["clock"] = clock
        if ids:
            counter = itertools.count(1)
            options["new_id"] = lambda: f"req_{next(counter):04d}"
        return Runtime(
            paths=paths,
            sandbox=sandbox,
            config=BrokerConfig(**config),
            broker_options=options,
            ledger_url=runtime_ledger_url,
        )

    return build


@pytest.fixture
async def keep_started() -> AsyncIterator[Callable[[Runtime], Awaitable[Runtime]]]:
    """Start a runtime for a test (`await keep_started(runtime)`); whatever the test leaves
    running is stopped after it."""
    started: list[Runtime] = []

    async def start(runtime: Runtime) -> Runtime:
        await runtime.start()
        started.append(runtime)
        return runtime

    yield start
    for runtime in started:
        if runtime.broker is not None:
            await runtime.stop()


@pytest.fixture
async def runtime(make_runtime: Callable[..., Runtime]) -> AsyncIterator[Runtime]:
    rt = make_runtime()
    await rt.start()
    yield rt
    await rt.stop()


@pytest.fixture(scope="session")
def postgres() -> Iterator[Any]:
    """A PostgreSQL server for the session (tests/postgres.py), started when a test first asks
    for one; skipped, with the reason, where none can be started."""
    from postgres import PostgresServer, Unavailable

    server = PostgresServer()
    try:
        server.start()
    except Unavailable as exc:
        server.stop()
        pytest.skip(f"no PostgreSQL: {exc}")
    yield server
    server.stop()


@pytest.fixture(params=ENGINES)
def ledger_url(request: pytest.FixtureRequest) -> str | None:
    """The engine a ledger test runs on: None for the SQLite file (the default), else the URL
    of a fresh PostgreSQL database. Ledger tests take it and pass it as `Ledger(url=...)`."""
    return url_for(request, request.param)
