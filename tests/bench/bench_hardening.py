"""Responsiveness under attack: how long a normal agent waits for the broker while another agent
sends inputs built to stall a policy's regular expression, and while 1,000 idle connections are
held open.

The broker runs in its own process as `svc-console serve` does (`hosts.py broker`), with a policy
whose `never_send_patterns` holds `(a+)+$` (which takes Python's backtracking engine seconds on 27
letters and a `!`, doubling with each letter). A probe agent on its own connection sends
`console.hello` after `console.hello` for as long as each attack lasts; the figures are its
round trips. Target: the probe answered within 100 ms throughout (the maximum).

Baseline: the probe's round trips with no attack under way, in the same run.
"""

from __future__ import annotations

import socket
import tempfile
import threading
import time
from pathlib import Path

import harness
from harness import Baseline, BenchResult, Figures, Target
from hosts import BrokerHost

from svc_console.agent import Agent

TARGET = Target({"max": 100.0})
POLICY = "# Hardening bench\n\n```policy\nnever_send_patterns:\n  runaway: '(a+)+$'\n```\n"
IDLE_CONNECTIONS = 1000
HOSTILE_QUERIES = ("a" * 27 + "!", "a" * 40 + "!", "a" * 5000 + "!")


class Probe:
    """A normal agent saying hello over and over on its own thread, round trips in ms."""

    def __init__(self, path: Path):
        self.path = path
        self.samples: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="probe")

    def __enter__(self) -> Probe:
        self._agent = Agent("probe", self.path)
        self._agent.connect()
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.is_set():
            start = time.perf_counter()
            self._agent.call("console.hello", {})
            self.samples.append((time.perf_counter() - start) * 1000)
            time.sleep(0.002)

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self._agent.close()


def quiet(path: Path, seconds: float) -> list[float]:
    with Probe(path) as probe:
        time.sleep(seconds)
    return probe.samples


def under_regex(host: BrokerHost, rounds: int) -> list[float]:
    """The probe while an attacker submits inputs aimed at the policy's pattern."""
    with Probe(host.socket) as probe, Agent("attacker", host.socket) as attacker:
        for round_ in range(rounds):
            for n, query in enumerate(HOSTILE_QUERIES):
                ticket = attacker.submit(
                    endpoint_id="ep_websearch_basic",
                    inputs={"query": query, "n": f"{round_}-{n}"},
                    purpose="regex stall attempt",
                )
                host.wait_visible(ticket["request_id"], timeout_s=60)
    return probe.samples


def under_idle_connections(host: BrokerHost, seconds: float) -> tuple[list[float], int]:
    """The probe while IDLE_CONNECTIONS connections are held open, sending nothing."""
    held = []
    try:
        for _ in range(IDLE_CONNECTIONS):
            connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            connection.connect(str(host.socket))
            held.append(connection)
        with Probe(host.socket) as probe:
            time.sleep(seconds)
            # New connections are still let in, and answered, while the others sit idle.
            fresh = []
            for _ in range(20):
                start = time.perf_counter()
                with Agent("newcomer", host.socket):
                    pass
                fresh.append((time.perf_counter() - start) * 1000)
        return probe.samples + fresh, len(held)
    finally:
        for connection in held:
            connection.close()


def run(runs: int) -> list[BenchResult]:
    with tempfile.TemporaryDirectory() as folder:
        home = Path(folder) / "home"
        home.mkdir(mode=0o700)
        policy = Path(folder) / "SKILLS.md"
        policy.write_text(POLICY)
        with BrokerHost(home, policy=policy) as host:
            calm = quiet(host.socket, 2.0)
            regex = under_regex(host, max(1, runs))
            idle, held = under_idle_connections(host, 2.0 * max(1, runs))
    baseline = Baseline("probe, no attack", Figures.of(calm, p99=True))
    context = {"machine": harness.machine()}
    return [
        BenchResult(
            "probe during regex attack",
            "ms",
            Figures.of(regex, p99=True),
            TARGET,
            baseline,
            context={**context, "probes": len(regex), "queries": list(map(len, HOSTILE_QUERIES))},
            note="`(a+)+$` against 27, 40 and 5,000 letters and a `!` (no match: its worst case)",
        ),
        BenchResult(
            f"probe with {IDLE_CONNECTIONS:,} idle connections",
            "ms",
            Figures.of(idle, p99=True),
            TARGET,
            baseline,
            conditions={f"{IDLE_CONNECTIONS:,} connections held": held == IDLE_CONNECTIONS},
            context={**context, "probes": len(idle)},
            note="round trips of a probe's hello, and 20 new connections' connect + hello",
        ),
    ]


if __name__ == "__main__":
    harness.main(run, default_runs=3)
