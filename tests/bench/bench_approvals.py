"""Approvals screen: time from a key press to the next frame that shows its effect, with 10,000
requests pending against 10 (the console's real app over the embedded sandbox, headless under
Pilot).

Keys measured: `j` (the next request: the cursor moves and the detail is redrawn), `s` (sort by
the next column: the ledger sorts the whole queue and returns the page on screen) and `]` (the
next page, with 10,000 only). A key's time runs from the press to the first frame composed after
the screen applied it (the detail shows the request the key selected); it includes Textual's frame
pacing (a refresh waits for the next frame, at most 60 a second), as an operator would see it.

Each size runs in a fresh interpreter (`python bench_approvals.py child N`), on a copy of a cached
ledger of pending requests (`data.pending_ledger`). The figures with 10 pending are the baseline
of those with 10,000: the claim is that the queue's length does not show in the keys' latency.

    python tests/bench/bench_approvals.py [--runs N] [--json FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import data
import harness
from harness import Baseline, BenchResult, Figures, Target

SIZES = (10, 10_000)
TERMINAL = (120, 40)
PRESSES = {"j": 120, "s": 40, "]": 40}
KEY_NAMES = {"j": "j", "s": "s", "]": "right_square_bracket"}
WHAT = {"j": "next request", "s": "sort", "]": "next page"}
TARGET = Target({"median": 33.0})  # two frames at 60 Hz


# -- inside a child process ----------------------------------------------------------------------


async def _until(predicate: Any, timeout: float = 30.0) -> None:
    deadline = time.perf_counter() + timeout
    while not predicate():
        if time.perf_counter() > deadline:
            raise TimeoutError("the screen did not get there in time")
        await asyncio.sleep(0.0002)


async def _measure(home: Path, pending: int) -> dict[str, list[float]]:
    from svc_console.config.paths import Paths
    from svc_console.runtime import Runtime
    from svc_console.tui.app import ConsoleApp
    from svc_console.tui.approvals.detail import RequestDetail
    from svc_console.tui.approvals.screen import ApprovalsScreen

    # When the detail was redrawn (the screen applied a key), and when each frame was composed.
    shown: list[tuple[float, str | None]] = []
    original_show = RequestDetail.show

    def show(self: Any, request: Any, *args: Any, **kwargs: Any) -> None:
        original_show(self, request, *args, **kwargs)
        shown.append((time.perf_counter(), request.id if request else None))

    RequestDetail.show = show  # type: ignore[method-assign]
    runtime = Runtime(paths=Paths(home=home, socket=home / "svc.sock", explicit_home=True))
    app = ConsoleApp(runtime, cursor_blink=False)
    frames = harness.Frames(app)
    samples: dict[str, list[float]] = {}
    async with app.run_test(size=TERMINAL) as pilot:
        # The app switches to the screen while it starts: wait until its queue is composed.
        await _until(
            lambda: isinstance(app.screen, ApprovalsScreen) and app.screen.query("#pending")
        )
        screen = app.screen
        assert isinstance(screen, ApprovalsScreen)
        await _until(lambda: screen.queue.row_count == min(pending, 50))
        await pilot.pause(0.3)
        for key, presses in PRESSES.items():
            if key == "]" and pending <= 50:
                continue
            times = []
            for _ in range(presses):
                if key == "j" and screen.queue.cursor_row == screen.queue.row_count - 1:
                    # Back to the top, outside the measure: `j` on the last row turns the page.
                    screen.queue.move_cursor(row=0)
                    await pilot.pause(0.05)
                start = time.perf_counter()
                await pilot.press(KEY_NAMES[key])

                def applied(since: float = start) -> float | None:
                    return next((t for t, _ in shown if t >= since), None)

                await _until(lambda: applied() is not None)
                at = applied()
                assert at is not None
                frame = await frames.first_after(at)
                times.append((frame - start) * 1000)
                await pilot.pause(0.02)
            samples[key] = times
    return samples


def child(argv: list[str]) -> None:
    """`child N --runs R`: print the samples with N pending as JSON."""
    parser = argparse.ArgumentParser()
    parser.add_argument("pending", type=int)
    parser.add_argument("--runs", type=int, required=True)
    args = parser.parse_args(argv)
    ledger = data.pending_ledger(args.pending)
    merged: dict[str, list[float]] = {}
    for _ in range(args.runs):
        home = Path(tempfile.mkdtemp(prefix="svc-bench-approvals-"))
        try:
            home.chmod(0o700)
            data.copy_ledger(ledger, home)
            for key, times in asyncio.run(_measure(home, args.pending)).items():
                merged.setdefault(key, []).extend(times)
        finally:
            shutil.rmtree(home, ignore_errors=True)
    print(json.dumps({"samples": merged, "peak_rss_mb": harness.own_peak_rss_mb()}))


# -- the driving process -------------------------------------------------------------------------


def _samples(pending: int, runs: int) -> dict[str, Any]:
    data.pending_ledger(pending)  # generated here, never inside a timed child
    done = harness.run_process(
        [sys.executable, __file__, "child", str(pending), "--runs", str(runs)],
        env=harness.bench_env(),
        cwd=harness.BENCH_DIR,
        timeout_s=900,
    )
    if done.returncode != 0:
        raise RuntimeError(f"the approvals bench with {pending:,} pending failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def run(runs: int) -> list[BenchResult]:
    small, large = (_samples(n, runs) for n in SIZES)
    results = []
    for key, what in WHAT.items():
        measured = large["samples"].get(key)
        if not measured:
            continue
        base = small["samples"].get(key)
        results.append(
            BenchResult(
                name=f"approvals: key `{key}` ({what}) to next frame, {SIZES[1]:,} pending",
                unit="ms",
                figures=Figures.of(measured),
                target=TARGET,
                baseline=Baseline(f"the same key with {SIZES[0]} pending", Figures.of(base))
                if base
                else None,
                context={
                    "pending": SIZES[1],
                    "terminal": list(TERMINAL),
                    "peak_rss_mb": round(large["peak_rss_mb"], 1),
                },
            )
        )
    return results


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "child":
        child(sys.argv[2:])
    else:
        harness.main(run, default_runs=3)
