"""`svc-console serve --metrics HOST:PORT`: off unless asked, loopback unless told otherwise,
every mistake one line and exit 2 before anything starts, and a running `serve` whose /metrics
moves with an agent's request."""

from __future__ import annotations

import signal
import socket
import subprocess
from pathlib import Path

import httpx
import pytest
from test_cli import CLI, run

SUBMIT = ["--endpoint", "ep_websearch_basic", "--inputs", '{"query": "q"}', "--purpose", "p"]


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (("--metrics", "0.0.0.0:9464"), "0.0.0.0 is not a loopback address"),
        (("--metrics", "[2001:db8::1]:9464"), "2001:db8::1 is not a loopback address"),
        (("--metrics", "metrics.example:9464"), "add --metrics-allow-remote"),
        (("--metrics", "9464"), "--metrics must be HOST:PORT"),
        (("--metrics", "127.0.0.1:99999"), "--metrics must be HOST:PORT"),
        (("--metrics", "127.0.0.1:"), "--metrics must be HOST:PORT"),
        (("--metrics-allow-remote",), "goes with --metrics HOST:PORT"),
    ],
)
def test_a_bad_metrics_address_is_refused_in_one_line(home: Path, args, words):
    refused = run("serve", *args)
    assert refused.returncode == 2
    assert words in refused.stderr and refused.stderr.count("\n") == 1
    assert not (home / "svc.sock").exists()


def test_a_port_taken_is_said_in_one_line_and_nothing_is_left_listening(home: Path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        refused = run("serve", "--metrics", f"127.0.0.1:{port}", timeout=60)
    assert refused.returncode == 1
    assert f"cannot serve metrics on 127.0.0.1:{port}" in refused.stderr
    assert refused.stderr.count("\n") == 1 and "Traceback" not in refused.stderr
    assert not (home / "svc.sock").exists()


def test_serve_scraped_while_an_agent_asks(home: Path):
    server = subprocess.Popen(
        [*CLI, "serve", "--metrics", "127.0.0.1:0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        lines = [server.stdout.readline() for _ in range(3)]
        assert lines[2].startswith("svc-console: metrics at http://127.0.0.1:"), lines
        url = lines[2].split(" at ")[1].strip()
        before = httpx.get(url).text
        assert "svc_console_decision_latency_seconds_count" not in before  # none observed yet
        assert "svc_console_queue_depth 0.0" in before
        asked = run("agent", "submit", *SUBMIT, "--agent", "bot")
        assert asked.returncode == 0 and asked.stdout.split()[1] == "pending", asked.stderr
        after = httpx.get(url).text
        assert 'svc_console_decision_latency_seconds_count{decided_by="console"} 1.0' in after
        assert "svc_console_queue_depth 1.0" in after
    finally:
        server.send_signal(signal.SIGTERM)
        assert server.wait(timeout=20) == 0
    with pytest.raises(httpx.ConnectError):
        httpx.get(url)
