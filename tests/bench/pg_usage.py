"""The usage screen on a PostgreSQL ledger: first paint, one page down and peak memory, measured
as `bench_usage.py` measures them on SQLite (the console's real app, headless under Pilot, in a
fresh interpreter per measure), with the charges seeded by the COPY path
(`svc_console.ledger.usage_seed --url`, which loads through `ledger.pg.bulk_load`).

    python pg_usage.py child --home DIR --url URL --runs R     # prints the samples as JSON

The console is the runtime the TUI builds, with its ledger's rows at the URL (`Runtime`'s
`ledger_url`, what SVC_LEDGER_URL sets for a team's ledger); the screen reads them through the
same readers as on SQLite.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import bench_usage
import harness
from bench_usage import _screen_run

SANDBOX_LEDGER = "ledger-sandbox.db"  # the TUI's own runtime is the sandbox's


def child(argv: list[str]) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--home", type=Path, required=True)
    parser.add_argument("--url", required=True)
    parser.add_argument("--runs", type=int, required=True)
    args = parser.parse_args(argv)
    firsts, pages, owns = [], [], []
    for _ in range(args.runs):
        first, paged, own = asyncio.run(_screen_run(args.home, args.url))
        firsts.append(first)
        pages += paged
        owns.append(own)
    figures = {"first": firsts, "pages": pages, "own": owns}
    print(json.dumps({**figures, "peak_rss_mb": bench_usage._peak_rss_mb()}))


class SeededHome:
    """A console home whose ledger is a fresh PostgreSQL database seeded with `rows` charges (its
    audit key beside the home's ledger path, as the seed leaves it); removed on exit."""

    def __init__(self, server: Any, rows: int) -> None:
        self.server, self.rows = server, rows

    def __enter__(self) -> SeededHome:
        self.url = self.server.new_database()
        self.home = Path(tempfile.mkdtemp(prefix="svc-pg-usage-"))
        self.home.chmod(0o700)
        started = time.perf_counter()
        print(f"[bench data] seeding {self.rows:,} charges into PostgreSQL", file=sys.stderr)
        subprocess.run(
            [
                sys.executable, "-m", "svc_console.ledger.usage_seed",
                str(self.home / SANDBOX_LEDGER), "--rows", str(self.rows), "--url", self.url,
            ],
            check=True, stdout=subprocess.DEVNULL, env=harness.bench_env(), timeout=1800,
        )  # fmt: skip
        self.seconds = time.perf_counter() - started
        print(f"[bench data] seeded in {self.seconds:.1f} s", file=sys.stderr, flush=True)
        return self

    def __exit__(self, *exc: object) -> None:
        shutil.rmtree(self.home, ignore_errors=True)


def measure(seeded: SeededHome, runs: int) -> dict[str, Any]:
    """The child's samples for this seeded ledger, in a fresh interpreter."""
    run = harness.run_process(
        [
            sys.executable, __file__, "child", "--home", str(seeded.home), "--url", seeded.url,
            "--runs", str(runs),
        ],
        env=harness.bench_env(), cwd=harness.BENCH_DIR, timeout_s=1800,
    )  # fmt: skip
    if run.returncode != 0:
        raise RuntimeError(f"the usage screen on PostgreSQL failed:\n{run.stderr[-3000:]}")
    return json.loads(run.stdout.strip().splitlines()[-1])


if __name__ == "__main__":
    child(sys.argv[2:] if sys.argv[1:2] == ["child"] else sys.argv[1:])
