"""What every benchmark shares: the result type, percentiles, timing, a subprocess's peak memory,
the table and the JSON file.

The interface of a bench module (`tests/bench/bench_<topic>.py`):

    def run(runs: int) -> list[BenchResult]     # `runs`: how many times to repeat each measure

    if __name__ == "__main__":
        harness.main(run)                        # --runs N, --json PATH; prints the table

`tests/bench/run.py` starts each module in a fresh interpreter (`python bench_x.py --json F`) so one
benchmark's imports, caches and peak memory never colour another's, then prints one table of all
of them and writes `tests/bench/results.json`.

Each result carries its target and the figures of its baseline, measured in the same run on the
same machine: the claims are the ratios and figures side by side, never a timed assert in a test.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
REPO = BENCH_DIR.parent.parent
# With fewer samples than this, a 99th percentile is just the maximum under another name.
P99_MIN_SAMPLES = 100


# -- figures ----------------------------------------------------------------------------------


def percentile(values: Iterable[float], q: float) -> float:
    """The q-th percentile (0 to 100), interpolating linearly between the closest ranks (the
    definition numpy uses by default)."""
    ordered = sorted(values)
    if not ordered:
        raise ValueError("percentile of no values")
    if not 0 <= q <= 100:
        raise ValueError(f"q must be between 0 and 100, got {q}")
    rank = (len(ordered) - 1) * q / 100
    low = math.floor(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


@dataclass(frozen=True)
class Figures:
    """A summary of samples: median, p99 (only with enough samples for it to mean anything),
    min, max, and how many samples there were."""

    median: float
    p99: float | None
    min: float
    max: float
    samples: int

    @classmethod
    def of(cls, samples: Sequence[float], *, p99: bool | None = None) -> Figures:
        """`p99=None` reports the 99th percentile when there are enough samples for it."""
        if not samples:
            raise ValueError("no samples to summarise")
        with_p99 = len(samples) >= P99_MIN_SAMPLES if p99 is None else p99
        return cls(
            median=statistics.median(samples),
            p99=percentile(samples, 99) if with_p99 else None,
            min=min(samples),
            max=max(samples),
            samples=len(samples),
        )

    def get(self, name: str) -> float | None:
        return {"median": self.median, "p99": self.p99, "min": self.min, "max": self.max}[name]

    def to_json(self) -> dict[str, Any]:
        return {
            "median": self.median,
            "p99": self.p99,
            "min": self.min,
            "max": self.max,
            "samples": self.samples,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Figures:
        return cls(data["median"], data.get("p99"), data["min"], data["max"], data["samples"])


@dataclass(frozen=True)
class Target:
    """Bounds on figures, e.g. `Target({"median": 5, "p99": 20})` for a latency in ms, or
    `Target({"median": 5000}, higher_is_better=True)` for a rate."""

    limits: Mapping[str, float]
    higher_is_better: bool = False

    def met_by(self, figures: Figures) -> bool:
        for name, bound in self.limits.items():
            value = figures.get(name)
            if value is None:  # a bound on a figure that was not measured is not met
                return False
            if (value < bound) if self.higher_is_better else (value > bound):
                return False
        return True

    def describe(self, unit: str) -> str:
        sign = "≥" if self.higher_is_better else "≤"
        return ", ".join(f"{name} {sign} {number(b)} {unit}" for name, b in self.limits.items())

    def to_json(self, unit: str) -> dict[str, Any]:
        return {
            **self.limits,
            "better": "higher" if self.higher_is_better else "lower",
            "text": self.describe(unit),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Target:
        limits = {k: v for k, v in data.items() if k not in ("better", "text")}
        return cls(limits, higher_is_better=data.get("better") == "higher")


@dataclass
class Baseline:
    """What the benchmark is compared with, measured in the same run."""

    name: str
    figures: Figures

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, **self.figures.to_json()}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Baseline:
        return cls(data["name"], Figures.from_json(data))


@dataclass
class BenchResult:
    """One line of the table and one object of results.json.

    `conditions` are what the target demands besides the figures (`{"none lost": True}`);
    `context` holds facts a reader needs to interpret the figures (rows, engine). `role`:
    "target" for the product's own figures, "baseline" for a fixture's (the sandbox alone): a
    limit the others are read against, shown beside its target but never counted as one met.
    `run`: the run it was measured in (its id and start) and the machine's load average when
    its module started and ended (`stamp`)."""

    name: str
    unit: str
    figures: Figures
    target: Target
    baseline: Baseline | None = None
    conditions: dict[str, bool] = field(default_factory=dict)
    context: dict[str, Any] = field(default_factory=dict)
    note: str = ""
    role: str = "target"
    run: dict[str, Any] = field(default_factory=dict)

    @property
    def meets_target(self) -> bool:
        """Whether the product meets its target here; never for a baseline row."""
        met = self.target.met_by(self.figures) and all(self.conditions.values())
        return met and self.role == "target"

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "unit": self.unit,
            "role": self.role,
            "run": self.run,
            **self.figures.to_json(),
            "target": self.target.to_json(self.unit),
            "baseline": self.baseline.to_json() if self.baseline else None,
            "meets_target": self.meets_target if self.role == "target" else None,
            "conditions": self.conditions,
            "context": self.context,
            "note": self.note,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> BenchResult:
        return cls(
            name=data["name"],
            unit=data["unit"],
            figures=Figures.from_json(data),
            target=Target.from_json(data["target"]),
            baseline=Baseline.from_json(data["baseline"]) if data.get("baseline") else None,
            conditions=dict(data.get("conditions") or {}),
            context=dict(data.get("context") or {}),
            note=data.get("note") or "",
            role=data.get("role") or "target",
            run=dict(data.get("run") or {}),
        )


def new_run() -> dict[str, Any]:
    """The identity of a run of benchmarks: an id and when it started (UTC)."""
    started = time.time()
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(started))
    return {"id": f"{stamp}-{os.getpid()}", "started": stamp}


def load_average() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def stamp(results: Iterable[BenchResult], run: Mapping[str, Any], before: list[float]) -> None:
    """Mark each result with its run and the load average around its measurement."""
    for result in results:
        result.run = {**run, "load_average": before, "load_average_after": load_average()}


def one_run(results: Sequence[BenchResult]) -> dict[str, Any] | None:
    """The run all the results come from (None for unstamped ones); ValueError when they mix
    runs, or stamped and unstamped rows: a table compares figures of one run, never of two."""
    ids = {result.run.get("id") for result in results}
    if len(ids) > 1:
        shown = ", ".join(sorted(str(i) for i in ids))
        raise ValueError(f"these results come from {len(ids)} runs ({shown}): one run a table")
    return results[0].run or None if results else None


def not_measured(
    name: str, unit: str, target: Target, why: str, *, skipped: bool = False, **context: Any
) -> BenchResult:
    """A row for a figure that could not be taken (nothing to run it on here, or a setup the
    console refuses): no figures, the target not met, and why in its note and its context, so
    one missing figure never takes the rest of the run with it."""
    return BenchResult(
        name=name,
        unit=unit,
        figures=Figures(None, None, None, None, 0),  # type: ignore[arg-type]
        target=target,
        conditions={"measured": False},
        context={**context, "skipped" if skipped else "error": why},
        note=f"{'skipped' if skipped else 'not measured'}: {why}",
    )


# -- timing -----------------------------------------------------------------------------------


def time_ms(call: Callable[[], object], runs: int, *, warmup: int = 1) -> list[float]:
    """Milliseconds taken by each of `runs` calls, after `warmup` calls that are not counted."""
    for _ in range(warmup):
        call()
    samples = []
    for _ in range(runs):
        start = time.perf_counter_ns()
        call()
        samples.append((time.perf_counter_ns() - start) / 1e6)
    return samples


async def time_ms_async(
    call: Callable[[], Awaitable[object]], runs: int, *, warmup: int = 1
) -> list[float]:
    for _ in range(warmup):
        await call()
    samples = []
    for _ in range(runs):
        start = time.perf_counter_ns()
        await call()
        samples.append((time.perf_counter_ns() - start) / 1e6)
    return samples


class Frames:
    """When a headless Textual app composed each of its frames: Textual still composes every
    frame and hands it to the app's `_display`, which only skips writing it to a terminal."""

    def __init__(self, app: Any) -> None:
        self.times: list[float] = []  # perf_counter seconds
        display = app._display

        def counting_display(screen: Any, renderable: Any) -> None:
            display(screen, renderable)
            if renderable is not None:
                self.times.append(time.perf_counter())

        app._display = counting_display

    async def first_after(self, at: float, timeout: float = 30.0) -> float:
        """The time of the first frame composed at or after `at`, once there is one."""
        import asyncio

        deadline = time.perf_counter() + timeout
        while (frame := next((t for t in self.times if t >= at), None)) is None:
            if time.perf_counter() > deadline:
                raise TimeoutError("no frame was composed in time")
            await asyncio.sleep(0.0002)
        return frame


@dataclass(frozen=True)
class ProcessRun:
    wall_ms: float
    peak_rss_mb: float
    returncode: int
    stdout: str
    stderr: str


def run_process(
    argv: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    timeout_s: float = 120.0,
) -> ProcessRun:
    """Run a command to its end: wall time from spawn to exit, and its peak resident memory
    (the kernel's high-water mark for that process, `ru_maxrss`)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter_ns()
        process = subprocess.Popen(argv, stdout=out, stderr=err, env=env, cwd=cwd)
        deadline = time.monotonic() + timeout_s
        while True:
            pid, status, usage = os.wait4(process.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() > deadline:
                process.kill()
                pid, status, usage = os.wait4(process.pid, 0)
                break
            time.sleep(0.0005)
        wall_ms = (time.perf_counter_ns() - start) / 1e6
        process.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
        out.seek(0)
        err.seek(0)
        return ProcessRun(
            wall_ms=wall_ms,
            peak_rss_mb=usage.ru_maxrss / 1024,  # kilobytes on Linux
            returncode=process.returncode,
            stdout=out.read().decode(errors="replace"),
            stderr=err.read().decode(errors="replace"),
        )


def own_peak_rss_mb() -> float:
    """This process's peak resident memory so far."""
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def bench_env(**extra: str) -> dict[str, str]:
    """The environment for a process a benchmark starts: never a configured real service, and
    the bench folder on the path so helper modules import alike from anywhere."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SVC_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(BENCH_DIR), env.get("PYTHONPATH")]))
    env.update(extra)
    return env


# -- the table and the file -------------------------------------------------------------------


def number(value: float | None) -> str:
    if value is None:
        return "-"
    magnitude = abs(value)
    if magnitude >= 1000:
        return f"{value:,.0f}"
    if magnitude >= 100:
        return f"{value:.0f}"
    if magnitude >= 10:
        return f"{value:.1f}"
    if magnitude >= 1:
        return f"{value:.2f}"
    return f"{value:.3g}"


COLUMNS = ("benchmark", "unit", "median", "p99", "min", "max", "target", "baseline", "load", "met")


def _row(result: BenchResult) -> list[str]:
    f, b = result.figures, result.baseline
    baseline = "-"
    if b is not None:
        baseline = f"{number(b.figures.median)}"
        if b.figures.p99 is not None:
            baseline += f" (p99 {number(b.figures.p99)})"
    met = "yes" if result.meets_target else "NO"
    for name, ok in result.conditions.items():
        if not ok:
            met += f" ({name}: no)"
    if result.role != "target":
        met = "baseline, not a target"
    load = result.run.get("load_average") or ["-"]
    return [
        result.name,
        result.unit,
        number(f.median),
        number(f.p99),
        number(f.min),
        number(f.max),
        result.target.describe(result.unit),
        baseline,
        str(load[0]),
        met,
    ]


def format_table(results: Sequence[BenchResult]) -> str:
    """The results of one run as a table, headed by the run (ValueError if they mix runs); the
    load column is the one-minute load average when the row's benchmark started."""
    run = one_run(results)
    rows = [list(COLUMNS), *(_row(r) for r in results)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(COLUMNS))]
    numeric = {2, 3, 4, 5, 8}
    lines = []
    if run is not None:
        lines.append(f"run {run['id']} (started {run['started']}); load: one-minute average")
    for n, row in enumerate(rows):
        cells = [
            cell.rjust(widths[i]) if i in numeric and n else cell.ljust(widths[i])
            for i, cell in enumerate(row)
        ]
        lines.append("  ".join(cells).rstrip())
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    notes = []
    for result in results:
        said = [f"baseline: {result.baseline.name}"] if result.baseline else []
        said += [result.note] if result.note else []
        if said:
            notes.append(f"  {result.name}: {'; '.join(said)}")
    if notes:
        lines += ["", "notes:", *notes]
    return "\n".join(lines)


def machine() -> dict[str, Any]:
    """The machine the figures were taken on."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }


def write_json(results: Sequence[BenchResult], path: Path) -> None:
    path.write_text(json.dumps([r.to_json() for r in results], indent=2) + "\n")


def read_json(path: Path) -> list[BenchResult]:
    return [BenchResult.from_json(item) for item in json.loads(path.read_text())]


PROFILE_ENV = "BENCH_PROFILE_DIR"
RUN_ENV = "BENCH_RUN"  # the run a module's results belong to, as `run.py` names it (JSON)


def profile_prefix(name: str) -> str | None:
    """Where a module that can profile itself writes `<prefix>-<part>.txt`, when asked to
    (`--profile DIR`); None on an ordinary run."""
    folder = os.environ.get(PROFILE_ENV)
    return str(Path(folder) / name) if folder else None


def main(run: Callable[[int], list[BenchResult]], *, default_runs: int = 5) -> None:
    """The `__main__` of a bench module: run it, print its table, optionally write its JSON."""
    doc = (sys.modules["__main__"].__doc__ or "").strip().split("\n\n")[0]
    parser = argparse.ArgumentParser(description=doc)
    parser.add_argument("--runs", type=int, default=default_runs, help="repetitions")
    parser.add_argument("--json", type=Path, help="also write the results to this file")
    parser.add_argument("--profile", type=Path, help="profile the slowest path into this folder")
    args = parser.parse_args()
    if args.profile:
        args.profile.mkdir(parents=True, exist_ok=True)
        os.environ[PROFILE_ENV] = str(args.profile.resolve())
    before, identity = load_average(), json.loads(os.environ.get(RUN_ENV) or "null") or new_run()
    results = run(args.runs)
    stamp(results, identity, before)
    print(format_table(results), flush=True)
    if args.json:
        write_json(results, args.json)


def wait_for_health(base_url: str, deadline: float) -> None:
    """Until a sandbox at `base_url` answers its health route (its credentials are written just
    before it listens); past `deadline` (time.monotonic), the last error is raised."""
    import urllib.request

    while True:
        try:
            with urllib.request.urlopen(f"{base_url}/api/health", timeout=1):
                return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.01)
