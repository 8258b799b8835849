"""What the PostgreSQL benchmarks share: a throwaway PostgreSQL cluster, and a fleet of N
`svc-console serve` brokers (`pg_hosts.py serve`) sharing one ledger, with the throughput load
spread over them.

The cluster is `tests/postgres.py`'s, as the tests start it: initdb in a temporary folder, a Unix
socket only, and fast and unsafe (fsync, synchronous_commit and full_page_writes off), so its
figures are those of PostgreSQL's own work without the disk's flushes. The SQLite ledger of the
same runs keeps its own settings (WAL, synchronous=NORMAL).

A fleet: one sandbox farm (`sandbox_farm.py`) as the marketplace, and N brokers, each with its own
SVC_CONSOLE_HOME (and so its own sockets), all with the same SVC_LEDGER_URL; each broker after the
first is given the first's audit key file (`ledger.db.key`), since every broker appending to one
ledger's chain must sign with the one key. Without a URL, one broker keeps the SQLite file in its
home: the same harness on the other engine, for the side-by-side figures.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import harness
from hosts import BrokerHost
from sandbox_farm import DEFAULT_WORKERS, FarmHost

PG_HOSTS = harness.BENCH_DIR / "pg_hosts.py"
HOSTS = harness.BENCH_DIR / "hosts.py"
REAL_LEDGER = "ledger.db"  # the ledger of a configured service, the one SVC_LEDGER_URL moves
CLUSTER_NOTE = "throwaway local PostgreSQL 15 on a Unix socket, fsync off (fast, unsafe)"
DECIDE_TIMEOUT_S = 300.0


class Unavailable(Exception):
    """No PostgreSQL here; the message says why."""


def start_cluster() -> Any:
    """A started `tests/postgres.py` server, or Unavailable with the reason."""
    tests = str(harness.REPO / "tests")
    if tests not in sys.path:
        sys.path.append(tests)
    try:
        import postgres
        import psycopg  # noqa: F401  (the ledger's PostgreSQL driver: without it, no figures)
    except ImportError as exc:
        raise Unavailable(f"cannot import {exc.name}") from None
    server = postgres.PostgresServer()
    try:
        server.start()
    except postgres.Unavailable as exc:
        server.stop()
        raise Unavailable(str(exc)) from None
    return server


def server_cpu_seconds(server: Any) -> float:
    """The cluster's CPU time so far (user and system): the postmaster's, its live backends' and
    that of the backends it has reaped. Read from /proc, as root or as the server's user."""
    tick = os.sysconf("SC_CLK_TCK")
    postmaster = int((server.folder / "data" / "postmaster.pid").read_text().split()[0])
    total = 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            # The fields after the command's closing parenthesis: state, ppid, ... utime (12th).
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue  # a process that ended meanwhile
        pid = int(stat.parent.name)
        if pid == postmaster:
            total += sum(int(f) for f in fields[11:15])  # its own and its reaped children's
        elif int(fields[1]) == postmaster:
            total += int(fields[11]) + int(fields[12])
    return total / tick


def server_version(url: str) -> str:
    import psycopg

    with psycopg.connect(url) as conn:
        return str(conn.execute("SHOW server_version").fetchone()[0])


class ServeHost(BrokerHost):
    """A `pg_hosts.py serve` process: `svc-console serve` for one home, read as a BrokerHost."""

    def __init__(self, home: Path, *, sandbox: Path, policy: Path, url: str | None) -> None:
        super().__init__(home, policy=policy)
        argv = [sys.executable, str(PG_HOSTS), "serve", "--home", str(home)]
        argv += ["--sandbox", str(sandbox), "--policy", str(policy)]
        if url:
            argv += ["--ledger-url", url]
        self._argv = argv

    def ledger_path(self) -> Path:
        return self.home / REAL_LEDGER


class Fleet:
    """N brokers on one ledger (PostgreSQL with `url`, else one broker on its SQLite file), and
    the sandbox farm they speak to. A broker that cannot start raises RuntimeError with its
    stderr's end (the others are stopped)."""

    def __init__(self, brokers: int, policy: Path, url: str | None) -> None:
        if brokers > 1 and not url:
            raise ValueError("brokers share a ledger only on PostgreSQL")
        self.count, self.policy, self.url = brokers, policy, url
        self.root = Path(tempfile.mkdtemp(prefix="svc-pg-"))
        self.hosts: list[ServeHost] = []
        self._stack = ExitStack()

    def __enter__(self) -> Fleet:
        try:
            farm = self._stack.enter_context(FarmHost(self.root / "farm"))
            sandbox = farm.home / "sandbox" / "credentials.json"
            for n in range(self.count):
                home = self.root / f"broker-{n}"
                if self.hosts:
                    home.mkdir(mode=0o700)
                    self._share_key(home)
                host = ServeHost(home, sandbox=sandbox, policy=self.policy, url=self.url)
                self.hosts.append(self._stack.enter_context(host))
        except BaseException:
            self.__exit__()
            raise
        return self

    def _share_key(self, home: Path) -> None:
        first = self.hosts[0].ledger_path()
        key = first.with_name(first.name + ".key")
        if not key.exists():  # an OS keyring holds it, under each home's own ledger path
            raise RuntimeError(f"the first broker's audit key is not in a file ({key})")
        shutil.copy2(key, home / key.name)

    def __exit__(self, *exc: object) -> None:
        try:
            self._stack.close()
        finally:
            shutil.rmtree(self.root, ignore_errors=True)

    @property
    def engine(self) -> str:
        return self.hosts[0].engine if self.hosts else ""

    def cpu_seconds(self) -> float:
        return sum(host.cpu_seconds() for host in self.hosts)

    def ledger_counts(self) -> tuple[int, dict[str, int]]:
        """Requests in the ledger, and the commonest reasons of the rejected ones."""
        count = "SELECT count(*) FROM requests"
        why = (
            "SELECT reason, count(*) FROM requests WHERE state = 'rejected'"
            " GROUP BY reason ORDER BY count(*) DESC LIMIT 5"
        )
        if self.url:
            import psycopg

            with psycopg.connect(self.url) as conn:
                rows = conn.execute(count).fetchone()[0]
                return rows, dict(conn.execute(why).fetchall())  # type: ignore[arg-type]
        with sqlite3.connect(self.hosts[0].ledger_path()) as db:
            return db.execute(count).fetchone()[0], dict(db.execute(why).fetchall())


@dataclass
class Load:
    rate: float
    submitted: int
    decided: int
    lost: int
    refused: int
    states: dict[str, int]
    ledger_rows: int
    rejections: dict[str, int]
    cpu_ms: float  # the brokers' CPU (all of them) per decided request
    per_broker: list[int]  # requests each broker decided
    server_cpu_ms: float | None  # PostgreSQL's CPU per decided request (None: on SQLite)


def _start_agents(fleet: Fleet, agents: int, each: int) -> subprocess.Popen[str]:
    argv = [sys.executable, str(HOSTS), "agents", "--agents", str(agents), "--each", str(each)]
    for host in fleet.hosts:
        argv += ["--socket", str(host.socket)]
    load = subprocess.Popen(
        argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=harness.bench_env()
    )
    assert load.stdout is not None
    if not load.stdout.readline().startswith("ready"):
        raise RuntimeError("the agents did not connect")
    return load


def measure(
    brokers: int,
    agents: int,
    each: int,
    policy: Path,
    url: str | None,
    server_cpu: Callable[[], float] | None = None,
) -> Load:
    """Requests decided a second, from go to the last one visible decided on any broker (the
    brokers' clocks are the machine's one CLOCK_MONOTONIC), as bench_throughput measures it;
    `server_cpu` reads the database server's CPU seconds, when it has a process of its own."""
    with Fleet(brokers, policy, url) as fleet:
        load = _start_agents(fleet, agents, each)
        assert load.stdin is not None and load.stdout is not None
        cpu = fleet.cpu_seconds()
        server = server_cpu() if server_cpu else 0.0
        load.stdin.write("go\n")
        load.stdin.flush()
        report = json.loads(load.stdout.readline())
        load.wait(30)
        seen: dict[str, tuple[str, int]] = {}
        per_broker = []
        for host in fleet.hosts:
            ids = report["ids"][str(host.socket)]
            host.wait_all(ids, DECIDE_TIMEOUT_S)
            mine = {i: host.visible[i] for i in ids if i in host.visible}
            per_broker.append(len(mine))
            seen.update(mine)
        cpu = fleet.cpu_seconds() - cpu
        server = server_cpu() - server if server_cpu else 0.0
        rows, rejections = fleet.ledger_counts()
    last = max((ns for _, ns in seen.values()), default=report["go_ns"])
    states: dict[str, int] = {}
    for state, _ in seen.values():
        states[state] = states.get(state, 0) + 1
    decided = sum(n for s, n in states.items() if s != "rejected")
    return Load(
        rate=decided / max((last - report["go_ns"]) / 1e9, 1e-9),
        submitted=sum(len(ids) for ids in report["ids"].values()),
        decided=decided,
        lost=agents * each - decided,
        refused=len(report["errors"]),
        states=states,
        ledger_rows=rows,
        rejections=rejections,
        cpu_ms=cpu * 1000 / max(decided, 1),
        per_broker=per_broker,
        server_cpu_ms=server * 1000 / max(decided, 1) if server_cpu else None,
    )


SANDBOX_PROCESSES = DEFAULT_WORKERS
