"""Two brokers in this process on one PostgreSQL ledger (ledger/shared.py), each with a console
home and sockets of its own, on one sandbox: a request judged on budget totals that another
broker's reservation made stale is judged again when its decision is committed, so the cap holds."""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path

import pytest
from helpers import eventually

from svc_console.agent import AsyncAgent
from svc_console.broker import BrokerConfig
from svc_console.config.audit_key import key_file
from svc_console.config.paths import Paths
from svc_console.core.states import State
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


async def search(runtime: Runtime, agent: str, query: str) -> State:
    """As an agent on this broker's socket: submit a search and wait for its end."""
    async with AsyncAgent(agent, runtime.paths.socket) as client:
        ticket = await client.submit(**SEARCH, inputs={"query": query})
        final = await client.wait_for_outcome(ticket["request_id"], timeout_s=30)
        return State(final["state"])


async def test_a_cap_checked_on_stale_totals_is_checked_again_when_committed(
    homes, sandbox, postgres, keep_started
):
    url = postgres.new_database()
    # No upkeep tick after the first: the second broker learns of the first's spend only
    # when a transaction of its own begins.
    config = BrokerConfig(expiry_tick_s=3600)
    first = await keep_started(
        Runtime(paths=homes[0], sandbox=sandbox, config=config, ledger_url=url)
    )
    shutil.copy2(key_file(first.ledger_path), key_file(homes[1].ledger(sandbox=True)))
    second = await keep_started(
        Runtime(paths=homes[1], sandbox=sandbox, config=config, ledger_url=url)
    )
    for n in range(4):
        assert await search(first, "bot-a", f"q{n}") == State.succeeded

    # The second broker's next request is held in its dry run, after its last transaction
    # began (it knows of four cents), while the first spends the fifth.
    wallet = second.broker.market.wallet
    real_dry_run, entered, release = wallet.dry_run, asyncio.Event(), asyncio.Event()

    async def held_dry_run(*args, **kwargs):
        entered.set()
        await release.wait()
        return await real_dry_run(*args, **kwargs)

    wallet.dry_run = held_dry_run
    held = asyncio.create_task(search(second, "bot-b", "late"))
    await entered.wait()
    assert await search(first, "bot-a", "fifth") == State.succeeded
    release.set()

    # Judged on four cents, it would have been approved; committed, it is judged on five.
    assert await held == State.denied
    late = await eventually(lambda: second.ledger.in_states({State.denied}, limit=5))
    assert "fleet day" in (late[0].reason or "")
    charged = sandbox.state.executions_count()
    assert charged == 5
    spent = second.ledger.db.execute(
        "SELECT sum(settled_usdc) FROM budget_reservations WHERE state = 'settled'"
    ).fetchone()[0]
    assert Decimal(spent) / 10**6 == Decimal("0.05")
