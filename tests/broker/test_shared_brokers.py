"""Two brokers in this process on one PostgreSQL ledger (ledger/shared.py), each with a console
home and sockets of its own, on one sandbox: a request judged on budget totals that another
broker's reservation made stale is judged again when its decision is committed, so the cap holds;
a grant made on one broker approves on the other, and once revoked there approves nothing more,
even before the other has heard of it; a grant lasting until its broker stops outlives another
broker's stop; a pause one broker's circuit breaker records holds on the other until an operator
resumes the agent there.

The second broker runs on an event loop of its own thread, as a broker of its own process would:
on one loop, one broker's write would wait for the writers' lock that the other's open transaction
holds until that same loop commits it."""

from __future__ import annotations

import asyncio
import shutil
import tempfile
import threading
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from helpers import eventually

from svc_console.agent import FINAL_STATES, AsyncAgent
from svc_console.broker import BrokerConfig
from svc_console.broker.deciders import Decider
from svc_console.broker.params import ApproveParams
from svc_console.config.audit_key import key_file
from svc_console.config.paths import Paths
from svc_console.core.states import State
from svc_console.ledger import pauses
from svc_console.runtime import Runtime

CAPPED = """# SKILLS.md

Searches go through on their own, five cents a day for the whole fleet.

```policy
auto_approve:
  - name: searches
    when:
      max_usdc: 0.05
budgets:
  - name: fleet day
    window: day
    max_usdc: 0.05
```
"""
SEARCH = {"endpoint_id": "ep_websearch_basic", "purpose": "research"}  # 0.01 USDC, fixed


@pytest.fixture
def homes() -> Iterator[list[Paths]]:
    made = []
    for _ in range(2):
        # Short paths under /tmp: a Unix socket's path may hold at most 107 bytes.
        folder = Path(tempfile.mkdtemp(prefix="svc-"))
        (folder / "SKILLS.md").write_text(CAPPED)
        made.append(Paths(home=folder, socket=folder / "svc.sock", explicit_home=True))
    yield made
    for paths in made:
        shutil.rmtree(paths.home, ignore_errors=True)


class Apart:
    """An event loop in a thread of its own, for the second broker."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    async def run(self, coroutine: Coroutine[Any, Any, Any]) -> Any:
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coroutine, self.loop))

    async def do(self, function: Callable[..., Any], *args: Any) -> Any:
        async def call() -> Any:
            return function(*args)

        return await self.run(call())

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(30)
        self.loop.close()


@pytest.fixture
async def apart() -> AsyncIterator[Apart]:
    other = Apart()
    yield other
    other.close()


async def two_brokers(
    homes, sandbox, url: str, keep_started, apart: Apart, **config
) -> tuple[Runtime, Runtime]:
    first = await keep_started(
        Runtime(paths=homes[0], sandbox=sandbox, config=BrokerConfig(**config), ledger_url=url)
    )
    shutil.copy2(key_file(first.ledger_path), key_file(homes[1].ledger(sandbox=True)))
    second = Runtime(paths=homes[1], sandbox=sandbox, config=BrokerConfig(**config), ledger_url=url)
    await apart.run(second.start())
    return first, second


@pytest.fixture
def stop_second(apart: Apart) -> Iterator[list[Runtime]]:
    """Runtimes started on `apart`'s loop, stopped there after the test."""
    started: list[Runtime] = []
    yield started
    for runtime in started:
        if runtime.broker is not None:
            asyncio.run_coroutine_threadsafe(runtime.stop(), apart.loop).result(60)


async def pending(runtime: Runtime, agent: str, query: str) -> str:
    """Submit a search the operator must decide; its id once it waits for them."""
    async with AsyncAgent(agent, runtime.paths.socket) as client:
        ticket = await client.submit(**SEARCH, inputs={"query": query})
        state = ticket["state"]
        while state not in ("pending", *FINAL_STATES):
            params = {"request_id": ticket["request_id"], "until": "change", "seen": state}
            state = (await client.call("spend.wait", {**params, "timeout_s": 30}))["state"]
    assert state == "pending", state
    return ticket["request_id"]


async def search(runtime: Runtime, agent: str, query: str) -> State:
    """As an agent on this broker's socket: submit a search and wait for its end."""
    async with AsyncAgent(agent, runtime.paths.socket) as client:
        ticket = await client.submit(**SEARCH, inputs={"query": query})
        final = await client.wait_for_outcome(ticket["request_id"], timeout_s=30)
        return State(final["state"])


async def test_a_cap_checked_on_stale_totals_is_checked_again_when_committed(
    homes, sandbox, postgres, keep_started, apart, stop_second
):
    # No upkeep tick after the first: the second broker learns of the first's spend only
    # when a transaction of its own begins.
    first, second = await two_brokers(
        homes, sandbox, postgres.new_database(), keep_started, apart, expiry_tick_s=3600
    )
    stop_second.append(second)
    for n in range(4):
        assert await search(first, "bot-a", f"q{n}") == State.succeeded

    # The second broker's next request is held in its dry run, after its last transaction
    # began (it knows of four cents), while the first spends the fifth.
    wallet = second.broker.market.wallet
    real_dry_run, entered, release = wallet.dry_run, threading.Event(), threading.Event()

    async def held_dry_run(*args, **kwargs):
        entered.set()
        await asyncio.to_thread(release.wait)
        return await real_dry_run(*args, **kwargs)

    wallet.dry_run = held_dry_run
    held = asyncio.create_task(search(second, "bot-b", "late"))
    await asyncio.to_thread(entered.wait)
    assert await search(first, "bot-a", "fifth") == State.succeeded
    release.set()

    # Judged on four cents, it would have been approved; committed, it is judged on five.
    assert await held == State.denied
    [late] = await apart.do(second.ledger.in_states, {State.denied})
    assert "fleet day" in (late.reason or "")
    assert sandbox.state.executions_count() == 5
    spent = first.ledger.db.execute(
        "SELECT sum(settled_usdc) FROM budget_reservations WHERE state = 'settled'"
    ).fetchone()[0]
    assert Decimal(spent) / 10**6 == Decimal("0.05")


def operator_decides(homes: list[Paths]) -> None:
    """No SKILLS.md: the operator decides everything, but what their grants decide."""
    for paths in homes:
        (paths.home / "SKILLS.md").unlink()


def grant_ids(runtime: Runtime) -> list[int]:
    return [grant.id for grant in runtime.policy.grants.active()]


async def test_a_grant_made_on_one_broker_approves_on_the_other_until_revoked(
    homes, sandbox, postgres, keep_started, apart, stop_second
):
    operator_decides(homes)
    first, second = await two_brokers(homes, sandbox, postgres.new_database(), keep_started, apart)
    stop_second.append(second)
    asked = await pending(first, "bot", "first")
    await first.broker.approve(
        ApproveParams(request_id=asked, grant_for="1h", grant_total=Decimal("1"))
    )
    [grant] = first.broker.grants.in_force()
    # The second broker takes it in at its next tick, and approves under it.
    await eventually(lambda: apart.loop.is_running() and grant_ids(second) == [grant.id])
    assert await search(second, "bot", "covered") == State.succeeded

    # Revoked on the first: the second, which has not heard yet, checks the ledger itself.
    await apart.do(second.broker._expiry.cancel)  # its ticks stop: it hears of nothing
    first.broker.grants.revoke(grant.id, Decider.this_process("alice"))
    assert await apart.do(grant_ids, second) == [grant.id]
    after = await pending(second, "bot", "after")
    verdict = (await apart.do(second.broker.get, after)).verdict
    assert f"grant {grant.id} has ended" in verdict.summary
    assert sandbox.state.executions_count() == 2


async def test_a_grant_until_its_broker_stops_outlives_another_brokers_stop(
    homes, sandbox, postgres, keep_started, apart, stop_second
):
    operator_decides(homes)
    first, second = await two_brokers(homes, sandbox, postgres.new_database(), keep_started, apart)
    asked = await pending(first, "bot", "first")
    await first.broker.approve(
        ApproveParams(request_id=asked, grant_for="session", grant_total=Decimal("1"))
    )
    [grant] = first.broker.grants.in_force()
    await apart.run(second.stop())  # another broker stops: the first's grant stands
    assert [g.id for g in first.broker.grants.in_force()] == [grant.id]
    ended_by_its_own_stop = first.ledger
    await first.stop()
    from svc_console.ledger import Ledger

    reader = Ledger(homes[0].ledger(sandbox=True), exclusive=False, url=ended_by_its_own_stop.url)
    try:
        from svc_console.ledger import grants

        assert grants.get(reader, grant.id).ended_reason == "the console stopped"
    finally:
        reader.close()


async def test_a_pause_recorded_by_one_broker_holds_on_the_other_until_resumed_there(
    homes, sandbox, postgres, keep_started, apart, stop_second
):
    first, second = await two_brokers(homes, sandbox, postgres.new_database(), keep_started, apart)
    stop_second.append(second)
    # As the first's circuit breaker records a pause (broker/policy_link.py), of the agents that
    # proved no name (which the brakes count as one): the unverified bot among them.
    unverified = "(unverified)"
    pauses.pause(first.ledger, unverified, "5 failures in a row", "policy: circuit_breaker", 1.0)
    first.policy.pause(unverified, "5 failures in a row")
    await eventually(lambda: unverified in second.policy.paused)
    held = await pending(second, "bot", "while paused")  # a search CAPPED would approve
    assert held

    await apart.do(second.broker.pauses.resume, unverified, Decider.this_process("alice"))
    await eventually(lambda: unverified not in first.policy.paused)
    assert await search(first, "bot", "resumed") == State.succeeded
