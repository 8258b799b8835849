"""Repeats compare what the service will see, end to end (sandbox, sockets, SQLite ledger, a real
SKILLS.md): the repeated-call brake and a reused idempotency key read the inputs after the
endpoint's schema has filled its defaults, with text NFKC-normalised, trimmed, rid of invisible
characters and, where the schema says the field ignores case (the sandbox's web search query),
case-folded. A trailing space, another case, a zero-width character, full-width letters or a
default spelt out make no call new; another case where case counts (a page's address) does."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import pytest
from helpers import agent_token, eventually

from svc_console.agent import AgentError, AsyncAgent
from svc_console.core.states import FINAL, State
from svc_console.runtime import Runtime

SEARCH = {"endpoint_id": "ep_websearch_basic", "purpose": "research"}
REPEATS = """
```policy
auto_approve:
  - name: small calls
    when:
      max_usdc: 0.5
repeats:
  max_same: 3
  window: 10m
  then: ask
```
"""
FIRST = {"query": "solar prices"}


@pytest.fixture
def start(paths, make_runtime, keep_started) -> Callable[..., Awaitable[Runtime]]:
    async def run(policy: str | None = REPEATS) -> Runtime:
        if policy is not None:
            paths.home.mkdir(parents=True, exist_ok=True)
            (paths.home / "SKILLS.md").write_text(policy)
        return await keep_started(make_runtime())

    return run


async def settled(runtime: Runtime, inputs: dict, **params) -> object:
    token = agent_token(runtime.paths, "loop-bot")
    async with AsyncAgent("loop-bot", runtime.paths.socket, token=token) as client:
        ticket = await client.submit(**{**SEARCH, "inputs": inputs, **params})
    return await eventually(
        lambda: (
            (r := runtime.broker.get(ticket["request_id"])).state in (*FINAL, State.pending) and r
        )
    )


def full_width(text: str) -> str:
    return "".join(chr(0xFEE0 + ord(c)) if c.isalpha() else c for c in text)


@pytest.mark.parametrize(
    "again",
    [
        {"query": "solar prices "},
        {"query": "Solar PRICES"},
        {"query": "solar\u200b prices"},
        {"query": full_width("solar prices")},
        {"query": "solar prices", "max_results": 10},  # the schema's default, spelt out
    ],
    ids=["trailing space", "other case", "zero-width", "full-width", "default spelt out"],
)
async def test_a_call_spelt_otherwise_is_still_the_fourth_identical_one(start, again):
    runtime = await start()
    for _ in range(3):
        assert (await settled(runtime, FIRST)).state == State.succeeded
    fourth = await settled(runtime, again)
    assert fourth.state == State.pending, fourth.verdict
    assert "4th identical call" in fourth.verdict.summary
    assert fourth.inputs == again  # what is sent is what the agent wrote


async def test_another_case_where_case_counts_is_another_call(start):
    runtime = await start()
    page = {"endpoint_id": "ep_scrape_page", "purpose": "read"}
    for _ in range(3):
        await settled(runtime, {"url": "https://a.example/Report"}, **page)
    other = await settled(runtime, {"url": "https://a.example/report"}, **page)
    assert not any(c.rule == "repeats" for c in other.verdict.citations)


async def test_after_a_restart_the_counts_read_the_schema_recorded(start):
    runtime = await start()
    for _ in range(3):
        assert (await settled(runtime, FIRST)).state == State.succeeded
    await runtime.stop()
    runtime = await start(None)
    fourth = await settled(runtime, {"query": "Solar prices", "max_results": 10})
    assert fourth.state == State.pending and "4th identical call" in fourth.verdict.summary


@pytest.mark.parametrize(
    "again",
    [
        {"query": "solar prices "},
        {"query": "SOLAR prices"},
        {"query": "solar\u200b prices"},
        {"query": full_width("solar prices")},
        {"query": "solar prices", "max_results": 10},
    ],
    ids=["trailing space", "other case", "zero-width", "full-width", "default spelt out"],
)
async def test_a_reused_idempotency_key_with_the_same_call_spelt_otherwise_is_that_call(
    start, again
):
    runtime = await start(None)
    first = await settled(runtime, FIRST, idempotency_key="weekly-1")
    again_ticket = await settled(runtime, again, idempotency_key="weekly-1")
    assert again_ticket.id == first.id
    count = runtime.ledger.db.execute("SELECT count(*) FROM requests").fetchone()[0]
    assert count == 1


async def test_a_reused_idempotency_key_with_another_query_is_still_a_conflict(start):
    runtime = await start(None)
    await settled(runtime, FIRST, idempotency_key="weekly-2")
    token = agent_token(runtime.paths, "loop-bot")
    async with AsyncAgent("loop-bot", runtime.paths.socket, token=token) as client:
        with pytest.raises(AgentError) as conflict:
            await client.submit(
                **SEARCH, inputs={"query": "wind prices"}, idempotency_key="weekly-2"
            )
    assert conflict.value.reason == "idempotency_conflict"
    assert conflict.value.data["fields"] == ["inputs"]
