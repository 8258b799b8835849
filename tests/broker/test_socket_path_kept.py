"""A broker removes only the socket file it bound (DESIGN.md invariant 14): a `serve` refused
because the agents' socket path holds a regular file, or another broker's live socket, leaves the
path as it found it, and the other broker goes on answering its agents.

The refused start is the real command (`svc-console serve` in a process of its own); the other
broker is a runtime of this test, on a home of its own.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from svc_console.agent import AsyncAgent
from svc_console.runtime import Runtime

CLI = [sys.executable, "-m", "svc_console"]


@pytest.fixture
def other_home() -> Iterator[Path]:
    """The refused broker's own home (short: its operator socket lives there)."""
    folder = Path(tempfile.mkdtemp(prefix="svc-"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def refused_serve(home: Path, socket_path: Path) -> subprocess.CompletedProcess[str]:
    """`svc-console serve` on `home`, its agents' socket at `socket_path`: refused."""
    env = {**os.environ, "SVC_CONSOLE_HOME": str(home), "SVC_CONSOLE_SOCKET": str(socket_path)}
    done = subprocess.run([*CLI, "serve"], capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode != 0, done
    assert "Traceback" not in done.stderr and done.stderr.count("\n") == 1, done.stderr
    return done


def test_a_regular_file_at_the_socket_path_is_left_as_it_was(other_home: Path, tmp_path: Path):
    place = tmp_path / "agents.sock"
    place.write_text("the operator's notes, not a socket\n")
    before = place.stat()
    done = refused_serve(other_home, place)
    refusal = f"{place} exists and is not a socket; refusing to replace it"
    assert done.stderr == f"svc-console: {refusal}\n"
    after = place.stat()
    assert (after.st_ino, after.st_size, after.st_mtime_ns) == (
        before.st_ino,
        before.st_size,
        before.st_mtime_ns,
    )
    assert place.read_text() == "the operator's notes, not a socket\n"


async def test_another_brokers_live_socket_is_left_and_still_answers(
    runtime: Runtime, other_home: Path
):
    place = runtime.paths.socket
    before = place.lstat()
    done = refused_serve(other_home, place)
    assert done.stderr == f"svc-console: another broker is listening on {place}\n"
    after = place.lstat()
    assert (after.st_dev, after.st_ino) == (before.st_dev, before.st_ino)
    async with AsyncAgent("still-served", place) as agent:
        assert agent.hello_info["server"] == "svc-console"


async def test_a_broker_stopping_removes_its_own_socket_and_only_it(runtime: Runtime):
    """A file put at the path after the broker bound it (the operator moved things around) is
    not the broker's to remove; its own socket is removed at its stop."""
    operator_socket = runtime.paths.operator_socket
    place = runtime.paths.socket
    place.unlink()
    place.write_text("someone else's\n")
    await runtime.stop()
    assert place.read_text() == "someone else's\n"
    assert not operator_socket.exists()
