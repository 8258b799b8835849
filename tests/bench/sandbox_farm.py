"""The sandbox marketplace as a service of its own: several uvicorn processes behind one port.

    python sandbox_farm.py --home DIR [--workers N]

The real marketplace runs elsewhere, on machines of its own; a benchmark that served it from the
broker's process (or from one interpreter) would measure the sandbox's limit, not the broker's.
This host builds one `SandboxState` (so every worker holds the same credentials, registry and
balance), binds N listening sockets to one loopback port with SO_REUSEPORT (the kernel spreads
new connections over them by their address), then forks N workers, each serving its own socket
with the sandbox's uvicorn configuration. It writes the credentials owner-only to
DIR/sandbox/credentials.json, prints `ready <base_url>` and stops the workers when stdin closes.

Each worker's state is its own copy from then on: charges, replays and faults made through one
worker are not seen by another. The benchmarks only dry-run and pay from a large balance, where
that changes nothing; a test of the money's invariants uses one sandbox (tests/sandbox_process.py).

`FarmHost` starts it from a benchmark and stands in for the embedded sandbox in `Runtime`.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import signal
import socket
import subprocess
import sys
import time
from decimal import Decimal
from pathlib import Path
from types import SimpleNamespace

import harness

# Two uvicorn processes keep a 2-core machine's second core busy answering while the broker holds
# the first; more only add context switches there, and a bigger machine passes --workers.
DEFAULT_WORKERS = max(2, (os.cpu_count() or 2) // 2)
SANDBOX_BALANCE = Decimal(1_000_000)  # auto-approved executions must never run dry mid-run
START_TIMEOUT_S = 30.0


def _listening_sockets(count: int) -> list[socket.socket]:
    """`count` sockets listening on one loopback port (picked by the first), SO_REUSEPORT."""
    sockets: list[socket.socket] = []
    port = 0
    for _ in range(count):
        # IPPROTO_TCP so asyncio sets TCP_NODELAY on accepted connections (see sandbox/server.py).
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind(("127.0.0.1", port))
        sock.listen(2048)
        port = sock.getsockname()[1]
        sockets.append(sock)
    return sockets


def _worker(sock: socket.socket, state: object) -> None:
    import uvicorn

    from svc_console.sandbox.server import _config, _silence_uvicorn

    _silence_uvicorn()
    # The parent stops its workers with SIGTERM; uvicorn turns it into a graceful shutdown.
    uvicorn.Server(_config(state)).run(sockets=[sock])  # type: ignore[arg-type]


def serve(home: Path, workers: int) -> None:
    from svc_console.sandbox.server import write_credentials
    from svc_console.sandbox.state import SandboxState

    state = SandboxState(balance=SANDBOX_BALANCE, outbox=home / "sandbox" / "outbox")
    sockets = _listening_sockets(workers)
    host, port = sockets[0].getsockname()[:2]
    state.base_url = f"http://{host}:{port}"
    # Forked, not spawned: each worker starts with this very state (credentials included).
    fork = multiprocessing.get_context("fork")
    processes = [fork.Process(target=_worker, args=(s, state), daemon=True) for s in sockets]
    for process in processes:
        process.start()
    try:
        _wait_until_answering(state.base_url)
        write_credentials(home / "sandbox" / "credentials.json", state.credentials())
        print(f"ready {state.base_url}", flush=True)
        sys.stdin.read()  # until the driving process closes our stdin
    finally:
        for process in processes:
            if process.pid is not None:
                os.kill(process.pid, signal.SIGTERM)
        for process in processes:
            process.join(10)
            if process.is_alive():
                process.kill()


def _wait_until_answering(base_url: str) -> None:
    harness.wait_for_health(base_url, time.monotonic() + START_TIMEOUT_S)


class FarmHost:
    """A `sandbox_farm.py` process, as `Runtime(sandbox=...)` reads an embedded sandbox it did
    not start: `base_url` and `state` (api_key, username, api_token)."""

    def __init__(self, home: Path, workers: int = DEFAULT_WORKERS):
        self.home, self.workers = home, workers

    def start(self) -> str:
        self.home.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.process = subprocess.Popen(
            [sys.executable, __file__, "--home", str(self.home), "--workers", str(self.workers)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=harness.bench_env(),
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline().split()
        if not line or line[0] != "ready":
            self.stop()
            raise RuntimeError("the sandbox farm did not start")
        found = json.loads((self.home / "sandbox" / "credentials.json").read_text())
        self.base_url = found["base_url"]
        self.state = SimpleNamespace(**found)
        return self.base_url

    def stop(self, *, wait: bool = True) -> None:
        if self.process.stdin is not None and not self.process.stdin.closed:
            self.process.stdin.close()
        try:
            self.process.wait(20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def __enter__(self) -> FarmHost:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--home", required=True, type=Path)
    parser.add_argument("--workers", type=int, default=DEFAULT_WORKERS)
    args = parser.parse_args()
    serve(args.home, args.workers)


if __name__ == "__main__":
    main()
