"""Shared fixtures: a temporary SVC_CONSOLE_HOME, the sandbox served over real HTTP on loopback,
and a started console runtime (ledger file, broker, Unix socket) against it."""

from __future__ import annotations

import itertools
import shutil
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import FakeClock

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
    for variable in ("SVC_BASE_URL", "SVC_WALLET_API_BASE", "SVC_API_KEY", "SVC_WALLET_CONFIG"):
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
def make_runtime(paths: Paths, sandbox: Any) -> Callable[..., Runtime]:
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
            paths=paths, sandbox=sandbox, config=BrokerConfig(**config), broker_options=options
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
