"""A name is a name, end to end (sandbox, the agents' socket, the SQLite ledger, a real SKILLS.md):
an agent named in any spelling of a registered name, or in a name that looks like one, gets
nothing without its token; an unverified agent matches no rule written for named agents; a
revoked agent's name stays reserved until it is released; a deny list still reads the name an
unverified agent gave."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import pytest
from helpers import SEARCH, agent_token, eventually

from svc_console.agent import AgentError, AsyncAgent
from svc_console.config.agent_registry import AgentRegistry
from svc_console.core.states import FINAL, State
from svc_console.runtime import Runtime

TRUSTED = """
```policy
auto_approve:
  - name: trusted searches
    when:
      agents: ["trusted-*"]
      endpoints: [ep_websearch_basic]
deny:
  agents: ["evil-*"]
```
"""
# TRUSTED-BOT in full-width letters; with a zero-width space; with a zero for an o.
FULL_WIDTH = "".join(chr(0xFEE0 + ord(c)) if c.isalpha() else c for c in "TRUSTED-BOT")


@pytest.fixture
def start(paths, make_runtime, keep_started) -> Callable[..., Awaitable[Runtime]]:
    """The sandbox's default set-up (open enrolment), with TRUSTED as its SKILLS.md."""

    async def run() -> Runtime:
        paths.home.mkdir(parents=True, exist_ok=True)
        (paths.home / "SKILLS.md").write_text(TRUSTED)
        return await keep_started(make_runtime())

    return run


async def judged(runtime: Runtime, agent: str, token: str | None = None) -> object:
    async with AsyncAgent(agent, runtime.paths.socket, token=token) as client:
        ticket = await client.submit(**SEARCH, purpose="research")
    return await eventually(
        lambda: (
            (r := runtime.broker.get(ticket["request_id"])).state in (*FINAL, State.pending) and r
        )
    )


def recorded(runtime: Runtime) -> int:
    return runtime.ledger.db.execute("SELECT count(*) FROM requests").fetchone()[0]


@pytest.mark.parametrize(
    ("spelling", "reason", "message"),
    [
        ("TRUSTED-BOT", "not_authorised", "agent trusted-bot is registered: say console.hello"),
        ("Trusted-Bot", "not_authorised", "agent trusted-bot is registered: say console.hello"),
        (FULL_WIDTH, "not_authorised", "agent trusted-bot is registered: say console.hello"),
        ("trusted-b0t", "not_authorised", "agent name trusted-b0t looks like registered agent"),
        ("trusted-bot\u200b", "invalid_params", "must be 1-64 letters"),
    ],
)
async def test_no_spelling_of_a_registered_name_gets_anything_without_the_token(
    start, paths, spelling, reason, message
):
    agent_token(paths, "trusted-bot")
    runtime = await start()
    with pytest.raises(AgentError) as refused:
        await judged(runtime, spelling)
    assert refused.value.reason == reason and message in refused.value.message
    assert recorded(runtime) == 0


@pytest.mark.parametrize("spelling", ["TRUSTED-BOT", FULL_WIDTH])
async def test_the_agent_with_its_token_is_itself_in_any_spelling(start, paths, spelling):
    token = agent_token(paths, "trusted-bot")
    runtime = await start()
    mine = await judged(runtime, spelling, token)
    assert mine.agent == "trusted-bot" and mine.agent_verified
    assert mine.verdict.outcome == "auto_approve"


async def test_an_unverified_agent_matches_no_rule_written_for_named_agents(start, paths):
    agent_token(paths, "trusted-bot")
    runtime = await start()
    invented = await judged(runtime, "trusted-helper")  # unregistered: a glob would match it
    assert not invented.agent_verified and invented.agent == "trusted-helper"
    assert invented.state == State.pending and invented.verdict.outcome == "ask"
    registered = await judged(runtime, "trusted-bot", agent_token(paths, "trusted-bot"))
    assert registered.verdict.outcome == "auto_approve"


async def test_a_deny_list_still_reads_the_name_an_unverified_agent_gave(start):
    runtime = await start()
    denied = await judged(runtime, "Evil-Bot")
    assert denied.agent == "evil-bot" and denied.state == State.denied
    assert "evil-bot matches 'evil-*'" in denied.reason


async def test_a_revoked_name_is_reserved_until_released(start, paths):
    agent_token(paths, "trusted-bot")
    registry = AgentRegistry(paths.agent_registry)
    registry.revoke("trusted-bot")
    runtime = await start()
    for spelling, message in [
        ("trusted-bot", "its name stays reserved until the operator releases it"),
        ("TRUSTED-B0T", "agent name trusted-b0t looks like registered agent trusted-bot"),
    ]:
        with pytest.raises(AgentError) as refused:
            await judged(runtime, spelling)
        assert refused.value.reason == "not_authorised" and message in refused.value.message
    assert recorded(runtime) == 0
    registry.release("trusted-bot")
    freed = await judged(runtime, "trusted-bot")
    assert not freed.agent_verified and freed.verdict.outcome == "ask"


async def test_a_name_registered_after_hello_ends_the_unverified_connection(start, paths):
    runtime = await start()
    async with AsyncAgent("helper-b0t", runtime.paths.socket) as client:
        await client.submit(**SEARCH, purpose="first")
        AgentRegistry(paths.agent_registry).add("helper-bot")  # one it looks like
        with pytest.raises(AgentError) as ended:
            await client.submit(**SEARCH, purpose="second")
    assert ended.value.reason == "not_authorised"
    assert "registration changed" in ended.value.message
