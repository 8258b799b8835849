"""Crash runs: the broker killed with SIGKILL at each step of a request's life, then restarted.

    python tests/crash_harness.py [--runs 1000] [--seed 1] [--json FILE] [--only STEP,...]

One long-lived sandbox process (`svc-console sandbox`) serves every run, so what was charged is
counted on the service's side across restarts: its usage history (`GET /api/agent/usage`, paged by
cursor) lists every charge with the idempotency key the console sent (`<request id>-<attempt>`).
The broker is `svc-console serve` itself (`cli.main(["serve", "--policy", FILE])`, configured for
the sandbox as for any service: SVC_BASE_URL, SVC_API_KEY, SVC_WALLET_CONFIG), in a process forked
from this one once the console's modules are imported: the code of the command, started in a
fraction of a second instead of a second of imports. Runs follow one another on one console home,
so each restart also finds the ledger of all the runs before it.

A run submits a few requests from two agents (`crash-auto`, whose searches the policy approves
itself, and `crash-ask`, whose requests wait for the operator), aims at one step, kills the broker
there with SIGKILL at a random moment (seeded), and starts it again:

- `submitted`: right after the submits were answered (received or inspecting, before the dry run);
- `dry_run`: the dry run has reached the sandbox (its fault switch counts it) and the result is not
  committed: this process holds the ledger's write lock, so the broker waits to commit;
- `decided`: a decision is committed and its execution has not started: the operator approves on a
  connection that also sends a few hundred `approvals.list` lines, which the broker answers
  before it turns to the executions;
- `in_flight`: the proxy call is on its way (a `latency` fault holds it at the sandbox);
- `answered`: the sandbox charged and answered, and the outcome is not stored: this process holds
  the ledger's write lock from the moment the request is `executing` until the charge is seen.

No hook in the console: the windows are widened from outside, by the sandbox's fault switch, by
SQLite's own locking and by the socket's public protocol. What a kill actually hit is read back
from the ledger and the sandbox and counted per step.

After the restart, every run checks: the start-up reported (in its log) exactly the requests that
were executing, now `unknown`, and executed none of them again; the agents' submits with the same
idempotency keys return the same requests (none lost, none doubled); requests pending at the kill
are still pending, and an agent waiting on one by id is woken by the operator's decision; all
requests reach a final state; every charge of the sandbox belongs to an execution whose approval
was committed before it started, at most its ceiling; no request is charged twice; a succeeded
request was charged exactly once and a failed, denied, rejected or expired one never; the ledger's
event chain verifies. At the end, once late calls have landed, the sandbox's whole history is
checked again: at most one charge per request, none the console does not know.

`--sabotage` makes the forked broker retry in-flight executions blindly at start-up (the forbidden
behaviour), to show that the checks catch it.
"""

from __future__ import annotations

import argparse
import contextlib
import html
import itertools
import json
import os
import random
import re
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
import traceback
from collections import Counter
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx

# The operator's passphrase, set in the console's home before its broker starts.
PASSPHRASE = "the crash harness's operator"
KNOWN = {"passphrase": PASSPHRASE}

STEPS = ("submitted", "dry_run", "decided", "in_flight", "answered")
FINAL = frozenset({"rejected", "denied", "succeeded", "failed", "expired", "cancelled", "unknown"})
AUTO, ASK = "crash-auto", "crash-ask"
REPORTED = re.compile(r"request (req_\w+) was in flight at the last stop: now unknown")
POLICY = """# SKILLS.md: crash runs

The crash runs' policy: `crash-auto`'s searches are approved without asking; everything else
waits for the operator.

```policy
auto_approve:
  - name: crash searches
    when:
      agents: [crash-auto]
      max_usdc: 0.05
```
"""
SEARCH = "ep_websearch_basic"  # 0.01 USDC, fixed
SCRAPE = "ep_scrape_page"  # 0.02 to 0.10 USDC, dynamic: always the operator's
FUNDS = Decimal(10_000)  # one top-up through the funding page; a run spends cents
STEP_TIMEOUT_S = 10.0
CHAIN_EVERY = 25  # runs between two verifications of the ledger's event chain


class HarnessError(Exception):
    """The harness could not drive a run (not a finding about the console)."""


# --- the sandbox, a process of its own for all runs ----------------------------------------------


class Sandbox:
    """`svc-console sandbox` on a free port, and what the harness asks it over HTTP."""

    def __init__(self, root: Path):
        self.home = root / "sandbox-home"
        self.charges: dict[str, list[dict[str, Any]]] = {}  # by request id
        self.keys: dict[str, dict[str, Any]] = {}  # by idempotency key
        self._cursor: str | None = None

    def start(self) -> None:
        self.home.mkdir(mode=0o700)
        credentials = self.home / "sandbox" / "credentials.json"
        self._log = open(self.home / "sandbox.err", "w")  # noqa: SIM115 (lives with the process)
        self.process = subprocess.Popen(
            [str(Path(sys.executable).with_name("svc-console")), "sandbox", "--port", "0"],
            stdout=subprocess.DEVNULL,
            stderr=self._log,
            env={**os.environ, "SVC_CONSOLE_HOME": str(self.home)},
        )
        deadline = time.monotonic() + 60
        while not credentials.exists():
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise HarnessError("the sandbox process did not start")
            time.sleep(0.02)
        found = json.loads(credentials.read_text())
        self.base_url, self.username = found["base_url"], found["username"]
        self.api_key, self.api_token = found["api_key"], found["api_token"]
        self.http = httpx.Client(
            base_url=self.base_url,
            headers={"Authorization": f"Bearer {self.api_key}"},
            timeout=30,
        )
        while True:
            with contextlib.suppress(httpx.TransportError):
                if self.http.get("/api/health").status_code == 200:
                    break
            if time.monotonic() > deadline:
                raise HarnessError("the sandbox never answered")
            time.sleep(0.02)
        self.fund(FUNDS)

    def stop(self) -> None:
        self.http.close()
        self.process.terminate()
        try:
            self.process.wait(15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self._log.close()

    def fund(self, amount: Decimal) -> None:
        """As an operator does: the funding page, its form, the amount."""
        page = self.http.get(f"/fund/{self.username}").text
        token = re.search(r'name="token" value="([^"]+)"', page)
        if token is None:
            raise HarnessError("the funding page has no form")
        answer = self.http.post(
            f"/fund/{self.username}",
            data={"token": html.unescape(token.group(1)), "amount": str(amount)},
        )
        if answer.status_code != 200:
            raise HarnessError(f"funding failed: {answer.status_code}")

    def refresh(self) -> None:
        """Reads the usage history from where it was last read."""
        while True:
            params = {"limit": "200", **({"cursor": self._cursor} if self._cursor else {})}
            page = self.http.get("/api/agent/usage", params=params).json()
            for charge in page["charges"]:
                key = charge["idempotencyKey"]
                self.keys[key] = charge
                self.charges.setdefault(key.rsplit("-", 1)[0], []).append(charge)
                self._cursor = charge["id"]
            if not page["nextCursor"]:
                return

    def charged(self, request_id: str) -> list[dict[str, Any]]:
        return self.charges.get(request_id, [])

    def arm(self, kind: str, **options: Any) -> str:
        answer = self.http.post("/sandbox/faults", json={"kind": kind, **options})
        if answer.status_code != 201:
            raise HarnessError(f"the fault switch refused {kind}: {answer.text[:200]}")
        return answer.json()["fault"]["id"]

    def fired(self, fault_id: str) -> int:
        faults = self.http.get("/sandbox/faults").json()["faults"]
        return next((f["fired"] for f in faults if f["id"] == fault_id), 0)

    def clear(self) -> None:
        self.http.delete("/sandbox/faults")


# --- the broker, forked from this process -------------------------------------------------


def _import_the_console() -> None:
    """Everything `svc-console serve` imports, once, so a forked broker starts at once.

    Also the one change to what the brokers run: httpx loads the CA bundle for each client it
    makes (four per start, a tenth of a second each on a busy machine); here it is loaded once and
    shared. It only matters to https, which the sandbox does not speak."""
    import importlib

    import keyring
    from httpx._transports import default as transports

    for module in (
        "anyio",
        "anyio._backends._asyncio",
        "httpcore",
        "watchfiles",
        "svc_console.broker.policy_link",
        "svc_console.cli",
        "svc_console.config.credentials",
        "svc_console.ledger.audit",
        "svc_console.ledger.catalogue_search",
        "svc_console.ledger.catalogue_store",
        "svc_console.config.logs",
        "svc_console.runtime",
    ):
        importlib.import_module(module)
    importlib.import_module("svc_console.cli.entry").parser()  # imports each command's module
    importlib.import_module("sqlite_utils").Database(memory=True)  # loads its plugins
    keyring.get_keyring()  # the backend is looked up once, here
    made: dict[Any, Any] = {}
    load = transports.create_ssl_context

    def loaded_once(verify: Any = True, cert: Any = None, trust_env: bool = True) -> Any:
        key = (verify if isinstance(verify, bool | str) else id(verify), cert, trust_env)
        if key not in made:
            made[key] = load(verify=verify, cert=cert, trust_env=trust_env)
        return made[key]

    transports.create_ssl_context = loaded_once
    loaded_once()


def _sabotage() -> None:
    """The forbidden start-up: executions left in flight are sent again, blindly."""
    from svc_console.broker import upkeep
    from svc_console.core.states import State

    recover = upkeep.recover

    def blind(self: Any) -> Any:
        from helpers import proxy_execute

        for request in self.ledger.in_states([State.executing]):
            decision = self.ledger.latest_decision(request.id)[1]
            self._spawn(
                proxy_execute(
                    self.market.wallet,
                    request.estimate.protocol,
                    request.endpoint.id,
                    request.inputs,
                    ceiling_usdc=decision.ceiling_usdc,
                    chain=request.estimate.chain,
                    idempotency_key=f"{request.id}-again",
                ),
                f"blind-{request.id}",
            )
        return recover(self)

    upkeep.recover = blind  # type: ignore[assignment]


class Broker:
    """One console home and the `svc-console serve` process (forked) that serves it."""

    def __init__(self, home: Path, env: dict[str, str], policy: Path, sabotage: bool):
        self.home, self.env, self.policy, self.sabotage = home, env, policy, sabotage
        self.socket = home / "svc.sock"
        self.ledger = home / "ledger.db"
        self.pid: int | None = None
        self._log_seen = 0
        self._tokens: dict[str, str] = {}

    def token(self, agent: str) -> str:
        """The token of `agent`, registered in this home the first time it is asked for."""
        if agent not in self._tokens:
            from svc_console.config.agent_registry import AgentRegistry

            self._tokens[agent] = AgentRegistry(self.home / "agents.json").add(agent)
        return self._tokens[agent]

    def start(self) -> None:
        close_readers()
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:  # the broker
            self._serve()
        self.pid = pid
        deadline = time.monotonic() + 30
        while True:
            with (
                contextlib.suppress(OSError, ValueError, RpcError),
                Line(self.socket, timeout=5) as line,
            ):
                line.call("console.hello", {"agent": "harness"})
                return
            finished, status = os.waitpid(pid, os.WNOHANG)
            if finished:
                self.pid = None
                raise HarnessError(f"the broker exited ({status}): {self.output()[-2000:]}")
            if time.monotonic() > deadline:
                self.kill()
                raise HarnessError(f"the broker did not start: {self.output()[-2000:]}")
            time.sleep(0.005)

    def _serve(self) -> None:
        code = 70
        try:
            out = os.open(self.home / "serve.out", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            os.dup2(out, 1)
            os.dup2(out, 2)
            for variable in ("SVC_CONSOLE_SOCKET", "SVC_CONSOLE_POLICY"):
                os.environ.pop(variable, None)
            os.environ.update(self.env)
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            if self.sabotage:
                _sabotage()
            from svc_console import cli

            code = cli.main(["serve", "--policy", str(self.policy)])
        except BaseException:
            traceback.print_exc()
        finally:
            with contextlib.suppress(Exception):
                sys.stdout.flush()
                sys.stderr.flush()
            os._exit(code)

    def kill(self) -> None:
        if self.pid is not None:
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
            self.pid = None

    def stop(self) -> None:
        """As an operator stops it (SIGTERM); killed if it does not stop in time."""
        if self.pid is None:
            return
        os.kill(self.pid, signal.SIGTERM)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            finished, _ = os.waitpid(self.pid, os.WNOHANG)
            if finished:
                self.pid = None
                return
            time.sleep(0.01)
        self.kill()

    def output(self) -> str:
        with contextlib.suppress(OSError):
            return (self.home / "serve.out").read_text(errors="replace")
        return ""

    @property
    def log(self) -> Path:
        return self.home / "logs" / "svc-console.log"

    def mark_log(self) -> None:
        """What the log holds now is old: `reported_unknown` reads what comes after."""
        self._log_seen = self.log.stat().st_size if self.log.exists() else 0

    def reported_unknown(self) -> list[str]:
        """The requests the last start-up reported as left in flight, now unknown."""
        if not self.log.exists():
            return []
        with self.log.open("rb") as log:
            log.seek(self._log_seen)
            return REPORTED.findall(log.read().decode(errors="replace"))

    @property
    def operator_socket(self) -> Path:
        return self.home / "operator.sock"


def as_agent_process(work: Any) -> Any:
    """Run `work` in a child process of its own, as an agent would, and return its (JSON) result.
    The console traces the requests it submits to that process, so this harness, which also
    plays the operator, may decide them: it does not run under that process."""
    read_fd, write_fd = os.pipe()
    close_readers()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # the agent
        os.close(read_fd)
        code = 0
        try:
            answer = json.dumps({"result": work()})
        except BaseException as exc:  # reported to the harness, which raises it
            answer, code = json.dumps({"error": f"{type(exc).__name__}: {exc}"}), 1
        with os.fdopen(write_fd, "w") as out:
            out.write(answer)
        os._exit(code)
    os.close(write_fd)
    with os.fdopen(read_fd) as received:
        text = received.read()
    os.waitpid(pid, 0)
    answer = json.loads(text) if text else {"error": "the agent process said nothing"}
    if "error" in answer:
        raise HarnessError(f"agent process: {answer['error']}")
    return answer["result"]


# --- the approval socket, spoken by hand --------------------------------------------------------


class RpcError(Exception):
    def __init__(self, error: dict[str, Any]):
        super().__init__(error.get("message"))
        self.error = error


class Line:
    """One connection to the approval socket: JSON-RPC lines out, replies matched by id."""

    def __init__(self, path: Path, timeout: float = STEP_TIMEOUT_S):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        try:
            self.sock.connect(str(path))
        except OSError:
            self.sock.close()
            raise
        self._buffer = b""
        self._ids = itertools.count(1)
        self.replies: dict[int, dict[str, Any]] = {}
        self.counts: Counter[int] = Counter()  # replies per id: each must be answered once

    def __enter__(self) -> Line:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.sock.close()

    def send(self, calls: list[tuple[str, dict[str, Any]]]) -> list[int]:
        """Writes the calls in one go; returns their ids."""
        ids, data = [], b""
        for method, params in calls:
            call_id = next(self._ids)
            ids.append(call_id)
            message = {"jsonrpc": "2.0", "id": call_id, "method": method, "params": params}
            data += json.dumps(message, separators=(",", ":")).encode() + b"\n"
        self.sock.sendall(data)
        return ids

    def reply(self, call_id: int) -> dict[str, Any]:
        while call_id not in self.replies:
            while b"\n" not in self._buffer:
                chunk = self.sock.recv(1 << 16)
                if not chunk:
                    raise ConnectionError("the broker closed the connection")
                self._buffer += chunk
            line, _, self._buffer = self._buffer.partition(b"\n")
            reply = json.loads(line)
            self.replies[reply["id"]] = reply
            self.counts[reply["id"]] += 1
        return self.replies.pop(call_id)

    def result(self, call_id: int) -> Any:
        reply = self.reply(call_id)
        if "error" in reply:
            raise RpcError(reply["error"])
        return reply["result"]

    def call(self, method: str, params: dict[str, Any]) -> Any:
        return self.result(self.send([(method, params)])[0])


# --- the ledger, read (and locked) from outside ------------------------------------------------


_readers: dict[Path, sqlite3.Connection] = {}


def _reading(path: Path) -> sqlite3.Connection:
    """A read-only connection to the ledger, kept between polls (WAL: each query sees the last
    commit). Closed before every fork: a child must not inherit an open SQLite connection."""
    conn = _readers.get(path)
    if conn is None:
        conn = _readers[path] = sqlite3.connect(path, timeout=10)
        conn.execute("PRAGMA query_only=ON")
    return conn


def close_readers() -> None:
    for conn in _readers.values():
        conn.close()
    _readers.clear()


@dataclass
class Snapshot:
    states: dict[str, str]
    executions: dict[str, list[dict[str, Any]]]  # by request id, oldest first
    decisions: dict[int, dict[str, Any]]  # by id

    def in_state(self, *states: str) -> set[str]:
        return {r for r, s in self.states.items() if s in states}


def snapshot(path: Path, request_ids: list[str]) -> Snapshot:
    """The requests named, their executions and decisions, as committed now."""
    marks = ",".join("?" * len(request_ids))
    columns = ("id", "request_id", "decision_id", "idempotency_key", "started_at", "status")
    db = _reading(path)
    db.execute("BEGIN")  # one read transaction: the three tables as of one commit
    try:
        states = dict(
            db.execute(f"SELECT id, state FROM requests WHERE id IN ({marks})", request_ids)
        )
        executions: dict[str, list[dict[str, Any]]] = {}
        for row in db.execute(
            f"SELECT {', '.join(columns)} FROM executions WHERE request_id IN ({marks})"
            " ORDER BY id",
            request_ids,
        ):
            execution = dict(zip(columns, row, strict=True))
            executions.setdefault(execution["request_id"], []).append(execution)
        decisions = {
            row[0]: {"request_id": row[1], "approved": row[2], "at": row[3], "ceiling": row[4]}
            for row in db.execute(
                "SELECT id, request_id, approved, at, ceiling_usdc FROM decisions"
                f" WHERE request_id IN ({marks})",
                request_ids,
            )
        }
    finally:
        db.execute("ROLLBACK")
    return Snapshot(states, executions, decisions)


def requests_with_keys(path: Path, prefix: str) -> int:
    """How many requests the ledger holds under idempotency keys starting with `prefix`."""
    sql = "SELECT count(*) FROM requests WHERE idempotency_key LIKE ?"
    return _reading(path).execute(sql, [prefix + "%"]).fetchone()[0]


class WriteLock:
    """The ledger's write lock, held by this process: the broker's next commit waits for it."""

    def __init__(self, path: Path):
        self.conn = sqlite3.connect(path, timeout=10, isolation_level=None)
        self.conn.execute("BEGIN IMMEDIATE")

    def release(self) -> None:
        with contextlib.suppress(sqlite3.Error):
            self.conn.execute("ROLLBACK")
        self.conn.close()


# --- one run ---------------------------------------------------------------------------------


@dataclass
class Planned:
    agent: str
    endpoint: str
    inputs: dict[str, Any]
    key: str
    request_id: str = ""


@dataclass
class RunResult:
    number: int
    target: str
    hit: set[str] = field(default_factory=set)
    requests: int = 0
    states: Counter[str] = field(default_factory=Counter)
    charges: int = 0
    unknown_at_restart: int = 0
    pending_across: int = 0
    violations: list[str] = field(default_factory=list)
    request_ids: set[str] = field(default_factory=set)


def _until(predicate: Any, timeout: float = STEP_TIMEOUT_S, every: float = 0.005) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(every)


def _plan(number: int, target: str, rng: random.Random) -> list[Planned]:
    autos = rng.randint(0 if target in ("decided", "answered") else 1, 2)
    asks = rng.randint(2, 4) if target == "decided" else rng.randint(1, 3)
    planned = []
    for n in range(autos):
        inputs = {"query": f"crash run {number} search {n}"}
        planned.append(Planned(AUTO, SEARCH, inputs, f"run{number}-auto{n}"))
    for n in range(asks):
        if rng.random() < 0.5:
            endpoint, inputs = SCRAPE, {"url": f"https://example.com/crash/{number}/{n}"}
        else:
            endpoint, inputs = SEARCH, {"query": f"crash run {number} question {n}"}
        planned.append(Planned(ASK, endpoint, inputs, f"run{number}-ask{n}"))
    return planned


def _submit_all(socket_path: Path, agent: str, token: str, planned: list[Any]) -> list[str]:
    """Submit the agent's planned requests on one connection, as the registered agent its
    `token` proves (the policy's rule names it); their ids, in order."""
    with Line(socket_path) as line:
        line.call("console.hello", {"agent": agent, "token": token})
        ids = line.send([("spend.submit", _submit_params(p)) for p in planned])
        return [line.result(call_id)["request_id"] for call_id in ids]


def _submit_params(p: Planned) -> dict[str, Any]:
    return {
        "agent": p.agent,
        "kind": "market_call",
        "endpoint_id": p.endpoint,
        "inputs": p.inputs,
        "purpose": "crash run",
        "idempotency_key": p.key,
    }


class Run:
    def __init__(
        self, number: int, rng: random.Random, sandbox: Sandbox, broker: Broker, target: str
    ):
        self.result = RunResult(number, target)
        self.rng, self.sandbox, self.broker, self.target = rng, sandbox, broker, target
        self.planned = _plan(number, target, rng)
        self.lock: WriteLock | None = None
        self.open_lines: list[Line] = []
        self.charged_before_kill: set[str] = set()

    def violation(self, text: str) -> None:
        self.result.violations.append(f"run {self.result.number} ({self.target}): {text}")

    # -- before the kill ------------------------------------------------------------------------

    def go(self) -> RunResult:
        counter = None
        delay_ms = 0
        if self.target == "dry_run":
            # The inspection's REST calls are slowed so the lock is taken before any dry run; the
            # zero-delay fault only counts the dry runs that reached the proxy.
            self.sandbox.arm("latency", routes=["rest"], delayMs=80)
            counter = self.sandbox.arm("latency", routes=["proxy"], delayMs=0)
        if self.target in ("in_flight", "answered"):
            delay_ms = self.rng.randint(100, 300)
            self.sandbox.arm("latency", routes=["proxy"], delayMs=delay_ms)
        try:
            self._submit()
            getattr(self, f"_to_{self.target}")(counter, delay_ms)
        finally:
            self._kill()
        return self.result

    def _submit(self) -> None:
        for agent in (AUTO, ASK):
            planned = [p for p in self.planned if p.agent == agent]
            if not planned:
                continue
            token = self.broker.token(agent)
            submitted = as_agent_process(
                lambda agent=agent, token=token, planned=planned: _submit_all(
                    self.broker.socket, agent, token, planned
                )
            )
            for p, request_id in zip(planned, submitted, strict=True):
                p.request_id = request_id
        self.result.requests = len(self.planned)
        self.result.request_ids = {p.request_id for p in self.planned}

    def _snapshot(self) -> Snapshot:
        return snapshot(self.broker.ledger, self.ids)

    @property
    def ids(self) -> list[str]:
        return [p.request_id for p in self.planned]

    def _asks(self) -> list[str]:
        return [p.request_id for p in self.planned if p.agent == ASK]

    def _autos(self) -> list[str]:
        return [p.request_id for p in self.planned if p.agent == AUTO]

    def _intake_done(self, snap: Snapshot) -> bool:
        asks_pending = all(snap.states.get(r) == "pending" for r in self._asks())
        autos_done = all(snap.states.get(r) in FINAL for r in self._autos())
        return asks_pending and autos_done

    def _approve(self, request_ids: list[str], flood: int = 0) -> None:
        line = Line(self.broker.operator_socket)
        line.call("console.hello", {})
        calls = [("approvals.approve", {"request_id": r, **KNOWN}) for r in request_ids]
        calls += [("approvals.list", {"limit": 1})] * flood
        ids = line.send(calls)
        if flood:
            # The kill comes while the broker is still answering; closing now would cancel the
            # calls not yet begun, so the connection stays open until then.
            self.open_lines.append(line)
            return
        with line:
            for call_id in ids:
                line.result(call_id)

    def _to_submitted(self, counter: str | None, delay_ms: int) -> None:
        time.sleep(self.rng.uniform(0, 0.03))

    def _to_dry_run(self, counter: str | None, delay_ms: int) -> None:
        assert counter is not None
        _until(lambda: not self._snapshot().in_state("received"))
        self.lock = WriteLock(self.broker.ledger)
        inspecting = self._snapshot().in_state("inspecting")
        if inspecting:
            past = len(self.planned) - len(inspecting)
            _until(lambda: self.sandbox.fired(counter) > past, every=0.005)
        time.sleep(self.rng.uniform(0, 0.02))

    def _to_decided(self, counter: str | None, delay_ms: int) -> None:
        if not _until(lambda: self._intake_done(self._snapshot())):
            raise HarnessError("the requests were not taken in")
        self._approve(self._asks(), flood=400)

        def approved_not_started() -> bool:
            snap = self._snapshot()
            return any(not snap.executions.get(r) for r in snap.in_state("approved"))

        _until(approved_not_started, timeout=3, every=0.0005)

    def _to_in_flight(self, counter: str | None, delay_ms: int) -> None:
        if not _until(
            lambda: all(self._snapshot().states.get(r) == "pending" for r in self._asks())
        ):
            raise HarnessError("the requests were not taken in")
        self._approve(self._asks())
        _until(lambda: self._snapshot().in_state("executing"))
        time.sleep(self.rng.uniform(0, delay_ms * 0.7 / 1000))
        self._note_charges()

    def _to_answered(self, counter: str | None, delay_ms: int) -> None:
        if not _until(lambda: self._intake_done(self._snapshot())):
            raise HarnessError("the requests were not taken in")
        chosen = self.rng.choice(self._asks())
        self._approve([chosen])
        _until(lambda: self._snapshot().states.get(chosen) == "executing")
        self.lock = WriteLock(self.broker.ledger)

        def charged() -> bool:
            self.sandbox.refresh()
            return bool(self.sandbox.charged(chosen))

        _until(charged, every=0.005)
        time.sleep(self.rng.uniform(0, 0.03))
        self._note_charges()

    def _note_charges(self) -> None:
        self.sandbox.refresh()
        self.charged_before_kill = {
            p.request_id for p in self.planned if self.sandbox.charged(p.request_id)
        }

    def _kill(self) -> None:
        self.broker.kill()
        if self.lock is not None:
            self.lock.release()
            self.lock = None
        for line in self.open_lines:
            line.close()
        self.open_lines.clear()

    # -- the kill, as the ledger and the sandbox saw it ----------------------------------------

    def classify(self, snap: Snapshot, counter_seen: bool) -> None:
        hit = self.result.hit
        for request_id, state in snap.states.items():
            if state in ("received", "inspecting"):
                hit.add("dry_run" if self.target == "dry_run" and counter_seen else "submitted")
            elif state in ("approved", "auto_approved") and not snap.executions.get(request_id):
                hit.add("decided")
            elif state == "executing":
                charged = request_id in self.charged_before_kill
                hit.add("answered" if charged else "in_flight")

    # -- after the restart ----------------------------------------------------------------------

    def check(self, at_kill: Snapshot) -> None:
        broker = self.broker
        executing = at_kill.in_state("executing")
        reported = broker.reported_unknown()
        if sorted(reported) != sorted(executing):
            self.violation(
                f"start-up reported {sorted(reported)}, executing were {sorted(executing)}"
            )
        after = self._snapshot()
        for request_id in executing:
            if after.states.get(request_id) != "unknown":
                self.violation(f"{request_id} was executing and is {after.states.get(request_id)}")
        self.result.unknown_at_restart = len(executing)

        # The agents ask again with the same keys: the same requests, none lost, none doubled.
        for agent in (AUTO, ASK):
            planned = [p for p in self.planned if p.agent == agent]
            if not planned:
                continue
            token = broker.token(agent)
            submitted = as_agent_process(
                lambda agent=agent, token=token, planned=planned: _submit_all(
                    broker.socket, agent, token, planned
                )
            )
            for p, again in zip(planned, submitted, strict=True):
                if again != p.request_id:
                    self.violation(f"{p.key} was {p.request_id}, submitted again: {again}")

        for request_id in at_kill.in_state("pending"):
            state = after.states.get(request_id)
            if state != "pending":
                self.violation(f"{request_id} was pending and is {state} after the restart")
        self._settle(allow_pending=True)
        self._decide_pending()
        self._settle(allow_pending=False)
        self._final_checks(at_kill)

    def _settle(self, *, allow_pending: bool) -> None:
        settled = ("pending", *FINAL) if allow_pending else FINAL
        ids = [p.request_id for p in self.planned]
        if not _until(
            lambda: all(self._snapshot().states.get(r) in settled for r in ids),
            timeout=20,
            every=0.01,
        ):
            stuck = {r: s for r, s in self._snapshot().states.items() if s not in settled}
            self.violation(f"requests never settled after the restart: {stuck}")

    def _decide_pending(self) -> None:
        """Agents wait on their pending requests by id; the operator decides; the waits wake."""
        pending = sorted(self._snapshot().in_state("pending"))
        self.result.pending_across = len(pending)
        if not pending:
            return
        broker = self.broker
        with Line(broker.socket) as agent, Line(broker.operator_socket) as operator:
            agent.call("console.hello", {"agent": ASK, "token": broker.token(ASK)})
            operator.call("console.hello", {})
            quick = agent.call("spend.wait", {"request_id": pending[0], "timeout_s": 0.01})
            if quick["state"] != "pending":
                self.violation(f"{pending[0]} waited on: {quick['state']}, not pending")
            waits = agent.send(
                [("spend.wait", {"request_id": r, "timeout_s": 30}) for r in pending]
            )
            for request_id in pending:
                if self.rng.random() < 0.5:
                    operator.call("approvals.approve", {"request_id": request_id, **KNOWN})
                else:
                    reason = "not this one (crash run)"
                    said = {"request_id": request_id, "reason": reason, **KNOWN}
                    operator.call("approvals.deny", said)
            for request_id, call_id in zip(pending, waits, strict=True):
                woke = agent.result(call_id)
                if woke["id"] != request_id or woke["state"] not in FINAL:
                    self.violation(f"the wait on {request_id} woke with {woke['state']}")
            for counts in (agent.counts, operator.counts):
                twice = [i for i, n in counts.items() if n > 1]
                if twice:
                    self.violation(f"calls answered more than once: {twice}")

    def _final_checks(self, at_kill: Snapshot) -> None:
        sandbox = self.sandbox
        sandbox.refresh()
        final = self._snapshot()
        ids = set(self.ids)
        if set(final.states) != ids:
            self.violation(f"ledger holds {sorted(final.states)}, agents were given {sorted(ids)}")
        held = requests_with_keys(self.broker.ledger, f"run{self.result.number}-")
        if held != len(self.planned):
            self.violation(f"ledger holds {held} requests of this run, {len(self.planned)} made")
        for request_id in ids:
            state = final.states.get(request_id)
            self.result.states[str(state)] += 1
            if state not in FINAL:
                self.violation(f"{request_id} ended {state}, not final")
            charges = sandbox.charged(request_id)
            self.result.charges += len(charges)
            if len(charges) > 1:
                self.violation(f"{request_id} was charged {len(charges)} times")
            expected = {"succeeded": (1,), "unknown": (0, 1)}.get(str(state), (0,))
            if len(charges) not in expected:
                self.violation(f"{request_id} is {state} with {len(charges)} charges")
            executions = final.executions.get(request_id, [])
            by_key = {e["idempotency_key"]: e for e in executions}
            for charge in charges:
                execution = by_key.get(charge["idempotencyKey"])
                if execution is None:
                    self.violation(f"charge {charge['id']} of {request_id} has no execution row")
                    continue
                decision = final.decisions.get(execution["decision_id"])
                if decision is None or not decision["approved"]:
                    self.violation(f"{request_id} executed without an approval")
                    continue
                if decision["at"] > execution["started_at"]:
                    self.violation(f"{request_id} executed before its approval was committed")
                amount = Decimal(charge["amountUsdc"]).scaleb(6)
                if decision["ceiling"] is None or amount > decision["ceiling"]:
                    self.violation(f"{request_id} charged {charge['amountUsdc']} above its ceiling")
            if request_id in at_kill.in_state("executing"):
                before = len(at_kill.executions.get(request_id, []))
                if len(executions) != before:
                    self.violation(f"{request_id} was executed again after the restart")


def one_run(
    number: int, rng: random.Random, sandbox: Sandbox, broker: Broker, target: str
) -> RunResult:
    """One kill and restart of a running broker; it is running again when this returns."""
    run = Run(number, rng, sandbox, broker, target)
    try:
        counter_seen = False
        try:
            run.go()
        finally:
            if target == "dry_run":
                faults = sandbox.http.get("/sandbox/faults").json()["faults"]
                counter_seen = any(f["fired"] for f in faults if f.get("delayMs") == 0)
            sandbox.clear()
        at_kill = snapshot(broker.ledger, run.ids)
        run.classify(at_kill, counter_seen)
        broker.mark_log()
        broker.start()
        run.check(at_kill)
    except (HarnessError, OSError, RpcError, ValueError, KeyError) as exc:
        run.violation(f"the run could not complete: {type(exc).__name__}: {exc}")
        broker.kill()
        broker.start()
    return run.result


def verify_chain(broker: Broker, summary: Summary) -> None:
    from svc_console.ledger.audit import verify

    report = verify(broker.ledger)
    if report.broken is not None:
        summary.violations.append(f"after {summary.runs} runs the event chain breaks: {report}")


@dataclass
class Summary:
    runs: int = 0
    seed: int = 0
    seconds: float = 0.0
    requests: int = 0
    charges: int = 0
    restarts: int = 0
    unknown_after_restart: int = 0
    pending_across_restart: int = 0
    targets: Counter[str] = field(default_factory=Counter)
    hits: Counter[str] = field(default_factory=Counter)
    states: Counter[str] = field(default_factory=Counter)
    violations: list[str] = field(default_factory=list)
    kept: str | None = None
    request_ids: set[str] = field(default_factory=set)

    def add(self, result: RunResult) -> None:
        self.request_ids |= result.request_ids
        self.runs += 1
        self.restarts += 1
        self.requests += result.requests
        self.charges += result.charges
        self.unknown_after_restart += result.unknown_at_restart
        self.pending_across_restart += result.pending_across
        self.targets[result.target] += 1
        self.hits.update(result.hit)
        self.states.update(result.states)
        self.violations += result.violations

    def as_json(self) -> dict[str, Any]:
        return {
            "runs": self.runs,
            "seed": self.seed,
            "seconds": round(self.seconds, 1),
            "requests": self.requests,
            "charges": self.charges,
            "restarts": self.restarts,
            "unknown_after_restart": self.unknown_after_restart,
            "pending_across_restart": self.pending_across_restart,
            "targets": dict(self.targets),
            "hits": {step: self.hits.get(step, 0) for step in STEPS},
            "states": dict(sorted(self.states.items())),
            "violations": self.violations,
            "kept": self.kept,
        }


def run_all(
    runs: int, seed: int, steps: tuple[str, ...] = STEPS, sabotage: bool = False, echo: bool = False
) -> Summary:
    _import_the_console()
    root = Path(tempfile.mkdtemp(prefix="svc-crash-"))
    summary = Summary(seed=seed)
    started = time.monotonic()
    sandbox = Sandbox(root)
    sandbox.start()
    try:
        wallet = root / "wallet.json"
        config = {"username": sandbox.username, "apiToken": sandbox.api_token}
        config["apiBase"] = sandbox.base_url
        fd = os.open(wallet, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as out:
            json.dump(config, out)
        policy = root / "crash-policy.md"
        policy.write_text(POLICY)
        env = {
            "SVC_BASE_URL": sandbox.base_url,
            "SVC_API_KEY": sandbox.api_key,
            "SVC_WALLET_CONFIG": str(wallet),
        }
        rng = random.Random(seed)
        home = root / "console"
        home.mkdir(mode=0o700)
        # The harness's agents run as its own user (registered, with their tokens): open
        # enrolment accepts that, as in the sandbox.
        (home / "settings.toml").write_text('[agents]\nenrolment = "open"\n')
        # So its operator's decisions need a credential: the passphrase, sent with each one.
        from svc_console.config.operator_passphrase import OperatorPassphrase

        OperatorPassphrase(home / "operator.passphrase").set(PASSPHRASE)
        broker = Broker(home, {**env, "SVC_CONSOLE_HOME": str(home)}, policy, sabotage)
        broker.start()
        try:
            for number in range(runs):
                summary.add(one_run(number, rng, sandbox, broker, steps[number % len(steps)]))
                if (number + 1) % CHAIN_EVERY == 0:
                    verify_chain(broker, summary)
                if echo and (number + 1) % 50 == 0:
                    print(
                        f"{number + 1} runs, {time.monotonic() - started:.0f} s,"
                        f" {len(summary.violations)} violations",
                        file=sys.stderr,
                        flush=True,
                    )
        finally:
            broker.stop()
        verify_chain(broker, summary)
        # Calls the kills left sleeping at the sandbox have landed by now: the whole history.
        time.sleep(1.0)
        sandbox.refresh()
        for request_id, charges in sandbox.charges.items():
            if request_id not in summary.request_ids:
                summary.violations.append(f"charges for {request_id}, a request no run made")
            elif len(charges) > 1:
                summary.violations.append(f"{request_id} was charged {len(charges)} times in all")
    finally:
        sandbox.stop()
        summary.seconds = time.monotonic() - started
        if summary.violations:
            summary.kept = str(root)
        else:
            shutil.rmtree(root, ignore_errors=True)
    return summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=int(os.environ.get("CRASH_RUNS", 1000)))
    parser.add_argument("--seed", type=int, default=int(os.environ.get("CRASH_SEED", 1)))
    parser.add_argument("--only", help="steps to aim at, comma-separated (default: all)")
    parser.add_argument("--sabotage", action="store_true", help="retry in-flight calls blindly")
    parser.add_argument("--json", help="write the summary here too")
    args = parser.parse_args()
    steps = tuple(args.only.split(",")) if args.only else STEPS
    unknown = set(steps) - set(STEPS)
    if unknown:
        parser.error(f"no step {sorted(unknown)[0]}; steps: {', '.join(STEPS)}")
    summary = run_all(args.runs, args.seed, steps, args.sabotage, echo=True)
    figures = summary.as_json()
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2))
    print(json.dumps({k: v for k, v in figures.items() if k != "violations"}, indent=2))
    for violation in summary.violations[:50]:
        print(f"VIOLATION {violation}")
    sys.exit(1 if summary.violations else 0)


if __name__ == "__main__":
    main()
