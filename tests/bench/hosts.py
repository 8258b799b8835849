"""The processes the socket benchmarks drive, each started fresh by a bench module:

    python hosts.py broker --home DIR [--policy FILE] [--profile PREFIX] [--sandbox-farm N]
    python hosts.py echo --socket PATH
    python hosts.py agents --socket PATH --agents N --each K

`broker` is `svc-console serve` with the embedded sandbox (its own thread, real HTTP on loopback;
with `--sandbox-farm N`, N sandbox processes behind one port instead, `sandbox_farm.py`) plus a
broker listener (what the TUI uses to see a request) that prints one line per request the moment
it becomes visible decided: `<request id> <state> <CLOCK_MONOTONIC ns>`. CLOCK_MONOTONIC is one
clock for every process on the machine, so the agent's send time and the broker's "visible" time
can be subtracted. With `BENCH_METRICS=HOST:PORT` in the environment it also serves `/metrics`
there, as `serve --metrics` does, to scrape while a benchmark runs. `echo` is the baseline: a
bare asyncio JSON-line echo on a Unix socket.
`agents` is the throughput load: N AsyncAgent connections submitting K requests each, at once.

Every host prints `ready ...` on stdout when it is up and stops when its stdin closes.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import sys
import threading
import time
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import harness

# States a request reaches when the pipeline has decided it and committed it (`rejected` is an
# intake failure, reported as such by the benchmarks).
DECIDED = frozenset({"pending", "denied", "auto_approved", "rejected"})
SANDBOX_BALANCE = Decimal(1_000_000)  # auto-approved executions must never run dry mid-run


def _report_cpu() -> None:
    # The process's CPU time (every thread: the broker's loop and the sandbox's), so a benchmark
    # can divide it by the requests it sent: a figure a busy machine inflates far less than time.
    times = os.times()
    sys.stdout.write(f"cpu {times.user + times.system}\n")
    sys.stdout.flush()


def decided_printer(out: Any, loop: asyncio.AbstractEventLoop) -> Callable[[Any], None]:
    """A broker listener printing each request the moment it becomes visible decided (what the
    approvals screen is told), `<id> <state> <monotonic ns>`: one flush of the pipe per turn of
    the loop, not per line."""
    seen: set[str] = set()
    flush_scheduled = False

    def flush() -> None:
        nonlocal flush_scheduled
        flush_scheduled = False
        out.flush()

    def visible(request: Any) -> None:
        nonlocal flush_scheduled
        state = str(request.state)
        if state in DECIDED and request.id not in seen:
            seen.add(request.id)
            out.write(f"{request.id} {state} {time.monotonic_ns()}\n")
            if not flush_scheduled:
                flush_scheduled = True
                loop.call_soon(flush)

    return visible


def _stdin_closed(loop: asyncio.AbstractEventLoop) -> asyncio.Event:
    """An event set when the driving process closes our stdin (or writes `stop`); `cpu` asks for
    the process's CPU time."""
    closed = asyncio.Event()

    def watch() -> None:
        for line in sys.stdin:
            if line.strip() == "stop":
                break
            if line.strip() == "cpu":
                loop.call_soon_threadsafe(_report_cpu)  # written by the loop: lines never mix
        loop.call_soon_threadsafe(closed.set)

    threading.Thread(target=watch, daemon=True, name="stdin-watch").start()
    return closed


def _profiled_sandbox(prefix: str | None) -> Any:
    from svc_console.sandbox.server import SandboxServer
    from svc_console.sandbox.state import SandboxState

    state = SandboxState(balance=SANDBOX_BALANCE)
    if prefix is None:
        return SandboxServer(state)

    class ProfiledSandbox(SandboxServer):
        """The sandbox's uvicorn thread under its own profiler (a profiler sees one thread)."""

        def _run(self) -> None:
            from pyinstrument import Profiler

            profiler = Profiler(interval=0.001)
            profiler.start()
            try:
                super()._run()
            finally:
                profiler.stop()
                _save(profiler, f"{prefix}-sandbox")

    return ProfiledSandbox(state)


def _save(profiler: Any, prefix: str) -> None:
    Path(f"{prefix}.txt").write_text(
        profiler.output_text(unicode=True, color=False, show_all=False, short_mode=False)
    )
    Path(f"{prefix}.html").write_text(profiler.output_html())
    # The functions by their own time (the "top ten" a change is judged by).
    from pyinstrument.renderers import ConsoleRenderer

    flat = ConsoleRenderer(unicode=True, color=False, flat=True, time="percent_of_total")
    Path(f"{prefix}-flat.txt").write_text(profiler.output(flat))


def _policy_options(path: str | None) -> tuple[dict[str, Any], dict[str, Any], str]:
    """What the runtime is given for the policy (its own options, the broker's), and a line
    naming the policy for the results."""
    if path is None:
        from svc_console.policy import ManualReview

        engine = "ManualReview (no SKILLS.md policy: every request goes to pending)"
        return {}, {"policy": ManualReview()}, engine
    import policy_engine

    # As the console runs one: a live SKILLS.md, loaded, compiled and watched by the runtime.
    return {"policy_files": [Path(path)]}, {}, policy_engine.describe(Path(path))


class _SandboxProcess:
    """`svc-console sandbox` in a process of its own, standing in for the embedded sandbox: to
    show what the broker's process costs once the sandbox no longer shares its interpreter."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.credentials = home / "sandbox" / "credentials.json"

    def start(self) -> None:
        import subprocess
        from types import SimpleNamespace

        self.process = subprocess.Popen(
            [str(Path(sys.executable).with_name("svc-console")), "sandbox", "--port", "0"],
            stdout=subprocess.DEVNULL,
            env={**harness.bench_env(), "SVC_CONSOLE_HOME": str(self.home)},
        )
        deadline = time.monotonic() + 30
        while not self.credentials.exists():
            if time.monotonic() > deadline or self.process.poll() is not None:
                raise RuntimeError("the sandbox process did not start")
            time.sleep(0.01)
        found = json.loads(self.credentials.read_text())
        self.base_url = found["base_url"]
        harness.wait_for_health(self.base_url, deadline)
        self.state = SimpleNamespace(**found)

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(10)


async def _broker(args: argparse.Namespace) -> None:
    from svc_console.broker import BrokerConfig
    from svc_console.config import logs
    from svc_console.config.paths import Paths
    from svc_console.runtime import Runtime

    home = Path(args.home)
    paths = Paths(home=home, socket=home / "svc.sock", explicit_home=True)
    logs.configure(paths.logs)
    runtime_options, broker_options, engine = _policy_options(args.policy)
    if args.sandbox_farm:
        from sandbox_farm import FarmHost

        sandbox: Any = FarmHost(home / "farm", workers=args.sandbox_farm)
    elif args.sandbox_process:
        sandbox = _SandboxProcess(home)
    else:
        sandbox = _profiled_sandbox(args.profile)
    sandbox.start()
    metrics = os.environ.get("BENCH_METRICS")
    runtime = Runtime(
        paths=paths,
        sandbox=sandbox,
        config=BrokerConfig(),
        broker_options=broker_options,
        metrics_at=(metrics.rpartition(":")[0], int(metrics.rpartition(":")[2]))
        if metrics
        else None,
        **runtime_options,
    )
    loop = asyncio.get_running_loop()
    stop = _stdin_closed(loop)
    out = sys.stdout
    visible = decided_printer(out, loop)

    profiler = None
    if args.profile:
        from pyinstrument import Profiler

        profiler = Profiler(interval=0.001, async_mode="disabled")
    from svc_console.market.client import import_now

    import_now()  # as `serve` does
    try:
        broker = await runtime.start()
        broker.subscribe(visible)
        out.write(f"ready {paths.socket} {json.dumps(engine)}\n")
        out.flush()
        if profiler is not None:
            profiler.start()
        await stop.wait()
    finally:
        if profiler is not None and profiler.is_running:
            profiler.stop()
            _save(profiler, f"{args.profile}-broker")
        await runtime.stop()
        sandbox.stop()


async def _echo(args: argparse.Namespace) -> None:
    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        # Cancelled when the host stops with the client still connected: nothing to report.
        with contextlib.suppress(ConnectionError, asyncio.CancelledError):
            while line := await reader.readline():
                writer.write(line)
                await writer.drain()
        writer.close()

    server = await asyncio.start_unix_server(serve, path=args.socket)
    stop = _stdin_closed(asyncio.get_running_loop())
    print(f"ready {args.socket}", flush=True)
    async with server:
        await stop.wait()


async def _agents(args: argparse.Namespace) -> None:
    from svc_console.agent import AgentError, AsyncAgent

    # Named from load-001: one agent alone is then one the policy approves without asking, as
    # most of the 200 are (load-000 is denied: the baseline would do half the work of the 200).
    # With several sockets (brokers sharing a ledger), agent n asks on socket n mod their number:
    # the names and keys are the same whatever the brokers.
    sockets = args.socket
    agents = [
        AsyncAgent(f"load-{n:03d}", sockets[(n - 1) % len(sockets)])
        for n in range(1, args.agents + 1)
    ]
    for agent in agents:
        await agent.connect()
    loop = asyncio.get_running_loop()
    go = asyncio.Event()

    def wait_for_go() -> None:
        sys.stdin.readline()
        loop.call_soon_threadsafe(go.set)

    threading.Thread(target=wait_for_go, daemon=True).start()
    print(f"ready {len(agents)}", flush=True)
    await go.wait()
    ids: dict[str, list[str]] = {path: [] for path in sockets}  # by socket
    errors: list[str] = []

    async def submit_all(n: int, agent: AsyncAgent) -> None:
        for k in range(args.each):
            try:
                ticket = await agent.submit(
                    endpoint_id="ep_websearch_basic",
                    inputs={"query": f"load {n} {k}"},
                    purpose="throughput benchmark",
                    idempotency_key=f"load-{n}-{k}",
                )
            except AgentError as exc:
                errors.append(f"{exc.reason}: {exc.message}")
            else:
                ids[sockets[(n - 1) % len(sockets)]].append(ticket["request_id"])

    started, cpu = time.monotonic_ns(), time.process_time()
    await asyncio.gather(*(submit_all(n, agent) for n, agent in enumerate(agents, start=1)))
    submitted = time.monotonic_ns()
    report = {"go_ns": started, "submitted_ns": submitted, "ids": ids, "errors": errors}
    # The agents' own CPU for their submits: on one core, a bound on how fast they can ask.
    report["cpu_s"] = time.process_time() - cpu
    print(json.dumps(report), flush=True)
    for agent in agents:
        await agent.close()


class BrokerHost:
    """A `broker` host process, and what it has made visible so far (read on a thread)."""

    def __init__(
        self,
        home: Path,
        *,
        policy: Path | None = None,
        profile: str | None = None,
        sandbox_process: bool = False,
        sandbox_farm: int | None = None,
        metrics: tuple[str, int] | None = None,
    ) -> None:
        self.home = home
        self.metrics = metrics  # where the host serves /metrics, if anywhere
        argv = [sys.executable, str(Path(__file__)), "broker", "--home", str(home)]
        if policy is not None:
            argv += ["--policy", str(policy)]
        if profile is not None:
            argv += ["--profile", profile]
        if sandbox_process:
            argv.append("--sandbox-process")
        if sandbox_farm:
            argv += ["--sandbox-farm", str(sandbox_farm)]
        self._argv = argv
        self.visible: dict[str, tuple[str, int]] = {}
        self._cpu: list[float] = []
        self._changed = threading.Condition()
        self.socket = home / "svc.sock"
        self.engine = ""

    def __enter__(self) -> BrokerHost:
        import subprocess

        self._stderr = open(self.home.parent / f"{self.home.name}-broker.err", "w")
        self.process = subprocess.Popen(
            self._argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            text=True,
            env=harness.bench_env(**self._metrics_env()),
        )
        assert self.process.stdout is not None
        ready = self.process.stdout.readline().split(" ", 2)
        if ready[0] != "ready":
            self.__exit__()
            tail = Path(self._stderr.name).read_text()[-2000:]
            raise RuntimeError(f"the broker host did not start:\n{tail}")
        self.engine = json.loads(ready[2])
        threading.Thread(target=self._read, daemon=True, name="broker-host-out").start()
        return self

    def _metrics_env(self) -> dict[str, str]:
        if self.metrics is None:
            return {}
        host, port = self.metrics
        return {"BENCH_METRICS": f"{host}:{port}"}

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            first, *rest = line.split() or [""]
            with self._changed:
                if first == "cpu" and len(rest) == 1:
                    self._cpu.append(float(rest[0]))
                elif first.startswith("req_") and len(rest) == 2:
                    self.visible[first] = (rest[0], int(rest[1]))
                else:  # something else wrote to the host's stdout: show it, never misread it
                    print(f"[broker host] {line.rstrip()}", file=sys.stderr, flush=True)
                self._changed.notify_all()

    def cpu_seconds(self, timeout_s: float = 10.0) -> float:
        """The host process's CPU time so far (user and system, all threads)."""
        assert self.process.stdin is not None
        with self._changed:
            asked = len(self._cpu)
            self.process.stdin.write("cpu\n")
            self.process.stdin.flush()
            if not self._changed.wait_for(lambda: len(self._cpu) > asked, timeout_s):
                raise TimeoutError("the broker host did not report its CPU time")
            return self._cpu[-1]

    def wait_visible(self, request_id: str, timeout_s: float = 30.0) -> tuple[str, int]:
        with self._changed:
            if not self._changed.wait_for(lambda: request_id in self.visible, timeout_s):
                raise TimeoutError(f"{request_id} never became visible")
            return self.visible[request_id]

    def wait_all(self, request_ids: list[str], timeout_s: float) -> bool:
        with self._changed:
            return self._changed.wait_for(
                lambda: all(r in self.visible for r in request_ids), timeout_s
            )

    def __exit__(self, *exc: object) -> None:
        import subprocess

        if self.process.stdin is not None:
            with contextlib.suppress(OSError):
                self.process.stdin.close()
        try:
            # A profiled host writes its reports on the way out: give it the time.
            self.process.wait(600 if "--profile" in self._argv else 60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self._stderr.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    modes = parser.add_subparsers(dest="mode", required=True)
    broker = modes.add_parser("broker")
    broker.add_argument("--home", required=True)
    broker.add_argument("--policy", help="a SKILLS.md policy file (default: manual review)")
    broker.add_argument("--sandbox-process", action="store_true", help="sandbox not embedded")
    broker.add_argument("--profile", help="profile into PREFIX-broker.txt, PREFIX-sandbox.txt")
    broker.add_argument("--sandbox-farm", type=int, help="N sandbox processes behind one port")
    echo = modes.add_parser("echo")
    echo.add_argument("--socket", required=True)
    agents = modes.add_parser("agents")
    agents.add_argument("--socket", action="append", required=True, help="again for several")
    agents.add_argument("--agents", type=int, required=True)
    agents.add_argument("--each", type=int, required=True)
    args = parser.parse_args()
    run = {"broker": globals()["_broker"], "echo": _echo, "agents": _agents}[args.mode]
    asyncio.run(run(args))


if __name__ == "__main__":
    main()
