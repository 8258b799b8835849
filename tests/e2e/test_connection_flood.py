"""A flood of idle connections against `serve` with few file descriptors (`ulimit -n 300`): the
operator still lists and decides, an agent in another process is still served, and the log holds
a few lines about it, not a traceback per refusal.

No timing is asserted: only who was answered and what the log says.
"""

from __future__ import annotations

import contextlib
import json
import resource
import socket
import subprocess
import sys
from pathlib import Path

CLI = [sys.executable, "-m", "svc_console"]
OPEN_FILES = 300
FLOOD = 1000
AGENT = """
from svc_console.agent import Agent
with Agent("bystander") as agent:
    print(agent.hello_info["server"], agent.hello_info["limits"]["max_connections"])
"""


def _few_files() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (OPEN_FILES, OPEN_FILES))


def test_a_thousand_idle_connections_lock_out_neither_the_operator_nor_other_agents(home: Path):
    server = subprocess.Popen(
        [*CLI, "serve"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_few_files,
    )
    flood: list[socket.socket] = []
    try:
        assert "broker on" in server.stdout.readline(), server.stderr.read()
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
        agent = subprocess.run(
            [sys.executable, "-c", AGENT], capture_output=True, text=True, timeout=60
        )
        assert agent.returncode == 0, agent.stderr
        server_name, most = agent.stdout.split()
        assert server_name == "svc-console" and int(most) < OPEN_FILES // 2
    finally:
        for connection in flood:
            connection.close()
        server.terminate()
        server.wait(timeout=30)
    log = "\n".join(path.read_text() for path in (home / "logs").glob("*.log*"))
    refusals = [line for line in log.splitlines() if "socket refused" in line]
    assert 1 <= len(refusals) <= 3, refusals
    assert "too many connections from one process" in refusals[0]
    assert "Traceback" not in log
