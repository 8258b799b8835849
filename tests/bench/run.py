"""`make bench`: every benchmark beside its baseline, in one run, in one table.

    python tests/bench/run.py [--runs N] [--only decision,startup] [--profile decision]

Generates (or reuses) the data first, then runs each `bench_*.py` in a fresh interpreter with
`--json`, so no benchmark's imports, caches or peak memory colour another's; a module that fails
is reported and the others still run. Prints one table and writes `tests/bench/results.json` (a
list: one object per benchmark with its figures, target, baseline and `meets_target`), holding
this run's rows alone: every row carries the run's id and start and the load average around
its benchmark, and a table is never drawn from rows of two runs. A fixture's row (the sandbox
alone) is a baseline, never counted among the targets met.

`--profile NAME` runs only `bench_NAME.py`, under pyinstrument where the module supports it, and
prints the top of the profiles it wrote to `build/bench/profile/`.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import harness

RESULTS = harness.BENCH_DIR / "results.json"
PROFILES = harness.REPO / "build" / "bench" / "profile"
# The order of the table: the request's path first (on SQLite, then on PostgreSQL), then the
# screens, then start-up.
ORDER = (
    "decision",
    "throughput",
    "postgres",
    "policy",
    "approvals",
    "usage",
    "catalogue",
    "skill_view",
    "startup",
)
MODULE_TIMEOUT_S = 3600
PROFILE_LINES = 60


def modules() -> list[str]:
    found = [p.stem.removeprefix("bench_") for p in harness.BENCH_DIR.glob("bench_*.py")]
    return sorted(found, key=lambda n: (ORDER.index(n) if n in ORDER else len(ORDER), n))


def run_module(
    name: str, runs: int | None, profile: Path | None, run: dict
) -> list[harness.BenchResult]:
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / f"{name}.json"
        argv = [sys.executable, str(harness.BENCH_DIR / f"bench_{name}.py"), "--json", str(out)]
        if runs is not None:
            argv += ["--runs", str(runs)]
        if profile is not None:
            argv += ["--profile", str(profile)]
        started, load = time.perf_counter(), harness.load_average()
        print(f"\n== {name} (load average {load})", flush=True)
        # Output goes straight through: progress and notes show as they come.
        env = harness.bench_env(**{harness.RUN_ENV: json.dumps(run)})
        done = subprocess.run(argv, env=env, cwd=harness.BENCH_DIR, timeout=MODULE_TIMEOUT_S)
        print(f"== {name}: {time.perf_counter() - started:.0f} s", flush=True)
        if done.returncode != 0:
            raise RuntimeError(f"bench_{name}.py exited with {done.returncode}")
        results = harness.read_json(out)
        harness.stamp(results, run, load)
        for result in results:
            result.context["module"] = name
        return results


def show_profiles(folder: Path) -> None:
    reports = sorted(folder.glob("*.txt"))
    if not reports:
        print(f"no profile was written to {folder}: this benchmark cannot profile itself")
    for report in reports:
        lines = report.read_text().splitlines()
        print(f"\n-- {report} (first {PROFILE_LINES} lines; the .html beside it is interactive)")
        print("\n".join(lines[:PROFILE_LINES]))


def markdown(results: list[harness.BenchResult]) -> str:
    """The figures of one run as the guide's Performance page (docs/performance.md) shows them."""
    run = harness.one_run(results)
    lines = [
        f"Run {run['id']} (started {run['started']}); load: one-minute average." if run else "",
        "",
        "| benchmark | median | p99 | min | max | target | baseline (median) | load | met |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        f, unit = r.figures, r.unit
        baseline = f"{harness.number(r.baseline.figures.median)} {unit}" if r.baseline else "-"
        cells = [harness.number(v) for v in (f.median, f.p99, f.min, f.max)]
        met = "yes" if r.meets_target else "no"
        met = met if r.role == "target" else "baseline, not a target"
        load = (r.run.get("load_average") or ["-"])[0]
        lines.append(
            f"| {r.name} | {' | '.join(c if c == '-' else f'{c} {unit}' for c in cells)}"
            f" | {r.target.describe(unit)} | {baseline} | {load} | {met} |"
        )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, help="repetitions (default: each module's own)")
    parser.add_argument("--only", help="comma-separated names, e.g. decision,startup")
    parser.add_argument("--profile", metavar="NAME", help="profile one benchmark, e.g. decision")
    parser.add_argument(
        "--markdown", action="store_true", help="print the last results.json as a Markdown table"
    )
    args = parser.parse_args()
    if args.markdown:
        print(markdown(harness.read_json(RESULTS)))
        return 0
    available = modules()
    chosen = available
    if args.profile:
        chosen = [args.profile]
    elif args.only:
        chosen = [name.strip() for name in args.only.split(",") if name.strip()]
    unknown = [name for name in chosen if name not in available]
    if unknown:
        parser.error(f"no benchmark {', '.join(unknown)}; there are: {', '.join(available)}")

    machine = harness.machine()
    print(
        f"machine: {machine['cpu']}, {machine['cores']} cores, Python {machine['python']},"
        f" load average {machine['load_average']}",
        flush=True,
    )
    import data  # after the argument check: importing it builds the sandbox catalogue

    started = time.perf_counter()
    data.prepare_all()
    print(f"data: {data.cache_dir()} ({time.perf_counter() - started:.1f} s)", flush=True)

    profile = None
    if args.profile:
        profile = PROFILES / time.strftime("%Y%m%d-%H%M%S")
        profile.mkdir(parents=True)
    run = harness.new_run()
    print(f"run {run['id']}", flush=True)
    results: list[harness.BenchResult] = []
    failed = []
    for name in chosen:
        try:
            results += run_module(name, args.runs, profile, run)
        except (RuntimeError, subprocess.TimeoutExpired, OSError, ValueError) as exc:
            print(f"!! {name}: {exc}", flush=True)
            failed.append(name)

    # The load is each row's own (`run`), taken around its benchmark.
    machine = {key: value for key, value in machine.items() if key != "load_average"}
    for result in results:
        result.context.setdefault("machine", machine)
    print("\n" + harness.format_table(results))
    if profile is not None:
        show_profiles(profile)
    else:
        harness.write_json(results, RESULTS)
        print(f"\nwritten: {RESULTS.relative_to(harness.REPO)} ({len(results)} rows of this run)")
    # A row without figures (no PostgreSQL here, a setup refused) is said apart from a miss; a
    # baseline row is no target.
    targets = [r for r in results if r.role == "target"]
    measured = [r for r in targets if r.conditions.get("measured", True)]
    missed = [r.name for r in measured if not r.meets_target]
    unmeasured = len(targets) - len(measured)
    print(
        f"targets met: {len(measured) - len(missed)} of {len(measured)}"
        + (f"; {unmeasured} not measured (see the notes)" if unmeasured else "")
    )
    if failed:
        print(f"benchmarks that failed to run: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
