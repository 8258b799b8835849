"""Start-up, each run in a fresh process: `svc-console --help` to its exit, and the TUI from spawn
to its first frames on a terminal.

The TUI runs on a real pseudo-terminal (120x40), as an operator would start it: `svc-console` with
no service configured, so against the embedded sandbox, in a fresh SVC_CONSOLE_HOME holding a
ledger with 10,000 pending requests. Three moments are timed from spawn: the first frame with text
on it (whatever the app paints first), the approvals screen with its rows (the SANDBOX banner and
the queue's agents, drawn from the ledger while the broker starts), and the console ready to
decide (the full screen, recognised by its footer's keys).

Baselines: `python -c pass` for `--help`; `python -c "import textual"` for the TUI.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import pty
import re
import select
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import termios
import time
from pathlib import Path

import data
import harness
from harness import Baseline, BenchResult, Figures, Target

SVC_CONSOLE = str(Path(sys.executable).with_name("svc-console"))
HELP_TARGET = Target({"median": 150.0})
QUIT_TARGET = Target({"median": 300.0})
SERVE_STOP_TARGET = Target({"median": 1000.0})
PAINT_TARGET = Target({"median": 250.0})
FRAME_TARGET = Target({"median": 400.0})
READY_TARGET = Target({"median": 1000.0})
ROWS, COLUMNS = 40, 120
# What the approvals screen's first frame shows: the banner it docks (sandbox) and its queue.
CONSOLE_MARKER = "SANDBOX"
QUEUE_MARKER = re.compile("|".join(data.AGENTS))
# What only the console ready to decide shows: the footer's first key.
READY_MARKER = "Approve"
FRAME_TIMEOUT_S = 30.0
_ANSI = re.compile(rb"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")


def visible_text(output: bytes) -> str:
    """What a terminal would show of `output`, roughly: the escape sequences removed."""
    return _ANSI.sub(b"", output).decode(errors="replace")


def _wall(argv: list[str], runs: int) -> list[float]:
    samples = []
    for _ in range(runs + 1):  # the first run only warms the file cache
        result = harness.run_process(argv, env=harness.bench_env())
        if result.returncode != 0:
            raise RuntimeError(f"{argv} failed: {result.stderr[-500:]}")
        samples.append(result.wall_ms)
    return samples[1:]


def first_frames(ledger: Path) -> tuple[float, float, float, float]:
    """Milliseconds from spawn to the first painted text, to the approvals screen with its rows,
    and to the console ready to decide; then from `q` to the process giving the terminal back."""
    home = Path(tempfile.mkdtemp(prefix="svc-tui-"))
    data.copy_ledger(ledger, home)
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLUMNS, 0, 0))
    env = harness.bench_env(SVC_CONSOLE_HOME=str(home), TERM="xterm-256color")
    env.pop("NO_COLOR", None)
    start = time.perf_counter_ns()
    process = subprocess.Popen(
        [SVC_CONSOLE], stdin=slave, stdout=slave, stderr=slave, env=env, start_new_session=True
    )
    os.close(slave)
    output = b""
    painted = rows = ready = None
    try:
        deadline = time.monotonic() + FRAME_TIMEOUT_S
        while ready is None:
            if time.monotonic() > deadline or process.poll() is not None:
                raise RuntimeError(
                    f"the TUI showed no {READY_MARKER!r} frame: {visible_text(output)[-600:]!r}"
                )
            ready_fds, _, _ = select.select([master], [], [], 0.05)
            if not ready_fds:
                continue
            try:
                output += os.read(master, 1 << 16)
            except OSError:  # the terminal closed: the process is gone
                continue
            now = time.perf_counter_ns()
            text = visible_text(output)
            if painted is None and len(text.strip()) >= 10:
                painted = now
            if rows is None and CONSOLE_MARKER in text and QUEUE_MARKER.search(text):
                rows = now
            if rows is not None and READY_MARKER in text:
                ready = now
        quit_ms = _quit(process, master)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        os.close(master)
        shutil.rmtree(home, ignore_errors=True)
    assert painted is not None and rows is not None and ready is not None
    return (painted - start) / 1e6, (rows - start) / 1e6, (ready - start) / 1e6, quit_ms


def _quit(process: subprocess.Popen[bytes], master: int) -> float:
    """`q` typed once the console has settled (its start-up done), to the process's exit."""
    time.sleep(1.0)  # the start-up's background work (catalogue sync) under way, as in use
    start = time.perf_counter_ns()
    os.write(master, b"q")
    deadline = time.monotonic() + FRAME_TIMEOUT_S
    while process.poll() is None:
        if time.monotonic() > deadline:
            raise RuntimeError("the TUI did not exit after q")
        ready, _, _ = select.select([master], [], [], 0.01)
        if ready:
            with contextlib.suppress(OSError):
                os.read(master, 1 << 16)
    return (time.perf_counter_ns() - start) / 1e6


def serve_stop() -> tuple[float, str]:
    """`svc-console serve` in a fresh home, ready (its banner printed), then SIGTERM: the
    milliseconds to its exit, and the last line it printed."""
    home = Path(tempfile.mkdtemp(prefix="svc-serve-"))
    env = harness.bench_env(SVC_CONSOLE_HOME=str(home))
    process = subprocess.Popen(
        [SVC_CONSOLE, "serve"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env
    )
    try:
        assert process.stdout is not None
        for line in process.stdout:  # up to its last banner line: the sockets are open
            if b"operator socket" in line:
                break
        else:
            raise RuntimeError("serve exited before it was ready")
        start = time.perf_counter_ns()
        process.send_signal(signal.SIGTERM)
        rest = process.stdout.read()
        process.wait(FRAME_TIMEOUT_S)
        stopped_ms = (time.perf_counter_ns() - start) / 1e6
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        shutil.rmtree(home, ignore_errors=True)
    return stopped_ms, rest.decode(errors="replace").strip().splitlines()[-1]


def profile_child(prefix: str) -> None:
    """In a fresh process: the TUI from the first import to the approvals screen, headless, under
    pyinstrument (imports included), written to `<prefix>-tui.txt` and `.html`."""
    import asyncio

    from pyinstrument import Profiler

    profiler = Profiler(interval=0.001)
    profiler.start()
    from svc_console.cli.console import _runtime
    from svc_console.tui.app import ConsoleApp

    app = ConsoleApp(_runtime())

    async def until_console(pilot: object) -> None:
        while type(app.screen).__name__ != "ApprovalsScreen":
            await asyncio.sleep(0.002)
        app.exit()

    app.run(headless=True, size=(COLUMNS, ROWS), auto_pilot=until_console)
    profiler.stop()
    text = profiler.output_text(unicode=True, color=False, short_mode=False)
    Path(f"{prefix}-tui.txt").write_text(text)
    Path(f"{prefix}-tui.html").write_text(profiler.output_html())


def _profile(prefix: str) -> list[BenchResult]:
    home = Path(tempfile.mkdtemp(prefix="svc-tui-"))
    try:
        done = harness.run_process(
            [sys.executable, __file__, "profile-child", prefix],
            env=harness.bench_env(SVC_CONSOLE_HOME=str(home)),
            cwd=harness.BENCH_DIR,
        )
    finally:
        shutil.rmtree(home, ignore_errors=True)
    if done.returncode != 0:
        raise RuntimeError(f"the profiled start failed: {done.stderr[-2000:]}")
    return [
        BenchResult(
            "start-up: TUI to approvals screen (profiled, headless)",
            "ms",
            Figures.of([done.wall_ms]),
            FRAME_TARGET,
        )
    ]


def run(runs: int) -> list[BenchResult]:
    profile = harness.profile_prefix("startup")
    if profile:
        return _profile(profile)
    python = sys.executable
    bare = Baseline("python -c pass", Figures.of(_wall([python, "-c", "pass"], runs)))
    textual = Baseline(
        'python -c "import textual"', Figures.of(_wall([python, "-c", "import textual"], runs))
    )
    helps = _wall([SVC_CONSOLE, "--help"], runs)
    ledger = data.pending_ledger()
    first_frames(ledger)  # warms the file cache, as the other measures' first run does
    frames = [first_frames(ledger) for _ in range(runs)]
    stops = [serve_stop() for _ in range(runs)]
    terminal = {"terminal": f"pty {COLUMNS}x{ROWS}", "pending": data.PENDING_COUNT}
    return [
        BenchResult("start-up: svc-console --help", "ms", Figures.of(helps), HELP_TARGET, bare),
        BenchResult(
            "start-up: TUI first paint (any text)",
            "ms",
            Figures.of([frame[0] for frame in frames]),
            PAINT_TARGET,
            textual,
            context=terminal,
            note="spawn to the first frame with text (the placeholder shown while starting)",
        ),
        BenchResult(
            "start-up: TUI approvals screen with its rows",
            "ms",
            Figures.of([frame[1] for frame in frames]),
            FRAME_TARGET,
            textual,
            context={**terminal, "markers": f"{CONSOLE_MARKER} and an agent's name"},
            note="spawn to the pending list's first page on a pty, read from the ledger while "
            "the broker starts; embedded sandbox",
        ),
        BenchResult(
            "start-up: TUI ready to decide",
            "ms",
            Figures.of([frame[2] for frame in frames]),
            READY_TARGET,
            textual,
            context={**terminal, "marker": READY_MARKER},
            note="spawn to the full approvals screen (broker, sandbox and sockets up)",
        ),
        BenchResult(
            "stop: SIGTERM to `svc-console serve`'s exit",
            "ms",
            Figures.of([ms for ms, _ in stops]),
            SERVE_STOP_TARGET,
            conditions={
                "one line said what it left": all(
                    line.startswith("svc-console: stopped;") for _, line in stops
                )
            },
            context={"last line": stops[-1][1]},
            note="a ready serve, embedded sandbox, fresh home",
        ),
        BenchResult(
            "quit: q to the terminal given back",
            "ms",
            Figures.of([frame[3] for frame in frames]),
            QUIT_TARGET,
            context={"terminal": f"pty {COLUMNS}x{ROWS}"},
            note="q on the approvals screen, a second after start, to the process's exit",
        ),
    ]


if __name__ == "__main__":
    if sys.argv[1:2] == ["profile-child"]:
        profile_child(sys.argv[2])
    else:
        harness.main(run, default_runs=7)
