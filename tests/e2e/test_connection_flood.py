"""Floods of connections against `serve` with few file descriptors (`ulimit -n 300`).

A thousand idle connections from one process: the operator still lists and decides, another
agent of that uid is told at once that its uid holds its share, and the log holds a few lines
about it, not a traceback per refusal. Five processes of another uid, each trying for more than a
uid's share: together they hold exactly one uid's share, and an agent of another uid is served.

No timing is asserted: only who was answered and what the log says.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

CLI = [sys.executable, "-m", "svc_console"]
OPEN_FILES = 300
FLOOD = 1000
AGENT = """
import sys
from svc_console.agent import Agent, AgentError
try:
    with Agent("bystander") as agent:
        print(agent.hello_info["server"], agent.hello_info["limits"]["max_connections"])
except AgentError as exc:
    sys.exit(f"refused ({exc.reason}): {exc.message}")
"""


def _few_files() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (OPEN_FILES, OPEN_FILES))


def serve_with_few_files(env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [*CLI, "serve"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        preexec_fn=_few_files,
    )


def test_a_thousand_idle_connections_lock_out_neither_the_operator_nor_other_agents(home: Path):
    server = serve_with_few_files()
    flood: list[socket.socket] = []
    try:
        assert "broker on" in server.stdout.readline(), server.stderr.read()
        agent = subprocess.run(
            [sys.executable, "-c", AGENT], capture_output=True, text=True, timeout=60
        )
        assert agent.returncode == 0, agent.stderr
        server_name, most = agent.stdout.split()
        assert server_name == "svc-console" and int(most) < OPEN_FILES // 2
        agents_socket = home / "svc.sock"
        for _ in range(FLOOD):
            connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            connection.settimeout(1)  # a full backlog makes connect wait: the flood moves on
            with contextlib.suppress(OSError):
                connection.connect(str(agents_socket))
            flood.append(connection)
        listing = subprocess.run(
            [*CLI, "approvals", "list", "--json"], capture_output=True, text=True, timeout=60
        )
        assert listing.returncode == 0, listing.stderr
        assert json.loads(listing.stdout) == []
        # The flood's uid holds its share: its next agent is told so, at once.
        agent = subprocess.run(
            [sys.executable, "-c", AGENT], capture_output=True, text=True, timeout=60
        )
        assert agent.returncode == 1, agent.stderr
        refused = f"refused (busy): too many connections from uid {os.getuid()} (at most"
        assert agent.stderr.startswith(refused), agent.stderr
    finally:
        for connection in flood:
            connection.close()
        server.terminate()
        server.wait(timeout=30)
    log = "\n".join(path.read_text() for path in (home / "logs").glob("*.log*"))
    refusals = [line for line in log.splitlines() if "socket refused" in line]
    assert 1 <= len(refusals) <= 3, refusals
    assert "too many connections from uid" in refusals[0]
    assert "Traceback" not in log


NOBODY = 65534
SYSTEM_PYTHON = "/usr/bin/python3"
PROCESSES = 5
# Each process of the flood opens this many connections (more than one uid's share), says hello
# on each, reports how many the broker kept, then holds them until told to let go.
FLOOD_PROCESS = """
import json, socket, sys
kept = []
for index in range(int(sys.argv[2])):
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    connection.settimeout(30)
    try:
        connection.connect(sys.argv[1])
        hello = {"jsonrpc": "2.0", "id": 1, "method": "console.hello",
                 "params": {"agent": f"flood-{index}"}}
        connection.sendall(json.dumps(hello).encode() + b"\\n")
        if "result" in json.loads(connection.makefile().readline()):
            kept.append(connection)
            continue
    except (OSError, ValueError):
        pass
    connection.close()
print(len(kept), flush=True)
sys.stdin.read()
"""


def _can_run_as_nobody() -> str | None:
    """Why processes of another uid cannot be started here, or None."""
    if os.getuid() != 0:
        return "starting a process as another user needs root"
    if not os.access(SYSTEM_PYTHON, os.X_OK):
        return f"no {SYSTEM_PYTHON} for the other user to run"
    return None


def test_five_processes_of_one_uid_hold_no_more_than_that_uids_share():
    why = _can_run_as_nobody()
    if why is not None:
        pytest.skip(why)
    shared = Path(tempfile.mkdtemp(prefix="svc-uid-", dir="/tmp"))
    shared.chmod(0o755)
    home, agents_socket = shared / "home", shared / "run" / "agents.sock"
    home.mkdir(mode=0o700)
    (home / "settings.toml").write_text(f"[agents]\nuids = [{NOBODY}]\n")
    env = {**os.environ, "SVC_CONSOLE_HOME": str(home), "SVC_CONSOLE_SOCKET": str(agents_socket)}
    server = serve_with_few_files(env)
    flood: list[subprocess.Popen[str]] = []
    try:
        assert "broker on" in server.stdout.readline(), server.stderr.read()
        probe = subprocess.run(
            [sys.executable, "-c", AGENT], capture_output=True, text=True, timeout=60, env=env
        )
        assert probe.returncode == 0, probe.stderr
        share = int(probe.stdout.split()[1]) // 4  # one uid's share: a quarter of the socket
        for _ in range(PROCESSES):
            flood.append(
                subprocess.Popen(
                    [SYSTEM_PYTHON, "-c", FLOOD_PROCESS, str(agents_socket), str(share + 8)],
                    user=NOBODY,
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                )
            )
        kept = [int(process.stdout.readline() or -1) for process in flood]
        assert all(count >= 0 for count in kept), [p.stderr.read() for p in flood]
        # Five processes, one uid: together no more than that uid's share, and all of it.
        assert sum(kept) == share, kept
        # Another uid's agent (the console's own, accepted in the sandbox) and the operator
        # are served all the same.
        bystander = subprocess.run(
            [sys.executable, "-c", AGENT], capture_output=True, text=True, timeout=60, env=env
        )
        assert bystander.returncode == 0, bystander.stderr
        listing = subprocess.run(
            [*CLI, "approvals", "list", "--json"],
            capture_output=True,
            text=True,
            timeout=60,
            env=env,
        )
        assert listing.returncode == 0 and json.loads(listing.stdout) == [], listing.stderr
    finally:
        for process in flood:
            process.kill()
            process.wait(timeout=30)
        server.terminate()
        server.wait(timeout=30)
        shutil.rmtree(shared, ignore_errors=True)
    assert server.returncode == 0
