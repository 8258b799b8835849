"""The ledger on PostgreSQL: the decision path, throughput and the usage screen measured as their
SQLite rows are, each beside its SQLite counterpart measured in the same run.

The benchmark starts its own PostgreSQL (`tests/postgres.py`'s throwaway cluster: Unix socket
only, fsync off, so fast and unsafe; every row's note says so) and gives each measure a fresh
database. Where no PostgreSQL can be started, every row is there, skipped, with the reason.

- Decision path: `bench_decision`'s measure (one agent, submit to visible-as-pending, on an empty
  ledger) against `svc-console serve` with SVC_LEDGER_URL (`pg_hosts.py serve`, the sandbox farm
  as its service). Baseline: the same harness with the SQLite ledger, same run.
- Throughput: `bench_throughput`'s measure (200 agents, 1,000 requests, go to the last decided,
  none lost) against N brokers sharing one PostgreSQL ledger (`pg_fleet.py`), N in `BROKERS`: one
  broker, then two (BENCH_PG_BROKERS=1,2,4 for others), each with its own home and the first's
  audit key (ledger/shared.py). A broker that cannot start makes that row a row with the error,
  and the run goes on. Baseline: one broker on its SQLite file, same harness and run. A row of
  more than one broker also holds to the one broker's rate: sharing must not slow them down.
- Usage screen at 1,000,000 charges: `bench_usage`'s first paint, page down and peak memory, the
  charges loaded by COPY (`pg_usage.py`). Baseline: `bench_usage`'s own SQLite measure, same run.
"""

from __future__ import annotations

import os
import statistics
import traceback
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import bench_decision
import bench_throughput
import bench_usage
import harness
import pg_fleet
import pg_usage
import policy_engine
from harness import Baseline, BenchResult, Figures, Target

# Brokers sharing one PostgreSQL ledger, one throughput row each: BENCH_PG_BROKERS=1,2,4 to choose.
BROKERS = tuple(int(n) for n in os.environ.get("BENCH_PG_BROKERS", "1,2").split(",") if n.strip())
USAGE_ROWS = 1_000_000
ON_PG = "PostgreSQL ledger"

DECISION = f"decision path, {ON_PG}"
# On PostgreSQL a decision makes its round trips to the server: targets of their own.
DECISION_TARGET = Target({"median": 2.5})
THROUGHPUT_TARGET = Target({"median": 800.0}, higher_is_better=True)
USAGE_NAMES = (
    (f"usage screen first paint, {USAGE_ROWS:,} charges, {ON_PG}", "ms", bench_usage.PAINT_TARGET),
    (f"usage screen page down, {USAGE_ROWS:,} charges, {ON_PG}", "ms", bench_usage.PAGE_TARGET),
    (f"usage screen peak memory, {USAGE_ROWS:,} charges, {ON_PG}", "MB", bench_usage.MEMORY_TARGET),
)


def _throughput_name(brokers: int) -> str:
    agents = bench_throughput.AGENTS
    if brokers == 1:
        return f"throughput, {agents} agents, 1 broker, {ON_PG}"
    return f"throughput, {agents} agents, {brokers} brokers sharing one {ON_PG}"


def _all_names() -> list[tuple[str, str, Target]]:
    return [
        (DECISION, "ms", DECISION_TARGET),
        *((_throughput_name(n), "req/s", THROUGHPUT_TARGET) for n in BROKERS),
        *USAGE_NAMES,
    ]


def _failed(names: list[tuple[str, str, Target]], exc: BaseException) -> list[BenchResult]:
    """Rows that say why they hold no figures, for a part that broke (its traceback printed)."""
    traceback.print_exception(exc)
    why = f"{type(exc).__name__}: {str(exc).strip().splitlines()[-1] if str(exc).strip() else ''}"
    return [harness.not_measured(n, u, t, why, engine="postgresql") for n, u, t in names]


def _guarded(
    names: list[tuple[str, str, Target]], part: Callable[[], list[BenchResult]]
) -> list[BenchResult]:
    try:
        return part()
    except Exception as exc:  # one part's failure is its rows' error, not the whole run's
        return _failed(names, exc)


# -- the decision path ---------------------------------------------------------------------------


def _decisions(
    policy: Path, url: str | None, runs: int, server_cpu: Callable[[], float] | None = None
) -> tuple[list[float], str, float, float | None]:
    """bench_decision's samples on one `svc-console serve` (the ledger at `url`, else SQLite);
    its engine's name; the broker process's CPU milliseconds per request, and the database
    server's when `server_cpu` reads it."""
    rounds = bench_decision.SAMPLES_PER_ROUND
    samples: list[float] = []
    with pg_fleet.Fleet(1, policy, url) as fleet:
        host = fleet.hosts[0]
        bench_decision.measure_decisions(host, bench_decision.WARMUP, 0)
        cpu = host.cpu_seconds()
        server = server_cpu() if server_cpu else 0.0
        for r in range(runs):
            samples += bench_decision.measure_decisions(
                host, rounds, bench_decision.WARMUP + r * 1000
            )
        cpu = host.cpu_seconds() - cpu
        server = server_cpu() - server if server_cpu else 0.0
        engine = fleet.engine
    per = 1000 / len(samples)
    return samples, engine, cpu * per, server * per if server_cpu else None


def decision(server: Any, policy: Path, runs: int, context: dict[str, Any]) -> BenchResult:
    sqlite, _, sqlite_cpu, _ = _decisions(policy, None, runs)
    samples, engine, cpu, server_cpu = _decisions(
        policy, server.new_database(), runs, lambda: pg_fleet.server_cpu_seconds(server)
    )
    figures = Figures.of(samples)
    return BenchResult(
        name=DECISION,
        unit="ms",
        figures=figures,
        target=DECISION_TARGET,
        baseline=Baseline(
            "SQLite ledger, same harness and run (counterpart of bench_decision's 'decision path')",
            Figures.of(sqlite),
        ),
        context={
            **context,
            "sqlite_counterpart": "decision path",
            "ledger_rows": 0,
            "policy": engine,
            "broker_cpu_ms_per_request": round(cpu, 3),
            "postgresql_cpu_ms_per_request": round(server_cpu or 0, 3),
            "sqlite_broker_cpu_ms_per_request": round(sqlite_cpu, 3),
            "clock": "CLOCK_MONOTONIC, agent send to broker listener",
            "broker": "svc-console serve, the sandbox farm as its service",
        },
        note=(
            f"{pg_fleet.CLUSTER_NOTE}; CPU a request: broker {cpu:.1f} ms (on SQLite"
            f" {sqlite_cpu:.1f}), PostgreSQL {server_cpu or 0:.1f} ms, the sandbox's in neither"
        ),
    )


# -- throughput ----------------------------------------------------------------------------------


def _loads(brokers: int, policy: Path, runs: int, server: Any | None) -> list[pg_fleet.Load]:
    """`runs` measures of `brokers` brokers on a fresh PostgreSQL database each (on SQLite
    without a server)."""
    agents, each = bench_throughput.AGENTS, bench_throughput.EACH
    if server is None:
        return [pg_fleet.measure(1, agents, each, policy, None) for _ in range(runs)]
    cpu = partial(pg_fleet.server_cpu_seconds, server)
    return [
        pg_fleet.measure(brokers, agents, each, policy, server.new_database(), cpu)
        for _ in range(runs)
    ]


def _throughput_row(
    brokers: int, loads: list[pg_fleet.Load], baseline: Baseline, context: dict[str, Any]
) -> BenchResult:
    cpu = statistics.median(load.cpu_ms for load in loads)
    server = statistics.median(load.server_cpu_ms or 0 for load in loads)
    sqlite = statistics.median(context["baseline_broker_cpu_ms_per_decision"])
    return BenchResult(
        name=_throughput_name(brokers),
        unit="req/s",
        figures=Figures.of([load.rate for load in loads]),
        target=THROUGHPUT_TARGET,
        baseline=baseline,
        conditions={"none lost": sum(load.lost for load in loads) == 0},
        context={
            **context,
            "sqlite_counterpart": f"throughput, {bench_throughput.AGENTS} agents",
            "brokers": brokers,
            "requests_per_run": bench_throughput.AGENTS * bench_throughput.EACH,
            "states": loads[-1].states,
            "decided_per_broker": [load.per_broker for load in loads],
            "lost": [load.lost for load in loads],
            "refused_submits": [load.refused for load in loads],
            "ledger_rows_after": [load.ledger_rows for load in loads],
            "rejections": [load.rejections for load in loads],
            "brokers_cpu_ms_per_decision": [round(load.cpu_ms, 3) for load in loads],
            "postgresql_cpu_ms_per_decision": [round(load.server_cpu_ms or 0, 3) for load in loads],
            "sandbox_processes": pg_fleet.SANDBOX_PROCESSES,
        },
        note=(
            f"{pg_fleet.CLUSTER_NOTE}; CPU a decision: brokers {cpu:.2f} ms (one on SQLite"
            f" {sqlite:.2f}), PostgreSQL {server:.2f} ms"
        ),
    )


def throughput(server: Any, policy: Path, runs: int, context: dict[str, Any]) -> list:
    sqlite = _loads(1, policy, runs, None)
    baseline = Baseline(
        "one broker on its SQLite ledger, same harness and run (counterpart of"
        f" bench_throughput's 'throughput, {bench_throughput.AGENTS} agents')",
        Figures.of([load.rate for load in sqlite]),
    )
    context = {
        **context,
        "baseline_lost": [load.lost for load in sqlite],
        "baseline_broker_cpu_ms_per_decision": [round(load.cpu_ms, 3) for load in sqlite],
    }
    results = []
    for brokers in BROKERS:
        name = _throughput_name(brokers)
        try:
            loads = _loads(brokers, policy, runs, server)
        except (RuntimeError, OSError) as exc:  # a broker that did not start: this row says why
            why = str(exc).strip().splitlines()[-1]
            print(f"!! {name}: {why}", flush=True)
            row = harness.not_measured(name, "req/s", THROUGHPUT_TARGET, why, **context)
            row.baseline = baseline
            row.context["brokers"] = brokers
            results.append(row)
            continue
        results.append(_throughput_row(brokers, loads, baseline, context))
    # Brokers that share a ledger must not slow each other: each row of more than one is held
    # to the one broker's rate of the same run.
    one = next((r for r in results if r.context.get("brokers") == 1 and r.figures.median), None)
    for row in results:
        if one is not None and row.context.get("brokers", 1) > 1 and row.figures.median:
            faster = row.figures.median >= one.figures.median
            row.conditions["at least as fast as one broker"] = faster
    return results


# -- the usage screen ----------------------------------------------------------------------------


def usage(server: Any, runs: int, context: dict[str, Any]) -> list[BenchResult]:
    sqlite = bench_usage._measure("screen", bench_usage.usage_ledger(USAGE_ROWS), USAGE_ROWS, runs)
    with pg_usage.SeededHome(server, USAGE_ROWS) as seeded:
        found = pg_usage.measure(seeded, runs)
    context = {
        **context,
        "rows": USAGE_ROWS,
        "terminal": list(bench_usage.TERMINAL),
        "runs": runs,
        "seeded_by": "svc_console.ledger.usage_seed --url (COPY, ledger.pg.bulk_load)",
        "seed_seconds": round(seeded.seconds, 1),
    }
    samples = (
        (found["first"], sqlite["first"]),
        (found["pages"], sqlite["pages"]),
        ([found["peak_rss_mb"]], [sqlite["peak_rss_mb"]]),
    )
    counterparts = ("first paint", "page down", "peak memory")
    results = []
    for (name, unit, target), (pg, lite), what in zip(
        USAGE_NAMES, samples, counterparts, strict=True
    ):
        counterpart = f"usage screen {what}, {USAGE_ROWS:,} charges"
        results.append(
            BenchResult(
                name,
                unit,
                Figures.of(pg, p99=False) if unit == "MB" else Figures.of(pg),
                target,
                Baseline(
                    f"SQLite ledger, same run (bench_usage's '{counterpart}')",
                    Figures.of(lite, p99=False) if unit == "MB" else Figures.of(lite),
                ),
                context={**context, "sqlite_counterpart": counterpart},
                note=pg_fleet.CLUSTER_NOTE,
            )
        )
    own = statistics.median(found["own"])
    results[0].note += f"; of which the screen itself (built to painted): median {own:.0f} ms"
    results[0].context["screen_build_to_paint_ms"] = Figures.of(found["own"]).to_json()
    return results


# -- the run -------------------------------------------------------------------------------------


def run(runs: int) -> list[BenchResult]:
    policy = policy_engine.policy_file()
    try:
        server = pg_fleet.start_cluster()
    except pg_fleet.Unavailable as exc:
        print(f"!! no PostgreSQL: {exc}", flush=True)
        return [
            harness.not_measured(n, u, t, f"no PostgreSQL here ({exc})", skipped=True)
            for n, u, t in _all_names()
        ]
    if policy is None:  # a console that cannot load SKILLS.md: the rows say they were not run
        server.stop()
        why = "this console cannot load a SKILLS.md policy"
        return [harness.not_measured(n, u, t, why, skipped=True) for n, u, t in _all_names()]
    try:
        context = {
            "engine": "postgresql",
            "server_version": pg_fleet.server_version(server.url("postgres")),
            "cluster": pg_fleet.CLUSTER_NOTE,
        }
        names = _all_names()
        return [
            *_guarded(names[:1], lambda: [decision(server, policy, runs, context)]),
            *_guarded(
                names[1 : 1 + len(BROKERS)], lambda: throughput(server, policy, runs, context)
            ),
            *_guarded(names[1 + len(BROKERS) :], lambda: usage(server, runs, context)),
        ]
    finally:
        server.stop()


if __name__ == "__main__":
    harness.main(run, default_runs=3)
