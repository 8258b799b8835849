"""Throughput: requests decided by policy and committed per second, 200 agents at once, none lost.

The broker runs in its own process (as `svc-console serve`); the sandbox, as the real marketplace
would be, in processes of their own (`sandbox_farm.py`: several uvicorn processes behind one
port); the agents in another (`hosts.py agents`: one AsyncAgent connection each, all connected
before the clock starts). Each agent submits its requests one after another (the broker answers a
submit at once and inspects in the background). The clock runs from the moment the agents are
told to go until the broker's listeners see the last request decided (pending, denied or
auto-approved, committed to the ledger). None lost: every submitted request is seen decided
exactly once and is in the ledger afterwards; an agent's refused submit counts as lost.

The limit is measured too: how many dry runs a second the sandbox farm alone answers to a lean
load generator in a process of its own (`dry_run_load.py`). Each decision needs one, so the
broker cannot decide faster on this machine. Beside each rate, the broker process's CPU time per
decided request (the sandbox's is no longer in it), which has a row of its own with its target,
and the agents' process's CPU per request: each throughput row names both ceilings it sits under.

Baseline: the same number of requests from one agent.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import harness
import policy_engine
from harness import Baseline, BenchResult, Figures, Target
from hosts import BrokerHost
from sandbox_farm import DEFAULT_WORKERS, FarmHost

TARGET = Target({"median": 2000.0}, higher_is_better=True)
# The broker's CPU per decision with 200 agents: what bounds the rate once the rest is fast.
CPU_TARGET = Target({"median": 0.4})
AGENTS = 200
EACH = 5  # requests per agent: 1,000 a run
# The growth curve: the same 1,000 requests from this many agents, so the shape shows.
GROWTH = (1, 10, 50, 200, 1000)
DECIDE_TIMEOUT_S = 300.0
LIMIT_SECONDS = 5.0
LIMIT_CONNECTIONS = 64


@dataclass
class Load:
    rate: float
    submitted: int
    decided: int
    lost: int
    refused: int
    states: dict[str, int]
    ledger_rows: int
    rejections: dict[str, int]  # why requests ended rejected rather than decided
    cpu_ms: float  # the broker process's CPU per decided request, from go to the last decided
    agents_cpu_ms: float  # the agents' process's CPU per submitted request


def measure(
    agents: int, each: int, policy: Path | None, profile: str | None = None
) -> tuple[Load, str]:
    home = Path(tempfile.mkdtemp(prefix="svc-tput-"))
    try:
        with BrokerHost(home, policy=policy, profile=profile, sandbox_farm=DEFAULT_WORKERS) as host:
            load = subprocess.Popen(
                [
                    sys.executable,
                    str(harness.BENCH_DIR / "hosts.py"),
                    "agents",
                    "--socket",
                    str(host.socket),
                    "--agents",
                    str(agents),
                    "--each",
                    str(each),
                ],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
                env=harness.bench_env(),
            )
            assert load.stdin is not None and load.stdout is not None
            if not load.stdout.readline().startswith("ready"):
                raise RuntimeError("the agents did not connect")
            cpu = host.cpu_seconds()
            load.stdin.write("go\n")
            load.stdin.flush()
            report = json.loads(load.stdout.readline())
            load.wait(30)
            ids = report["ids"][str(host.socket)]
            host.wait_all(ids, DECIDE_TIMEOUT_S)
            cpu = host.cpu_seconds() - cpu
            seen = {i: host.visible[i] for i in ids if i in host.visible}
        total = agents * each
        last = max((ns for _, ns in seen.values()), default=report["go_ns"])
        states: dict[str, int] = {}
        for state, _ in seen.values():
            states[state] = states.get(state, 0) + 1
        decided = sum(n for s, n in states.items() if s != "rejected")
        with sqlite3.connect(home / "ledger-sandbox.db") as db:
            rows = db.execute("SELECT count(*) FROM requests").fetchone()[0]
            rejections = dict(
                db.execute(
                    "SELECT reason, count(*) FROM requests WHERE state = 'rejected'"
                    " GROUP BY reason ORDER BY count(*) DESC LIMIT 5"
                ).fetchall()
            )
        return (
            Load(
                rate=decided / max((last - report["go_ns"]) / 1e9, 1e-9),
                submitted=len(ids),
                decided=decided,
                lost=total - decided,
                refused=len(report["errors"]),
                states=states,
                ledger_rows=rows,
                rejections=rejections,
                cpu_ms=cpu * 1000 / max(decided, 1),
                agents_cpu_ms=report["cpu_s"] * 1000 / max(len(ids), 1),
            ),
            host.engine,
        )
    finally:
        shutil.rmtree(home, ignore_errors=True)
        Path(f"{home}-broker.err").unlink(missing_ok=True)


def run(runs: int) -> list[BenchResult]:
    policy = policy_engine.policy_file()
    profile = harness.profile_prefix("throughput")
    # The sandbox's own limit first: every throughput row names it.
    limit = None if profile else _limit(runs)
    many = [measure(AGENTS, EACH, policy, profile) for _ in range(1 if profile else runs)]
    one = [] if profile else [measure(1, AGENTS * EACH, policy) for _ in range(runs)]
    loads = [load for load, _ in many]
    engine = many[0][1]
    lost = sum(load.lost for load in loads + [load for load, _ in one])
    under = _limits_note(loads, limit)
    profiled = " (profiled)" if profile else ""
    rows = [
        BenchResult(
            name=f"throughput, {AGENTS} agents{profiled}",
            unit="req/s",
            figures=Figures.of([load.rate for load in loads]),
            target=TARGET,
            baseline=_from_one_agent(one, "rate"),
            conditions={"none lost": lost == 0},
            context={
                "policy": engine,
                "requests_per_run": AGENTS * EACH,
                "states": loads[-1].states,
                "lost": [load.lost for load in loads],
                "refused_submits": [load.refused for load in loads],
                "ledger_rows_after": [load.ledger_rows for load in loads],
                "rejections": [load.rejections for load in loads],
                "baseline_lost": [load.lost for load, _ in one],
                "broker_cpu_ms_per_decision": [round(load.cpu_ms, 3) for load in loads],
                "baseline_broker_cpu_ms_per_decision": [round(load.cpu_ms, 3) for load, _ in one],
                "agents_cpu_ms_per_request": [round(load.agents_cpu_ms, 3) for load in loads],
                "sandbox_processes": DEFAULT_WORKERS,
            },
            note=f"policy: {engine}; {_cpu_note(loads)}; {under}",
        ),
        BenchResult(
            name=f"broker CPU per decision, {AGENTS} agents{profiled}",
            unit="ms",
            figures=Figures.of([load.cpu_ms for load in loads]),
            target=CPU_TARGET,
            baseline=_from_one_agent(one, "cpu_ms"),
            conditions={"none lost": lost == 0},
            context={"policy": engine, "requests_per_run": AGENTS * EACH},
            note="the broker process's CPU time from go to the last decision, by decisions",
        ),
    ]
    if limit is None:
        return rows
    return [*rows, limit, *_growth(policy, runs, limit)]


def _from_one_agent(one: list[tuple[Load, str]], figure: str) -> Baseline | None:
    """The baseline of the 200 agents' rows: the same requests from one agent, same run."""
    if not one:
        return None
    figures = Figures.of([getattr(load, figure) for load, _ in one])
    return Baseline(f"the same {AGENTS * EACH:,} requests from one agent", figures)


def _cpu_note(loads: list[Load]) -> str:
    median = sorted(load.cpu_ms for load in loads)[len(loads) // 2]
    return f"broker process CPU {median:.2f} ms a decision"


def _limits_note(loads: list[Load], limit: BenchResult | None) -> str:
    """The ceilings a throughput row sits under on this machine: the sandbox alone, and the
    agents' own process (one core: a thousand milliseconds by its CPU per request)."""
    agents = statistics.median(load.agents_cpu_ms for load in loads)
    words = [f"agents' own CPU {agents:.2f} ms a request (at most {1000 / agents:,.0f} req/s)"]
    if limit is not None:
        words.insert(0, f"under the sandbox alone's {limit.figures.median:,.0f} req/s")
    return "; ".join(words)


def _limit(runs: int) -> BenchResult:
    """Dry runs a second the sandbox farm alone answers to the load generator."""
    rates, generator_cpu = [], []
    home = Path(tempfile.mkdtemp(prefix="svc-limit-"))
    try:
        with FarmHost(home, workers=DEFAULT_WORKERS):
            for _ in range(runs):
                done = subprocess.run(
                    [
                        sys.executable,
                        str(harness.BENCH_DIR / "dry_run_load.py"),
                        "--credentials",
                        str(home / "sandbox" / "credentials.json"),
                        "--connections",
                        str(LIMIT_CONNECTIONS),
                        "--seconds",
                        str(LIMIT_SECONDS),
                    ],
                    capture_output=True,
                    text=True,
                    env=harness.bench_env(),
                    check=True,
                    timeout=120,
                )
                found = json.loads(done.stdout)
                rates.append(found["rate"])
                generator_cpu.append(found["cpu_s"] * 1000 / max(found["answered"], 1))
    finally:
        shutil.rmtree(home, ignore_errors=True)
    return BenchResult(
        name=f"throughput limit: dry runs the sandbox alone answers ({DEFAULT_WORKERS} processes)",
        unit="req/s",
        figures=Figures.of(rates),
        target=TARGET,
        role="baseline",  # the fixture's limit the broker's rows are read against
        context={
            "sandbox_processes": DEFAULT_WORKERS,
            "connections": LIMIT_CONNECTIONS,
            "seconds": LIMIT_SECONDS,
            "generator_cpu_ms_per_call": [round(c, 3) for c in generator_cpu],
        },
        note="load generator: raw HTTP/1.1 keep-alive on asyncio, its own process",
    )


def _growth(policy: Path, runs: int, limit: BenchResult) -> list[BenchResult]:
    """Throughput at each point of GROWTH (the same 1,000 requests spread over the agents)."""
    results = []
    for agents in GROWTH:
        each = max(1, AGENTS * EACH // agents)
        loads = [measure(agents, each, policy)[0] for _ in range(runs)]
        results.append(
            BenchResult(
                name=f"throughput curve: {agents:,} agent{'s' if agents > 1 else ''}",
                unit="req/s",
                figures=Figures.of([load.rate for load in loads]),
                target=TARGET,
                conditions={"none lost": sum(load.lost for load in loads) == 0},
                context={
                    "agents": agents,
                    "requests_per_run": agents * each,
                    "broker_cpu_ms_per_decision": [round(load.cpu_ms, 3) for load in loads],
                    "agents_cpu_ms_per_request": [round(load.agents_cpu_ms, 3) for load in loads],
                },
                note=f"{_cpu_note(loads)}; {_limits_note(loads, limit)}",
            )
        )
    return results


if __name__ == "__main__":
    harness.main(run, default_runs=3)
