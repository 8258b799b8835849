"""The broker's group commit seen from outside: many agents submitting at once through the socket,
a policy approving them on its own, the sandbox paying over HTTP. Whatever is shared between
requests' transactions, a request is seen decided only once its decision is committed, and an
approved one starts executing (is told `executing`, just before the payer is called) only then."""

from __future__ import annotations

import asyncio
import sqlite3

from helpers import eventually

from svc_console.agent import AsyncAgent
from svc_console.broker import BrokerConfig
from svc_console.core.models import SpendRequest
from svc_console.core.states import State
from svc_console.runtime import Runtime

AUTO_APPROVE_SEARCHES = """# SKILLS.md

```policy
auto_approve:
  - name: small searches
    when:
      domain_types: [A7]
      max_usdc: 0.05
```
"""
AGENTS = 8
EACH = 5


async def test_concurrent_decisions_are_committed_before_they_are_seen_or_executed(paths, sandbox):
    paths.home.mkdir(parents=True, exist_ok=True)
    (paths.home / "SKILLS.md").write_text(AUTO_APPROVE_SEARCHES)
    runtime = Runtime(paths=paths, sandbox=sandbox, config=BrokerConfig())
    await runtime.start()
    other = sqlite3.connect(runtime.ledger.path)  # sees only what was committed
    seen: list[tuple[str, State, int]] = []

    def committed_decisions(request_id: str) -> int:
        query = "SELECT count(*) FROM decisions WHERE request_id = ?"
        return other.execute(query, [request_id]).fetchone()[0]

    def listener(request: SpendRequest) -> None:
        if request.state in (State.auto_approved, State.executing):
            seen.append((request.id, request.state, committed_decisions(request.id)))

    runtime.broker.subscribe(listener)
    try:

        async def agent(n: int) -> list[str]:
            async with AsyncAgent(f"bot-{n}", runtime.paths.socket) as client:
                tickets = await asyncio.gather(
                    *(
                        client.submit(
                            endpoint_id="ep_websearch_basic",
                            inputs={"query": f"q {n} {k}"},
                            purpose="research",
                        )
                        for k in range(EACH)
                    )
                )
            return [t["request_id"] for t in tickets]

        ids = [i for batch in await asyncio.gather(*map(agent, range(AGENTS))) for i in batch]
        await eventually(
            lambda: all(runtime.broker.get(i).state == State.succeeded for i in ids), 60
        )
        executing = {i for i, state, _ in seen if state == State.executing}
        assert executing == set(ids)
        # Every sighting, decided or executing, came with the decision already committed.
        assert all(decisions == 1 for _, _, decisions in seen)
    finally:
        other.close()
        await runtime.stop()
