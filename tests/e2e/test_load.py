"""Load: 200 agents on the approval socket at once, submitting for a while, with a policy that
decides most requests itself; the operator decides the rest through the broker's API.

The console's process is this one: the runtime (broker, socket, ledger) under the TUI, as an
operator runs it, with the approvals screen in front. The agents are a process of their own
(`tests/load_agents.py`: one connection each; submit, wait by id until final, next) and the
sandbox another (`tests/sandbox_process.py`), so this process's memory and CPU are the console's.

No request lost or answered twice: every ticket an agent was given reaches a final state, the one
the ledger holds, each request is in the ledger exactly once (by its idempotency key), and every
call on the socket got exactly one answer. The approvals screen answers key presses while loaded.
The console's resident memory is sampled when the load starts, once it is warm and at the end,
and printed; only its growth after warming up is asserted, below a bound so generous that only a
leak would pass it (what the allocator keeps from moment to moment is no promise of the console's).

`make test` runs five seconds; `make load` (LOAD_SECONDS=60) the minute.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import sys
import time
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from sandbox_process import SandboxProcess
from textual.pilot import Pilot
from tui_support import started

from svc_console.broker import BrokerConfig
from svc_console.broker.params import ApproveParams, DenyParams
from svc_console.config.agent_registry import AgentRegistry
from svc_console.config.paths import Paths
from svc_console.core.private_files import write_private
from svc_console.core.states import State
from svc_console.runtime import Runtime
from svc_console.tui.app import ConsoleApp
from svc_console.tui.approvals.screen import ApprovalsScreen

AGENTS = 200
SECONDS = float(os.environ.get("LOAD_SECONDS", 5))
# Once warm, the console grows by what the ledger's page cache fills (at most 32 MB) and a few MB
# more: 150 MB after one minute of this load, 157 MB after three.
LEAK_MB = 64
PRESSES = 3  # pairs of key presses while loaded
DRAIN_S = 300.0  # the most the last requests may take once the submitting stops
POLICY = """# SKILLS.md: load

Every tenth load agent is denied outright; the agents up to `load-189` have their searches
approved without asking; the operator decides the rest.

```policy
deny:
  agents: ["load-*0"]
auto_approve:
  - name: load searches
    when:
      agents: ["load-0*", "load-1[0-8]*"]
      max_usdc: 0.05
```
"""


def resident_mb() -> float:
    """This process's resident memory now (VmRSS), in MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS in /proc/self/status")


@pytest.fixture
def sandbox(home: Path) -> Iterator[SandboxProcess]:
    process = SandboxProcess(home / "sandbox-process").start()
    process.set_balance(1_000_000)  # a minute of auto-approved searches never runs it dry
    yield process
    process.stop()


@pytest.fixture
async def runtime(paths: Paths, sandbox: SandboxProcess) -> AsyncIterator[Runtime]:
    async with Runtime(paths=paths, sandbox=sandbox.stand_in, config=BrokerConfig()) as started:
        yield started


@pytest.fixture
def console(paths: Paths, sandbox: SandboxProcess) -> ConsoleApp:
    policy = paths.home / "load-policy.md"
    policy.write_text(POLICY)
    runtime = Runtime(
        paths=paths, sandbox=sandbox.stand_in, config=BrokerConfig(), policy_files=[policy]
    )
    return ConsoleApp(runtime, cursor_blink=False)


async def operate(runtime: Runtime, decided: Counter[str]) -> None:
    """The operator: every request that waits is approved, or denied, in turn."""
    broker = runtime.broker
    assert broker is not None
    while True:
        for request in broker.pending(limit=500):
            if decided.total() % 2 == 0:
                await broker.approve(ApproveParams(request_id=request.id))
                decided["approved"] += 1
            else:
                await broker.deny(DenyParams(request_id=request.id, reason="load: not now"))
                decided["denied"] += 1
        await asyncio.sleep(0.05)


async def react(pilot: Pilot[Any], screen: ApprovalsScreen, key: str, tab: str) -> float:
    """Presses `key`, which shows `tab`; returns how long the app took to act on it (Pilot's own
    wait for the app to fall idle, which never comes under load, is not counted)."""
    loop = asyncio.get_running_loop()
    pressed = loop.time()

    async def acted() -> float:
        while screen.active != tab:
            await asyncio.sleep(0.005)
        return loop.time() - pressed

    watching = asyncio.create_task(acted())
    await pilot.press(key)
    return await asyncio.wait_for(watching, DRAIN_S)  # the deadline only stops a hang


async def start_agents(paths: Paths) -> asyncio.subprocess.Process:
    """The load agents, each registered (the policy's rules name agents that prove their names)."""
    registry = AgentRegistry(paths.agent_registry)
    names = [f"load-{n:03d}" for n in range(AGENTS)]
    tokens = paths.home / "load-tokens.json"
    write_private(tokens, json.dumps({name: registry.add(name) for name in names}))
    agents = await asyncio.create_subprocess_exec(
        sys.executable,
        str(Path(__file__).parent.parent / "load_agents.py"),
        "--socket",
        str(paths.socket),
        "--agents",
        str(AGENTS),
        "--seconds",
        str(SECONDS),
        "--tokens",
        str(tokens),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        limit=1 << 26,
    )
    assert agents.stdout is not None
    ready = await asyncio.wait_for(agents.stdout.readline(), 120)
    assert ready.strip() == b"ready", ready
    return agents


async def test_agents_connecting_at_the_same_moment_are_all_answered(runtime: Runtime):
    """More agents than asyncio's default backlog (100) connect in one instant, before the broker
    accepts any: each connection is accepted and answered, none is left for dead."""

    async def hello(n: int) -> dict[str, Any]:
        reader, writer = await asyncio.open_unix_connection(str(runtime.paths.socket))
        message = {"jsonrpc": "2.0", "id": n, "method": "console.hello", "params": {}}
        writer.write(json.dumps(message).encode() + b"\n")
        await writer.drain()
        reply = json.loads(await reader.readline())
        writer.close()
        return reply

    replies = await asyncio.gather(*(hello(n) for n in range(AGENTS + 100)))
    assert all(reply["result"]["server"] == "svc-console" for reply in replies)


async def test_two_hundred_agents_lose_nothing_and_the_screen_answers(console: ConsoleApp):
    app = console
    async with app.run_test(size=(120, 40)) as pilot:
        await started(pilot)
        runtime = app.runtime
        screen = app.screen
        assert isinstance(screen, ApprovalsScreen)
        decided: Counter[str] = Counter()
        operator = asyncio.create_task(operate(runtime, decided))
        agents = await start_agents(runtime.paths)
        assert agents.stdin is not None and agents.stdout is not None
        memory = {"start": resident_mb()}
        began = time.monotonic()
        agents.stdin.write(b"go\n")
        await agents.stdin.drain()

        # Loaded: keys pressed now are answered (and how long each took to act is printed).
        reactions = []
        for _ in range(PRESSES):
            await asyncio.sleep(SECONDS / (PRESSES + 1))
            reactions.append(await react(pilot, screen, "h", "history"))
            reactions.append(await react(pilot, screen, "p", "pending"))
            if "warm" not in memory:
                memory["warm"] = resident_mb()

        line = await asyncio.wait_for(agents.stdout.readline(), SECONDS + DRAIN_S)
        memory["end"] = resident_mb()
        await agents.wait()
        operator.cancel()
        report: dict[str, Any] = json.loads(line)
        elapsed = time.monotonic() - began

        tickets: dict[str, str] = report["tickets"]
        assert report["error_count"] == 0, report["errors"]
        assert report["answered_twice"] == 0 and report["unanswered"] == 0
        assert len(tickets) >= AGENTS, "every agent got at least one request through"
        db = runtime.ledger.db
        held = dict(db.execute("SELECT id, state FROM requests"))
        # Each ticket is in the ledger, in the final state its agent saw, and nothing else is.
        assert held == tickets
        doubled = db.execute(
            "SELECT count(*) FROM (SELECT agent, idempotency_key FROM requests"
            " GROUP BY agent, idempotency_key HAVING count(*) > 1)"
        ).fetchone()[0]
        assert doubled == 0
        states = Counter(tickets.values())
        by_policy = states["denied"] - decided["denied"] + states["succeeded"] - decided["approved"]
        assert by_policy > len(tickets) / 2, "the policy decided most requests itself"
        assert set(states) <= {"succeeded", "denied"}, states
        assert runtime.ledger.count_in_states([State.pending]) == 0
        assert memory["end"] - memory["warm"] < LEAK_MB, memory

        print(
            f"\nload: {AGENTS} agents, {SECONDS:.0f} s of submitting, {len(tickets)} requests"
            f" ({len(tickets) / report['seconds']:.0f}/s to final), {elapsed:.1f} s in all;"
            f" states {dict(states)}; operator {dict(decided)};"
            f" a key acted on in {statistics.median(reactions) * 1000:.0f} ms (median of"
            f" {len(reactions)}, longest {max(reactions) * 1000:.0f} ms) under load;"
            f" console RSS MB start {memory['start']:.1f}, warm {memory['warm']:.1f},"
            f" end {memory['end']:.1f}"
        )
