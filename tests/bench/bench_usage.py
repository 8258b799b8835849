"""Usage screen: time to first paint and to one page down with 10,000, 100,000 and 1,000,000
charges in the ledger (the console's real app, headless under Pilot), and peak memory.

Each measure runs in a fresh interpreter (`python bench_usage.py child ...`), so the peak resident
memory reported is that of one console showing one ledger. First paint: from the key that opens
the usage screen to the first frame whose first table line is a real charge. One page down: from
the key to the frame whose first line is the charge a page further. Both include Textual's frame
pacing (a refresh waits for the next frame at up to 60 per second), as an operator would see it.

Baseline, in the same run: Textual's own DataTable filled with 100,000 of the same charges (rows
read from SQLite, then `add_rows`), opened and paged the same way.

The seeded ledgers are generated once (`svc_console.ledger.usage_seed`) and cached under
`build/bench/usage-*/`; a run copies one into a temporary SVC_CONSOLE_HOME.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import harness
from harness import Baseline, BenchResult, Figures, Target

SIZES = (10_000, 100_000, 1_000_000)
BASELINE_ROWS = 100_000
BASELINE_RUNS = 3
PAGES_PER_RUN = 25
TERMINAL = (120, 40)
SEED_VERSION = 2
PAINT_TARGET = Target({"median": 300.0})
PAGE_TARGET = Target({"median": 30.0})
MEMORY_TARGET = Target({"max": 200.0})


# -- the seeded ledgers ----------------------------------------------------------------------------


def usage_ledger(rows: int) -> Path:
    """A cached ledger holding `rows` seeded charges (generated on first use)."""
    from svc_console.ledger.schema import MIGRATIONS

    folder = harness.REPO / "build" / "bench" / f"usage-v{SEED_VERSION}-schema{len(MIGRATIONS)}"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"usage-{rows}.db"
    if path.exists():
        return path
    partial = path.with_name(path.name + ".partial")
    for leftover in folder.glob(partial.name + "*"):
        leftover.unlink()
    print(f"[bench data] seeding {rows:,} charges (once; cached)", file=sys.stderr, flush=True)
    started = time.perf_counter()
    # In a process of its own: seeding a million rows takes a few hundred MB, which would stay in
    # this process and be counted again in each child it starts (see `_peak_rss_mb`).
    subprocess.run(
        [sys.executable, "-m", "svc_console.ledger.usage_seed", str(partial), "--rows", str(rows)],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    for suffix in ("-wal", "-shm", ".lock"):
        Path(f"{partial}{suffix}").unlink(missing_ok=True)
    partial.replace(path)
    print(
        f"[bench data] {rows:,} charges: {time.perf_counter() - started:.1f} s,"
        f" {path.stat().st_size / 1e6:.0f} MB",
        file=sys.stderr,
        flush=True,
    )
    return path


# -- inside a child process ----------------------------------------------------------------------


async def _until(predicate: Any, timeout: float = 60.0) -> None:
    deadline = time.perf_counter() + timeout
    while not predicate():
        if time.perf_counter() > deadline:
            raise TimeoutError("the screen did not get there in time")
        await asyncio.sleep(0.0005)


def _watch_paints(table_class: type, first_row: Any) -> list[tuple[float, int]]:
    """Record (time, index) each time the first table line is painted with a real row."""
    paints: list[tuple[float, int]] = []
    original = table_class.render_line

    def render_line(self: Any, y: int) -> Any:
        strip = original(self, y)
        if y == 1:
            index = first_row(self)
            if index is not None:
                paints.append((time.perf_counter(), index))
        return strip

    table_class.render_line = render_line
    return paints


def _painted_after(paints: list[tuple[float, int]], start: float, below: int) -> float | None:
    """When the first line first showed a row further down than `below`, after `start`."""
    return next((t for t, i in paints if t >= start and i > below), None)


async def _page_downs(pilot: Any, paints: list, top: Any, count: int) -> list[float]:
    samples = []
    for _ in range(count):
        before = top()
        start = time.perf_counter()
        await pilot.press("pagedown")
        await _until(lambda b=before, s=start: _painted_after(paints, s, b) is not None)
        samples.append((_painted_after(paints, start, before) - start) * 1000)
    return samples


async def _screen_run(home: Path, url: str | None = None) -> tuple[float, list[float], float]:
    """One run of the screen on the ledger at `home` (with `url`, its rows on PostgreSQL)."""
    from svc_console.config.paths import Paths
    from svc_console.runtime import Runtime
    from svc_console.tui.app import ConsoleApp
    from svc_console.tui.usage.screen import UsageScreen
    from svc_console.tui.usage.table import UsageTable

    paints = _watch_paints(
        UsageTable, lambda t: int(t.scroll_y) if int(t.scroll_y) in t.rows else None
    )
    built: list[float] = []
    compose = UsageScreen.compose

    def timed_compose(self: Any) -> Any:
        built.append(time.perf_counter())
        return compose(self)

    UsageScreen.compose = timed_compose
    paths = Paths(home=home, socket=home / "svc.sock", explicit_home=True)
    runtime = Runtime(paths=paths, ledger_url=url)
    app = ConsoleApp(runtime, cursor_blink=False)
    async with app.run_test(size=TERMINAL) as pilot:
        await _until(lambda: app._started)
        await pilot.pause(0.2)
        paints.clear()
        start = time.perf_counter()
        await pilot.press("3")
        await _until(lambda: any(i == 0 for _, i in paints))
        first = (paints[0][0] - start) * 1000
        own = (paints[0][0] - built[0]) * 1000
        screen = app.screen
        assert isinstance(screen, UsageScreen)
        await _until(lambda: screen.table.total is not None)
        await _until(lambda: screen.summary.days is not None)  # nothing else competing for the CPU
        pages = await _page_downs(pilot, paints, lambda: int(screen.table.scroll_y), PAGES_PER_RUN)
    UsageScreen.compose = compose  # the next run of this interpreter times its own compose
    return first, pages, own


async def _datatable_run(ledger: Path, rows: int) -> tuple[float, list[float]]:
    import sqlite3

    from textual.app import App, ComposeResult
    from textual.screen import Screen
    from textual.widgets import DataTable, Footer, Header

    from svc_console.tui.usage.table import COLUMNS, state_label, usdc, when

    paints = _watch_paints(DataTable, lambda t: int(t.scroll_y) if t.row_count else None)

    class TableScreen(Screen[None]):
        def compose(self) -> ComposeResult:
            yield Header()
            yield DataTable(cursor_type="row")
            yield Footer()

        def on_mount(self) -> None:
            from svc_console.ledger.usage_query import ROW_COLUMNS, UsageRow

            table = self.query_one(DataTable)
            table.add_columns(*(c.title for c in COLUMNS))
            conn = sqlite3.connect(f"file:{ledger}?mode=ro", uri=True)
            cursor = conn.execute(
                f"SELECT {', '.join(ROW_COLUMNS)} FROM usage ORDER BY at DESC, seq DESC LIMIT ?",
                [rows],
            )
            table.add_rows(
                (
                    when(r.at),
                    r.agent,
                    r.provider,
                    r.resource,
                    r.chain,
                    usdc(r.amount),
                    usdc(r.ceiling),
                    state_label(r),
                )
                for r in (UsageRow(*row) for row in cursor)
            )
            conn.close()
            table.focus()

    class TableApp(App[None]):
        pass

    app = TableApp()
    async with app.run_test(size=TERMINAL) as pilot:
        await pilot.pause(0.2)
        paints.clear()
        start = time.perf_counter()
        await app.push_screen(TableScreen())
        await _until(lambda: bool(paints))
        first = (paints[0][0] - start) * 1000
        table = app.screen.query_one(DataTable)
        pages = await _page_downs(pilot, paints, lambda: int(table.scroll_y), PAGES_PER_RUN)
    return first, pages


def child(argv: list[str]) -> None:
    """`child screen|datatable --ledger F --rows N --runs R`: print the samples as JSON."""
    parser = argparse.ArgumentParser()
    parser.add_argument("what", choices=("screen", "datatable"))
    parser.add_argument("--ledger", type=Path, required=True)
    parser.add_argument("--rows", type=int, required=True)
    parser.add_argument("--runs", type=int, required=True)
    args = parser.parse_args(argv)
    firsts, pages, owns = [], [], []
    home = Path(tempfile.mkdtemp(prefix="svc-bench-usage-"))
    try:
        if args.what == "screen":
            home.chmod(0o700)
            shutil.copyfile(args.ledger, home / "ledger-sandbox.db")
            (home / "ledger-sandbox.db").chmod(0o600)
        for _ in range(args.runs):
            if args.what == "screen":
                first, paged, own = asyncio.run(_screen_run(home))
                owns.append(own)
            else:
                first, paged = asyncio.run(_datatable_run(args.ledger, args.rows))
            firsts.append(first)
            pages += paged
    finally:
        shutil.rmtree(home, ignore_errors=True)
    figures = {"first": firsts, "pages": pages, "own": owns}
    print(json.dumps({**figures, "peak_rss_mb": _peak_rss_mb()}))


def _peak_rss_mb() -> float:
    """This process's own peak resident memory: the kernel's high-water mark of its address
    space (VmHWM). Not `ru_maxrss`: on Linux that also carries the parent's peak from before the
    exec, so a child of a large parent would be charged for the parent's memory."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return harness.own_peak_rss_mb()


# -- the driving process -------------------------------------------------------------------------


def _measure(what: str, ledger: Path, rows: int, runs: int) -> dict[str, Any]:
    run = harness.run_process(
        [
            sys.executable,
            __file__,
            "child",
            what,
            "--ledger",
            str(ledger),
            "--rows",
            str(rows),
            "--runs",
            str(runs),
        ],
        env=harness.bench_env(),
        cwd=harness.BENCH_DIR,
        timeout_s=1800,
    )
    if run.returncode != 0:
        raise RuntimeError(f"{what} with {rows:,} rows failed:\n{run.stderr[-3000:]}")
    return json.loads(run.stdout.strip().splitlines()[-1])


def run(runs: int) -> list[BenchResult]:
    # Filling a DataTable with 100,000 rows takes a minute or more: a few runs say enough, each
    # in its own process (its own peak memory, its own time limit).
    ledger = usage_ledger(BASELINE_ROWS)
    base: dict[str, list[float]] = {"first": [], "pages": [], "peak_rss_mb": []}
    for _ in range(min(runs, BASELINE_RUNS)):
        one = _measure("datatable", ledger, BASELINE_ROWS, 1)
        base["first"] += one["first"]
        base["pages"] += one["pages"]
        base["peak_rss_mb"].append(one["peak_rss_mb"])
    base_first = Baseline(
        f"Textual DataTable filled with {BASELINE_ROWS:,} rows: open to first paint",
        Figures.of(base["first"]),
    )
    base_page = Baseline(
        f"Textual DataTable with {BASELINE_ROWS:,} rows: one page down",
        Figures.of(base["pages"]),
    )
    base_memory = Baseline(
        f"Textual DataTable with {BASELINE_ROWS:,} rows: peak RSS",
        Figures.of(base["peak_rss_mb"], p99=False),
    )
    results = []
    for rows in SIZES:
        figures = _measure("screen", usage_ledger(rows), rows, runs)
        context = {"rows": rows, "terminal": list(TERMINAL), "runs": runs}
        results += [
            BenchResult(
                f"usage screen first paint, {rows:,} charges",
                "ms",
                Figures.of(figures["first"]),
                PAINT_TARGET,
                base_first,
                context={
                    **context,
                    "from": "the key that opens the screen",
                    "screen_build_to_paint_ms": Figures.of(figures["own"]).to_json(),
                },
                note=(
                    f"of which the screen itself (built to painted):"
                    f" median {statistics.median(figures['own']):.0f} ms; the rest is the app"
                    " switching modes (Textual re-parses the CSS on a mode switch)"
                ),
            ),
            BenchResult(
                f"usage screen page down, {rows:,} charges",
                "ms",
                Figures.of(figures["pages"]),
                PAGE_TARGET,
                base_page,
                context={**context, "page_downs_per_run": PAGES_PER_RUN},
            ),
            BenchResult(
                f"usage screen peak memory, {rows:,} charges",
                "MB",
                Figures.of([figures["peak_rss_mb"]], p99=False),
                MEMORY_TARGET,
                base_memory,
                context={**context, "measure": "VmHWM of the console's process"},
            ),
        ]
    return results


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "child":
        child(sys.argv[2:])
    else:
        harness.main(run, default_runs=5)
