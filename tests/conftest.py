"""Shared fixtures: a temporary SVC_CONSOLE_HOME, the sandbox served over real HTTP on loopback,
and a started console runtime (ledger file, broker, Unix socket) against it."""

from __future__ import annotations

import itertools
import os
import shutil
import socket
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import FakeClock
from postgres import (
    ENGINES,
    RUNTIME_ENGINE,
    engines_of,
    runtime_ledger_gone,
    runtime_ledger_is,
    url_for,
)
from textual import _wait

from svc_console.broker import BrokerConfig
from svc_console.config import slow_hash
from svc_console.config.paths import Paths
from svc_console.runtime import Runtime
from svc_console.tui.approvals import notices

# A decision's evidence names the deciding process (its /proc comm); screens show it. The same
# name whether the suite was started as `python -m pytest` or as `pytest`, so snapshots agree.
with open("/proc/self/comm", "w") as comm:
    comm.write("python")

# What falls back to the user's own folders (the platform's data folder where a test sets no
# SVC_CONSOLE_HOME: the sandbox's outbox, say) finds this process's own, under /tmp: never the
# machine's, and never another worker's of a parallel run.
_OWN_FOLDERS = Path(tempfile.mkdtemp(prefix="svc-tests-"))
for _variable in ("HOME", "XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME"):
    os.environ[_variable] = str(_OWN_FOLDERS / _variable.lower())


# Textual's pilot, after every key and pause, waits for the process to look idle: it samples
# the CPU time every 20 ms until one sample took under 1 ms. That is at least 40 ms a key, and was
# two thirds of the sign-in tests' time. Sampled every 5 ms, against the same 1 ms, the quiet
# after a key is seen within a few milliseconds. Tests never rely on the pause outlasting work:
# they wait for the state they assert (`until`).
_wait.SLEEP_GRANULARITY = 0.005

# The approvals screen gathers arrivals for a second and spaces its announcements five seconds
# apart, for an operator's eyes. The tests wait for announcements as events, and at that pace a
# test with two arrivals waited six seconds. tests/tui/test_announcer_pace.py holds the pacing.
notices.GATHER_S, notices.SPACING_S = 0.2, 1.0

# Passphrases and operators' tokens are kept as scrypt hashes that take a fifth of a second to
# check, on purpose. Those the tests make in this process cost an eighth of that: a hash carries
# its cost in its text, so the console checks either kind. tests/config/test_slow_hash.py holds
# the console's own cost, in a process of its own.
slow_hash.N = 2**12


def pytest_unconfigure(config: pytest.Config) -> None:
    shutil.rmtree(_OWN_FOLDERS, ignore_errors=True)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """A test that takes `engine` (through `ledger_url`, or a ledger fixture of its module) is
    made once for each engine it can run on (`@pytest.mark.engines`), never made for an engine
    only to be skipped there."""
    if "engine" in metafunc.fixturenames:
        engines = engines_of(metafunc.definition)
        metafunc.parametrize("engine", engines, indirect=True, scope="module")


def _engine(item: pytest.Item) -> str | None:
    return getattr(getattr(item, "callspec", None), "params", {}).get("engine")


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A test of the runtimes' ledger (no `engine` of its own) marked for engines that exclude
    SVC_TESTS_LEDGER's is left out of the run, as such tests are on the other engine.

    Within a module, the tests of one engine run together, so a module's ledger fixture is set
    up once for each engine: pytest groups a parameter by its position in each test's list, and
    a test made for PostgreSQL alone has it first."""
    left = [i for i in items if _engine(i) is None and RUNTIME_ENGINE not in engines_of(i)]
    if left:
        config.hook.pytest_deselected(items=left)
        items[:] = [item for item in items if item not in left]
    first: dict[Path, int] = {}
    for number, item in enumerate(items):
        first.setdefault(item.path, number)
    items.sort(key=lambda item: (first[item.path], ENGINES.index(_engine(item) or ENGINES[0])))


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
    monkeypatch.delenv("SVC_CONSOLE_OPERATOR_SOCKET", raising=False)
    for variable in (
        "SVC_BASE_URL", "SVC_WALLET_API_BASE", "SVC_API_KEY", "SVC_WALLET_CONFIG", "SVC_LEDGER_URL",
    ):  # fmt: skip
        monkeypatch.delenv(variable, raising=False)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def paths(home: Path, runtime_ledger_url: str | None) -> Paths:
    # The runtimes' ledger is noted for every home a test uses, so that its seeds and reads
    # (`helpers.runtime_ledger`) find the one its runtimes open, whichever fixture came first.
    return Paths(home=home, socket=home / "svc.sock", explicit_home=True)


@pytest.fixture
def sandbox() -> Iterator[Any]:
    from svc_console.sandbox.server import SandboxServer

    server = SandboxServer()
    server.start()
    yield server
    # Not waited for: the test is over, and uvicorn's graceful shutdown takes a tenth of a second
    # or two (its exit flag's tick, then a fixed pause), in every test that used a sandbox.
    server.stop(wait=False)


@pytest.fixture
def refused_url() -> Iterator[str]:
    """An address where every connection is refused: a port of the test's own, bound and never
    listened on (no port is fixed, and no other test can take it meanwhile)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        yield f"http://127.0.0.1:{probe.getsockname()[1]}"


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def runtime_ledger_url(request: pytest.FixtureRequest, home: Path) -> Iterator[str | None]:
    """The ledger the tests' runtimes open: the sandbox's file, or with SVC_TESTS_LEDGER=postgresql
    a fresh database of the tests' own PostgreSQL (to run the tests on that engine). Noted for
    the test's home: the test's own seeds and reads (`helpers.runtime_ledger`) open it too."""
    url = url_for(request, RUNTIME_ENGINE)
    runtime_ledger_is(home, url)
    yield url
    runtime_ledger_gone(home)


@pytest.fixture
def make_runtime(
    paths: Paths, sandbox: Any, runtime_ledger_url: str | None
) -> Callable[..., Runtime]:
    """Build (not start) a Runtime against the sandbox; keyword arguments go to BrokerConfig,
    `clock=` and `ids=` replace the broker's clock and request ids, `ledger_url=` names a
    PostgreSQL ledger of the test's own instead of the runtimes' (`runtime_ledger_url`)."""

    def build(
        *,
        clock: Callable[[], float] | None = None,
        ids: bool = False,
        ledger_url: str | None = None,
        **config: Any,
    ):
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
            ledger_url=ledger_url or runtime_ledger_url,
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


@pytest.fixture(scope="module")
def engine(request: pytest.FixtureRequest) -> str:
    """The ledger engine a test runs on, one of ENGINES (pytest_generate_tests makes the test
    once for each of those it can run on)."""
    return request.param


@pytest.fixture
def ledger_url(request: pytest.FixtureRequest, engine: str) -> str | None:
    """The ledger a ledger test opens on its engine: None for the SQLite file, else the URL of
    a fresh PostgreSQL database. Ledger tests take it and pass it as `Ledger(url=...)`."""
    return url_for(request, engine)
