"""Switching screens, as an operator sees it: from the key typed to the screen's header on the
terminal, on its first visit and after.

`svc-console` runs on a real pseudo-terminal (120x40) against the embedded sandbox, in a fresh
SVC_CONSOLE_HOME, as in bench_startup. Once the approvals screen is up and settled, each screen is
visited with its key (2 to 6) and the clock stops when the terminal receives that screen's header
("svc-console — catalogue"); then `1` goes back to the approvals screen. Each screen is visited
once (first visit), then `runs` more times (after). The header is drawn with the rest of the
screen's first frame, so this is the time to a changed screen, not to its last late-loaded row.

Target: under 100 ms after the first visit. Baseline: the switch back to the approvals screen.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import pty
import select
import shutil
import signal
import struct
import subprocess
import tempfile
import termios
import time
from pathlib import Path

import harness
from bench_startup import COLUMNS, READY_MARKER, ROWS, SVC_CONSOLE, visible_text
from harness import Baseline, BenchResult, Figures, Target

TARGET = Target({"median": 100.0})
SCREENS = {"2": "catalogue", "3": "usage", "4": "policies", "5": "wallet", "6": "account"}
TIMEOUT_S = 30.0
SETTLE_S = 0.3  # between switches: the operator reads before typing the next key


class Terminal:
    """The console on a pty: type a key, wait for a text to arrive."""

    def __init__(self) -> None:
        self.home = Path(tempfile.mkdtemp(prefix="svc-screens-"))
        self.master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLUMNS, 0, 0))
        env = harness.bench_env(SVC_CONSOLE_HOME=str(self.home), TERM="xterm-256color")
        env.pop("NO_COLOR", None)
        self.process = subprocess.Popen(
            [SVC_CONSOLE], stdin=slave, stdout=slave, stderr=slave, env=env, start_new_session=True
        )
        os.close(slave)

    def wait_for(self, text: str) -> float:
        """Read until `text` is shown; the time it arrived (perf_counter seconds)."""
        output = b""
        deadline = time.monotonic() + TIMEOUT_S
        while True:
            if time.monotonic() > deadline or self.process.poll() is not None:
                raise RuntimeError(f"{text!r} never shown: {visible_text(output)[-400:]!r}")
            ready, _, _ = select.select([self.master], [], [], 0.02)
            if ready:
                with contextlib.suppress(OSError):
                    output += os.read(self.master, 1 << 16)
                if text in visible_text(output):
                    return time.perf_counter()

    def switch(self, key: str, name: str) -> float:
        time.sleep(SETTLE_S)
        self.drain()
        start = time.perf_counter()
        os.write(self.master, key.encode())
        return (self.wait_for(f"svc-console — {name}") - start) * 1000

    def drain(self) -> None:
        while select.select([self.master], [], [], 0)[0]:
            try:
                os.read(self.master, 1 << 16)
            except OSError:
                return

    def close(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
        os.close(self.master)
        shutil.rmtree(self.home, ignore_errors=True)


def run(runs: int) -> list[BenchResult]:
    terminal = Terminal()
    first: dict[str, float] = {}
    after: dict[str, list[float]] = {name: [] for name in SCREENS.values()}
    home: list[float] = []
    try:
        terminal.wait_for(READY_MARKER)
        time.sleep(2.0)  # the start-up's background work done
        for key, name in SCREENS.items():
            first[name] = terminal.switch(key, name)
            home.append(terminal.switch("1", "approvals"))
        for _ in range(runs):
            for key, name in SCREENS.items():
                after[name].append(terminal.switch(key, name))
                home.append(terminal.switch("1", "approvals"))
    finally:
        terminal.close()
    baseline = Baseline("switch back to approvals", Figures.of(home))
    return [
        BenchResult(
            f"screen switch: {name} (after the first)",
            "ms",
            Figures.of(after[name]),
            TARGET,
            baseline,
            context={"first visit ms": round(first[name], 1), "terminal": f"pty {COLUMNS}x{ROWS}"},
            note=f"first visit {first[name]:.0f} ms",
        )
        for name in SCREENS.values()
    ]


if __name__ == "__main__":
    harness.main(run, default_runs=5)
