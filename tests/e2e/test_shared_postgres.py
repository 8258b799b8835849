"""Two brokers on one PostgreSQL ledger (one per agent host), as a team runs them.

Each broker is `svc-console serve` in a process of its own, with a console home of its own (its
sockets, its log, its head file) and the same SVC_LEDGER_URL; the second is given the first's
audit key, as docs/team.md says. The sandbox is a third process, so what was charged is counted on
the service's side. The PostgreSQL server is the tests' own (tests/postgres.py).

- One overall cap, 200 agents (100 on each broker), each asking twice for a search the policy
  approves itself while the cap has room: exactly the cap is approved and charged, to the cent,
  whichever broker took each request; the rest are denied by the budget; no request is charged
  or executed twice; the audit chain the two wrote together verifies.
- One queue: a request submitted on one broker and approved on the other's operator socket is
  executed once, and its agent, waiting on the first broker, hears that it succeeded.
- A broker killed (SIGKILL) while its calls are in flight: the other reports them `unknown`,
  never sends them again, and carries on deciding and executing.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import psycopg
import pytest
from crash_harness import Line
from load_agents import FINAL, Connection
from operator_support import ACTS, PASSPHRASE, set_passphrase
from sandbox_process import SandboxProcess

CAP = Decimal("2.00")
SEARCH = "ep_websearch_basic"  # 0.01 USDC, fixed
AGENTS_EACH = 100
ASKS_EACH = 2
DEADLINE_S = 120.0
POLICY = f"""# SKILLS.md: a team's fleet

The fleet's searches are approved without asking while the fleet's day has room; the rest wait
for the operator.

```policy
auto_approve:
  - name: fleet searches
    when:
      agents: ["fleet-*"]
      max_usdc: 0.05
budgets:
  - name: fleet day
    window: day
    max_usdc: {CAP}
```
"""


def wait_until(what: str, holds: Callable[[], Any], timeout: float = DEADLINE_S) -> Any:
    """Until `holds()` is true (its value returned); fails, saying what, after `timeout`."""
    deadline = time.monotonic() + timeout
    while not (found := holds()):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)
    return found


class ServedBroker:
    """`svc-console serve` on a console home of its own, on the shared ledger."""

    def __init__(self, home: Path, env: dict[str, str], policy: Path):
        self.home, self.policy = home, policy
        self.env = {**os.environ, **env, "SVC_CONSOLE_HOME": str(home)}
        for variable in ("SVC_CONSOLE_SOCKET", "SVC_CONSOLE_POLICY"):
            self.env.pop(variable, None)
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def socket(self) -> Path:
        return self.home / "svc.sock"

    @property
    def operator_socket(self) -> Path:
        return self.home / "operator.sock"

    def start(self) -> ServedBroker:
        self.out = open(self.home / "serve.out", "wb")  # noqa: SIM115 (lives with the process)
        self.process = subprocess.Popen(
            [
                str(Path(sys.executable).with_name("svc-console")),
                "serve",
                "--policy",
                str(self.policy),
            ],
            env=self.env,
            stdout=self.out,
            stderr=subprocess.STDOUT,
        )

        def says_hello() -> bool:
            assert self.process is not None
            if self.process.poll() is not None:
                raise AssertionError(f"the broker exited: {self.output()[-2000:]}")
            with contextlib.suppress(OSError, ValueError), Line(self.socket, timeout=5) as line:
                line.call("console.hello", {"agent": "fleet-hello"})
                return True
            return False

        wait_until("the broker to answer", says_hello)
        return self

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait()

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.kill()
        self.out.close()

    def output(self) -> str:
        return (self.home / "serve.out").read_text(errors="replace")

    def operator(self, method: str, params: dict[str, Any]) -> Any:
        """An operator's call, with the passphrase where the method acts."""
        if method in ACTS:
            params = {**params, "passphrase": PASSPHRASE}
        with Line(self.operator_socket, timeout=30) as line:
            return line.call(method, params)


class Fleet:
    """The sandbox, the shared ledger and two brokers on it."""

    def __init__(self, root: Path, url: str):
        self.root, self.url = root, url
        self.sandbox = SandboxProcess(root / "sandbox").start()
        self.sandbox.set_balance(1_000)
        wallet = root / "wallet.json"
        wallet.write_text(
            json.dumps(
                {
                    "username": self.sandbox.username,
                    "apiToken": self.sandbox.api_token,
                    "apiBase": self.sandbox.base_url,
                }
            )
        )
        wallet.chmod(0o600)
        self.env = {
            "SVC_BASE_URL": self.sandbox.base_url,
            "SVC_API_KEY": self.sandbox.api_key,
            "SVC_WALLET_CONFIG": str(wallet),
            "SVC_LEDGER_URL": url,
        }
        self.policy = root / "fleet-policy.md"
        self.policy.write_text(POLICY)
        self.brokers: list[ServedBroker] = []

    def start_brokers(self) -> tuple[ServedBroker, ServedBroker]:
        first = self._broker("host-a").start()
        second = self._broker("host-b")
        # The second host is given the audit key of the brokers already writing the ledger.
        shutil.copy2(first.home / "ledger.db.key", second.home / "ledger.db.key")
        return first, second.start()

    def _broker(self, name: str) -> ServedBroker:
        home = self.root / name
        home.mkdir(mode=0o700)
        # The fleet's agents run as the tests' own user: open enrolment accepts that, as in the
        # sandbox (those of the fleet's rule prove their names with tokens). So the operator's
        # decisions need a credential: a passphrase, set before the broker starts.
        (home / "settings.toml").write_text('[agents]\nenrolment = "open"\n')
        set_passphrase(home)
        broker = ServedBroker(home, self.env, self.policy)
        self.brokers.append(broker)
        return broker

    def stop(self) -> None:
        for broker in self.brokers:
            broker.stop()
        # A killed broker's calls may still be held by a latency fault: the test is over, and a
        # graceful stop would wait five seconds for them.
        self.sandbox.stop(graceful=False)

    def rows(self, sql: str, params: list[Any] | None = None) -> list[tuple]:
        with psycopg.connect(self.url) as conn:
            return conn.execute(sql, params).fetchall()

    def state(self, request_id: str) -> str:
        return self.rows("SELECT state FROM requests WHERE id = %s", [request_id])[0][0]

    def charges_by_request(self) -> Counter[str]:
        """How many times the service charged each request (its idempotency keys are
        `<request id>-<attempt>`)."""
        return Counter(c.idempotency_key.rsplit("-", 1)[0] for c in self.sandbox.charges())


@pytest.fixture
def fleet(postgres: Any, tmp_path: Path) -> Iterator[Fleet]:
    fleet = Fleet(tmp_path, postgres.new_database())
    yield fleet
    fleet.stop()


def register(broker: ServedBroker, host: str) -> dict[str, str]:
    """The AGENTS_EACH agents of a host, registered on its broker (the fleet's rule names
    agents that prove their names): each one's token, by name."""
    from svc_console.config.agent_registry import AgentRegistry

    registry = AgentRegistry(broker.home / "agents.json")
    return {
        name: registry.add(name) for name in (f"fleet-{host}-{n:03d}" for n in range(AGENTS_EACH))
    }


async def ask_all(sockets: list[Path], tokens: dict[str, str]) -> dict[str, str]:
    """AGENTS_EACH agents on each socket, each asking ASKS_EACH times, one after the other:
    each request's id and the final state its agent was told."""
    told: dict[str, str] = {}

    async def agent(path: Path, name: str) -> None:
        connection = Connection(name, tokens[name])
        await connection.open(str(path))
        try:
            for n in range(ASKS_EACH):
                ticket = await connection.call(
                    "spend.submit",
                    {
                        "agent": name,
                        "kind": "market_call",
                        "endpoint_id": SEARCH,
                        "inputs": {"query": f"{name} asks {n}"},
                        "purpose": "the fleet's research",
                        "idempotency_key": f"{name}-{n}",
                    },
                )
                state = ticket["state"]
                while state not in FINAL:
                    waited = await connection.call(
                        "spend.wait", {"request_id": ticket["request_id"], "timeout_s": 30}
                    )
                    state = waited["state"]
                told[ticket["request_id"]] = state
        finally:
            connection.close()

    await asyncio.gather(
        *(
            agent(path, f"fleet-{host}-{n:03d}")
            for host, path in zip("ab", sockets, strict=True)
            for n in range(AGENTS_EACH)
        )
    )
    return told


def test_two_brokers_hold_one_cap_to_the_cent_and_execute_each_request_once(fleet: Fleet) -> None:
    first, second = fleet.start_brokers()
    tokens = register(first, "a") | register(second, "b")
    told = asyncio.run(ask_all([first.socket, second.socket], tokens))

    assert len(told) == 2 * AGENTS_EACH * ASKS_EACH
    by_broker = Counter(
        row[0] for row in fleet.rows("SELECT broker FROM requests WHERE agent LIKE 'fleet-%'")
    )
    assert len(by_broker) == 2, "each broker took its own agents' requests"
    states = Counter(told.values())
    cap_calls = int(CAP / Decimal("0.01"))
    assert states == {"succeeded": cap_calls, "denied": len(told) - cap_calls}, states
    # What the agents were told is what the ledger holds.
    for request_id, state in told.items():
        assert fleet.state(request_id) == state
    # The cap held to the cent, on the service's side: every charge is one of these requests.
    charges = fleet.sandbox.charges()
    assert sum(c.price_usdc for c in charges) == CAP
    assert {c.idempotency_key.rsplit("-", 1)[0] for c in charges} <= set(told)
    # No request charged or executed twice.
    assert max(fleet.charges_by_request().values()) == 1
    executions = fleet.rows("SELECT request_id, count(*) FROM executions GROUP BY request_id")
    assert len(executions) == cap_calls and {n for _, n in executions} == {1}
    # The denied ones say why: the fleet's day.
    reasons = fleet.rows("SELECT DISTINCT reason FROM requests WHERE state = 'denied'")
    assert all("fleet day" in reason for (reason,) in reasons), reasons
    # The two brokers wrote one chain, which verifies with the key they share.
    audit = subprocess.run(
        [str(Path(sys.executable).with_name("svc-console")), "audit", "verify"],
        env=first.env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert audit.returncode == 0, audit.stdout + audit.stderr


def _pending(fleet: Fleet, agent: str, count: int) -> list[str]:
    def found() -> list[str] | None:
        ids = [
            row[0]
            for row in fleet.rows(
                "SELECT id FROM requests WHERE agent = %s AND state = 'pending' ORDER BY id",
                [agent],
            )
        ]
        return ids if len(ids) == count else None

    return wait_until(f"{count} pending requests of {agent}", found)


# An agent in a process of its own: the console refuses a decision from the process that
# submitted the request (or one it started), and this test plays the operator.
AGENT = """
import json, sys
from crash_harness import Line
path, agent, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
with Line(path, timeout=60) as line:
    line.call("console.hello", {"agent": agent})
    ids = [
        line.call("spend.submit", {
            "agent": agent, "kind": "market_call", "endpoint_id": "ep_websearch_basic",
            "inputs": {"query": f"{agent} asks {n}"}, "purpose": "asks the operator",
            "idempotency_key": f"{agent}-{n}",
        })["request_id"]
        for n in range(count)
    ]
    print(json.dumps(ids), flush=True)
    for request_id in iter(sys.stdin.readline, ""):  # each line: a request to wait on
        waited = line.call("spend.wait", {"request_id": request_id.strip(), "timeout_s": 50})
        print(waited["state"], flush=True)
"""


class AgentProcess:
    def __init__(self, path: Path, agent: str, count: int):
        self.process = subprocess.Popen(
            [sys.executable, "-c", AGENT, str(path), agent, str(count)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])},
        )
        assert self.process.stdout is not None
        self.ids: list[str] = json.loads(self.process.stdout.readline())

    def wait_for(self, request_id: str) -> str:
        """The final state the agent is told when it waits on the request (from now on)."""
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(request_id + "\n")
        self.process.stdin.flush()
        return self.process.stdout.readline().strip()

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        self.process.wait(30)


class Follower:
    """An operator connection following one broker's queue (`approvals.follow`)."""

    def __init__(self, path: Path):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(DEADLINE_S)
        self.sock.connect(str(path))
        self.lines = self.sock.makefile("r")
        self.sock.sendall(b'{"jsonrpc":"2.0","id":1,"method":"approvals.follow","params":{}}\n')
        while "id" not in json.loads(self.lines.readline()):  # until it answers: following
            pass

    def heard(self, request_id: str, state: str) -> None:
        """Until a change of the request to `state` is pushed."""
        while True:
            params = json.loads(self.lines.readline()).get("params", {})
            if params.get("request_id") == request_id and params.get("state") == state:
                return

    def close(self) -> None:
        self.lines.close()
        self.sock.close()


def test_one_queue_and_a_killed_brokers_calls_left_unknown_while_the_other_carries_on(
    fleet: Fleet,
) -> None:
    first, second = fleet.start_brokers()
    # Agents the policy does not name: every request of theirs waits for an operator.
    agent_a = AgentProcess(first.socket, "asks-a", 4)
    agent_b = AgentProcess(second.socket, "asks-b", 2)
    on_first, on_second = agent_a.ids, agent_b.ids
    try:
        _one_queue(fleet, first, second, agent_a)
        _killed_mid_call(fleet, first, second, on_first, on_second)
    finally:
        agent_a.close()
        agent_b.close()


def _one_queue(
    fleet: Fleet, first: ServedBroker, second: ServedBroker, agent: AgentProcess
) -> None:
    """Each broker's operator socket lists the other's requests; one submitted on the first
    and approved on the second is executed once, its agent (on the first) is told, and the
    first broker's followers hear it."""
    for request_id in agent.ids:
        wait_until("intake", lambda r=request_id: fleet.state(r) == "pending")
    listed = {r["id"] for r in second.operator("approvals.list", {})}
    assert set(agent.ids) <= listed, listed
    follower = Follower(first.operator_socket)
    try:
        second.operator("approvals.approve", {"request_id": agent.ids[0]})
        follower.heard(agent.ids[0], "succeeded")
    finally:
        follower.close()
    assert agent.wait_for(agent.ids[0]) == "succeeded"
    assert fleet.charges_by_request()[agent.ids[0]] == 1


def _killed_mid_call(
    fleet: Fleet,
    first: ServedBroker,
    second: ServedBroker,
    on_first: list[str],
    on_second: list[str],
) -> None:
    """The first broker killed with two calls out: the second reports them unknown, never
    sends them again, and carries on."""
    for request_id in on_second:
        wait_until("intake", lambda r=request_id: fleet.state(r) == "pending")
    held = fleet.sandbox.set_fault("latency", routes=["proxy"], delay_ms=30_000)
    for request_id in on_first[1:3]:
        first.operator("approvals.approve", {"request_id": request_id})
    wait_until(
        "both calls to reach the service",
        lambda: next(f["fired"] for f in fleet.sandbox.faults() if f["id"] == held) >= 2,
    )
    assert {fleet.state(r) for r in on_first[1:3]} == {"executing"}
    first.kill()

    wait_until(
        "the killed broker's calls to be unknown",
        lambda: {fleet.state(r) for r in on_first[1:3]} == {"unknown"},
    )
    fleet.sandbox.clear_faults()
    for request_id in on_first[1:3]:
        [(count,)] = fleet.rows(
            "SELECT count(*) FROM executions WHERE request_id = %s", [request_id]
        )
        assert count == 1
        [(reason,)] = fleet.rows("SELECT reason FROM requests WHERE id = %s", [request_id])
        assert "never retry blindly" in reason

    # The killed broker's last pending request and the second's own are decided there.
    for request_id in [on_first[3], *on_second]:
        second.operator("approvals.approve", {"request_id": request_id})
    wait_until(
        "the second broker's executions",
        lambda: {fleet.state(r) for r in [on_first[3], *on_second]} == {"succeeded"},
    )
    charged = fleet.charges_by_request()
    assert all(charged[r] == 1 for r in [on_first[0], on_first[3], *on_second])
    assert max(charged.values()) == 1
