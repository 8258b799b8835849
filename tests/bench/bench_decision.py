"""Decision path: an agent's `spend.submit` over the real Unix socket until the request is visible
as pending (inspection, dry run against the sandbox on loopback, risk, policy, ledger commit).

The broker runs in its own process as `svc-console serve` does, the sandbox in processes of its
own (`sandbox_farm.py`, as the real service is elsewhere: run on a thread of the broker's process,
it had its CPU counted as the broker's and held the broker's GIL), with the benchmarks' SKILLS.md
policy (`bench-policy.md`: this agent's requests are for the operator, after every rule was
checked); the agent is this process, using
`svc_console.agent.Agent`. The clock starts before the agent encodes the call and stops when the
broker's listeners (what the approvals screen uses) are told the request is pending. Measured on
an empty ledger and on ledgers of 10,000, 100,000 and 1,000,000 settled requests: the target is
flat growth. The broker process's CPU time per request is reported beside the latencies.

On the empty ledger the broker also serves `/metrics` (as `serve --metrics` does), scraped after
the warm-up and after every round: the decision-latency histogram's count moves with each round,
and its median (from submission to the verdict, inside the broker: the socket's two crossings are
not in it) is printed beside the benchmark's own.

Baseline: the same JSON line sent to a bare asyncio echo server on a Unix socket, and read back.
"""

from __future__ import annotations

import json
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import data
import harness
import policy_engine
import scrapes
from harness import Baseline, BenchResult, Figures, Target
from hosts import BrokerHost
from sandbox_farm import DEFAULT_WORKERS

from svc_console.agent import Agent, _encode

TARGET = Target({"median": 1.0, "p99": 5.0})
SAMPLES_PER_ROUND = 100
WARMUP = 20
ENDPOINT = "ep_websearch_basic"


def _submit_params(n: int) -> dict:
    return {
        "agent": "bench-agent",
        "kind": "market_call",
        "endpoint_id": ENDPOINT,
        "inputs": {"query": f"decision path {n}"},
        "purpose": "decision path benchmark",
    }


def measure_decisions(host: BrokerHost, count: int, first: int) -> list[float]:
    """Milliseconds from submit to visible-as-pending, one request after another."""
    samples = []
    with Agent("bench-agent", host.socket) as agent:
        for n in range(first, first + count):
            start = time.monotonic_ns()
            ticket = agent.submit(
                endpoint_id=ENDPOINT,
                inputs={"query": f"decision path {n}"},
                purpose="decision path benchmark",
            )
            state, seen = host.wait_visible(ticket["request_id"])
            if state != "pending":
                raise RuntimeError(f"{ticket['request_id']} became {state}, not pending")
            samples.append((seen - start) / 1e6)
    return samples


def measure_echo(rounds: int, count: int) -> list[float]:
    """The baseline: round trips of the same JSON line through a bare echo server."""
    folder = Path(tempfile.mkdtemp(prefix="svc-echo-"))
    path = folder / "echo.sock"
    host = subprocess.Popen(
        [sys.executable, str(harness.BENCH_DIR / "hosts.py"), "echo", "--socket", str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    samples: list[float] = []
    try:
        assert host.stdout is not None
        if not host.stdout.readline().startswith("ready"):
            raise RuntimeError("the echo host did not start")
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.connect(str(path))
            reader = sock.makefile("rb")
            for n in range(WARMUP + rounds * count):
                start = time.monotonic_ns()
                sock.sendall(_encode(n, "spend.submit", _submit_params(n)))
                json.loads(reader.readline())
                if n >= WARMUP:
                    samples.append((time.monotonic_ns() - start) / 1e6)
    finally:
        assert host.stdin is not None
        host.stdin.close()
        host.wait(10)
        shutil.rmtree(folder, ignore_errors=True)
    return samples


@dataclass
class Measured:
    samples: list[float]
    engine: str  # the policy engine's name
    cpu_ms: float  # the broker process's CPU milliseconds per request
    # With /metrics: the console-decided count at each scrape, and the histogram's median
    # over the rounds (the warm-up left out).
    scraped_counts: list[int] = field(default_factory=list)
    scraped_median_ms: float | None = None


def measure_ledger(
    rows: int, rounds: int, profile: str | None = None, metrics: bool = False
) -> Measured:
    """Samples on a ledger of `rows` historic requests (0: a fresh one), in `rounds` rounds."""
    home = Path(tempfile.mkdtemp(prefix="svc-bench-"))
    address = ("127.0.0.1", scrapes.free_loopback_port()) if metrics else None
    try:
        if rows:
            data.copy_ledger(data.ledger(rows), home)
        samples: list[float] = []
        scraped: list[scrapes.Buckets] = []

        def scrape() -> None:
            if address is not None:
                scraped.append(scrapes.decision_latency(address))

        policy = policy_engine.policy_file()
        with BrokerHost(
            home, policy=policy, profile=profile, metrics=address, sandbox_farm=DEFAULT_WORKERS
        ) as host:
            measure_decisions(host, WARMUP, 0)
            scrape()
            cpu = host.cpu_seconds()
            for r in range(rounds):
                samples += measure_decisions(host, SAMPLES_PER_ROUND, WARMUP + r * 1000)
                scrape()
            cpu = host.cpu_seconds() - cpu
        measured = Measured(samples, host.engine, cpu * 1000 / len(samples))
        if scraped:
            measured.scraped_counts = [int(b.total) for b in scraped]
            measured.scraped_median_ms = scraped[-1].since(scraped[0]).median_ms()
        return measured
    finally:
        shutil.rmtree(home, ignore_errors=True)
        Path(f"{home}-broker.err").unlink(missing_ok=True)


def run(runs: int) -> list[BenchResult]:
    profile = harness.profile_prefix("decision")
    if profile:
        measured = measure_ledger(0, runs, profile=profile)
        return [_result("decision path (profiled)", measured, None, 0, None)]
    echo = Baseline(
        "bare JSON-line echo over a Unix socket (asyncio server, blocking client)",
        Figures.of(measure_echo(runs, SAMPLES_PER_ROUND)),
    )
    results = []
    reference = None
    for rows in (0, *data.LEDGER_SIZES):
        measured = measure_ledger(rows, runs, metrics=rows == 0)
        name = "decision path" if rows == 0 else f"decision path, {rows:,} ledger rows"
        result = _result(name, measured, echo, rows, reference)
        reference = reference or result.figures
        results.append(result)
    return results


def _result(
    name: str,
    measured: Measured,
    baseline: Baseline | None,
    rows: int,
    reference: Figures | None,
) -> BenchResult:
    samples, cpu_ms = measured.samples, measured.cpu_ms
    figures = Figures.of(samples)
    per_round = [
        statistics.median(samples[i : i + SAMPLES_PER_ROUND])
        for i in range(0, len(samples), SAMPLES_PER_ROUND)
    ]
    note = f"broker process CPU {cpu_ms:.1f} ms a request"
    if reference is not None:
        note += (
            f"; median x{figures.median / reference.median:.2f},"
            f" p99 x{(figures.p99 or 0) / (reference.p99 or 1):.2f} of the empty ledger's"
        )
    scraped = {}
    if measured.scraped_counts:
        median = measured.scraped_median_ms
        note += f"; /metrics median {'-' if median is None else f'{median:.2f}'} ms"
        scraped = {
            "metrics_decided_count_by_scrape": measured.scraped_counts,
            "metrics_median_ms": None if median is None else round(median, 3),
        }
    return BenchResult(
        name=name,
        unit="ms",
        figures=figures,
        target=TARGET,
        baseline=baseline,
        context={
            "ledger_rows": rows,
            "policy": measured.engine,
            "broker_cpu_ms_per_request": round(cpu_ms, 3),
            "round_medians_ms": [round(m, 3) for m in per_round],
            "clock": "CLOCK_MONOTONIC, agent send to broker listener",
            **scraped,
        },
        note=note,
    )


if __name__ == "__main__":
    harness.main(run, default_runs=5)
