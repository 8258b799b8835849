"""Agents are identities, not names: a registered agent speaks only for itself, invented names get
nothing in strict enrolment, revocation and rotation take effect at once, and decisions over the
operator socket need the operator passphrase once one is set."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from helpers import SEARCH, eventually, operator
from operator_support import past_the_wait

from svc_console.agent import AgentError, AsyncAgent
from svc_console.broker import BrokerConfig
from svc_console.broker.socket_folder import UnsafeFolder
from svc_console.config.agent_registry import AgentRegistry
from svc_console.config.agents import AgentSettings
from svc_console.config.operator_passphrase import OperatorPassphrase
from svc_console.core.states import State
from svc_console.runtime import Runtime

# The tests' agents run as the tests' own user: strict enrolment must be told to accept that.
STRICT = AgentSettings(enrolment="strict", allow_same_user=True)
OPEN = AgentSettings(enrolment="open")


@pytest.fixture
def start(paths, sandbox, keep_started) -> Callable[..., Awaitable[Runtime]]:
    async def run(
        settings: AgentSettings = STRICT, policy: str | None = None, clock: Any = None
    ) -> Runtime:
        if policy is not None:
            paths.home.mkdir(parents=True, exist_ok=True)
            (paths.home / "SKILLS.md").write_text(policy)
        config = BrokerConfig()
        options = {} if clock is None else {"clock": clock}
        return await keep_started(
            Runtime(
                paths=paths,
                sandbox=sandbox,
                config=config,
                agent_settings=settings,
                broker_options=options,
            )
        )

    return run


def register(paths, name: str, uid: int | None = None) -> str:
    return AgentRegistry(paths.agent_registry).add(name, uid)


def requests_in(runtime: Runtime) -> int:
    return runtime.ledger.db.execute("SELECT count(*) FROM requests").fetchone()[0]


async def refused(connect: Any) -> AgentError:
    with pytest.raises(AgentError) as caught:
        await connect()
    return caught.value


async def test_a_registered_agent_speaks_only_for_itself(start, paths):
    alpha_token, beta_token = register(paths, "alpha"), register(paths, "beta")
    runtime = await start()
    async with (
        AsyncAgent("alpha", runtime.paths.socket, token=alpha_token) as alpha,
        AsyncAgent("beta", runtime.paths.socket, token=beta_token) as beta,
    ):
        assert alpha.hello_info["agent"] == {"name": "alpha", "verified": True}
        ticket = await alpha.submit(**SEARCH, purpose="mine", idempotency_key="k1")
        request_id = ticket["request_id"]
        assert runtime.broker.get(request_id).agent_verified is True
        # Another agent sees nothing of it: get, wait and cancel all say it does not exist.
        for call in (beta.get, beta.cancel, lambda r: beta.wait(r, 0)):
            with pytest.raises(AgentError) as unknown:
                await call(request_id)
            assert unknown.value.reason == "unknown_request"
        # Nor can it submit in alpha's name, or reach alpha's request by its idempotency key.
        with pytest.raises(AgentError) as borrowed:
            await beta.call(
                "spend.submit",
                {"agent": "alpha", "kind": "market_call", **SEARCH, "purpose": "as alpha"},
            )
        assert borrowed.value.reason == "not_authorised"
        again = await beta.submit(**SEARCH, purpose="mine too", idempotency_key="k1")
        assert again["request_id"] != request_id
        assert (await alpha.get(request_id))["agent"] == "alpha"
    # alpha's name with beta's token, or with none, is refused; the token alone names alpha.
    wrong = await refused(AsyncAgent("alpha", runtime.paths.socket, token=beta_token).connect)
    bare = await refused(AsyncAgent("alpha", runtime.paths.socket, token="").connect)
    assert wrong.reason == bare.reason == "not_authorised"
    async with AsyncAgent(None, runtime.paths.socket, token=alpha_token) as by_token:
        assert by_token.name == "alpha"
        assert (await by_token.get(request_id))["id"] == request_id


FLOOD_POLICY = """
```policy
auto_approve:
  - name: flood
    when:
      agents: ["flood-*"]
      max_usdc: 0.05
    budgets:
      - per: agent
        window: day
        max_usdc: 0.02
deny:
  agents: ["intern-*"]
```
"""


async def test_fifty_invented_names_cannot_pass_a_per_agent_cap_in_strict_mode(start, paths):
    token = register(paths, "flood-0")
    runtime = await start(policy=FLOOD_POLICY)
    async with AsyncAgent("flood-0", runtime.paths.socket, token=token) as agent:
        ids = [
            (await agent.submit(**{**SEARCH, "inputs": {"query": f"q{n}"}}, purpose="flood"))[
                "request_id"
            ]
            for n in range(20)
        ]
    await eventually(
        lambda: all(runtime.broker.get(i).state not in ("received", "inspecting") for i in ids),
        timeout=30,
    )
    for n in range(1, 51):
        invented = await refused(AsyncAgent(f"flood-{n}", runtime.paths.socket).connect)
        assert invented.reason == "not_authorised"
        assert "not registered" in invented.message
    automatic = [i for i in ids if runtime.broker.get(i).decision is not None]
    assert len(automatic) == 2  # 0.02 USDC a day for the one agent there is
    assert requests_in(runtime) == 20


async def test_a_deny_rule_on_an_agent_cannot_be_dodged_by_another_name(start, paths):
    token = register(paths, "intern-1")
    runtime = await start(policy=FLOOD_POLICY)
    async with AsyncAgent("intern-1", runtime.paths.socket, token=token) as intern:
        ticket = await intern.submit(**SEARCH, purpose="just looking")
        with pytest.raises(AgentError) as renamed:
            await intern.call(
                "spend.submit",
                {"agent": "research-bot", "kind": "market_call", **SEARCH, "purpose": "p"},
            )
        assert renamed.value.reason == "not_authorised"
    dodge = await refused(AsyncAgent("research-bot", runtime.paths.socket).connect)
    assert dodge.reason == "not_authorised"
    await eventually(lambda: runtime.broker.get(ticket["request_id"]).state == State.denied)
    assert requests_in(runtime) == 1


async def test_open_enrolment_flags_unverified_names_and_a_policy_can_refuse_them(start, paths):
    token = register(paths, "registered")
    policy = "```policy\nrequire:\n  authenticated_agent: true\n```\n"
    runtime = await start(OPEN, policy=policy)
    assert "own user" in runtime.agent_warning
    async with AsyncAgent("made-up", runtime.paths.socket) as stranger:
        assert stranger.hello_info["agent"] == {"name": "made-up", "verified": False}
        unverified = await stranger.submit(**SEARCH, purpose="who am i")
    async with AsyncAgent("registered", runtime.paths.socket, token=token) as known:
        verified = await known.submit(**SEARCH, purpose="me")
    # Even in open enrolment, a registered name needs its token.
    borrowed = await refused(AsyncAgent("registered", runtime.paths.socket).connect)
    assert borrowed.reason == "not_authorised" and "SVC_AGENT_TOKEN" in borrowed.message
    await eventually(lambda: runtime.broker.get(unverified["request_id"]).state == State.denied)
    request = runtime.broker.get(unverified["request_id"])
    assert request.agent_verified is False and "did not prove its name" in request.reason
    await eventually(lambda: runtime.broker.get(verified["request_id"]).state == State.pending)


async def test_strict_enrolment_refuses_agents_of_the_operators_own_user(start, paths):
    register(paths, "alpha")
    runtime = await start(AgentSettings(enrolment="strict"))
    assert runtime.agent_warning is None
    same_user = await refused(AsyncAgent("alpha", runtime.paths.socket).connect)
    assert same_user.reason == "not_authorised"
    assert "own user" in same_user.message and "allow_same_user" in same_user.message
    assert requests_in(runtime) == 0


async def test_revoking_an_agent_cancels_its_requests_and_ends_its_sessions(start, paths):
    token = register(paths, "alpha")
    runtime = await start()
    registry = AgentRegistry(paths.agent_registry)
    async with AsyncAgent("alpha", runtime.paths.socket, token=token) as alpha:
        ticket = await alpha.submit(**SEARCH, purpose="soon revoked")
        request_id = ticket["request_id"]
        await eventually(lambda: runtime.broker.get(request_id).state == State.pending)
        registry.revoke("alpha")
        async with operator(runtime) as line:
            assert (await line.call("agents.sync", {}))["cancelled"] == 1
        request = runtime.broker.get(request_id)
        assert request.state == State.cancelled and request.reason == "agent alpha was revoked"
        with pytest.raises(AgentError) as ended:
            await alpha.get(request_id)
        assert ended.value.reason == "not_authorised"
    assert (await refused(AsyncAgent("alpha", runtime.paths.socket, token=token).connect)).reason
    # Registered again: a new token; the old one stays dead.
    new_token = registry.add("alpha")
    async with AsyncAgent("alpha", runtime.paths.socket, token=new_token) as again:
        assert again.hello_info["agent"]["verified"] is True


async def test_a_rotated_token_stops_at_once_and_a_revocation_counts_at_the_next_start(
    start, paths
):
    old = register(paths, "alpha")
    runtime = await start()
    registry = AgentRegistry(paths.agent_registry)
    async with AsyncAgent("alpha", runtime.paths.socket, token=old) as alpha:
        ticket = await alpha.submit(**SEARCH, purpose="before rotation")
        new = registry.rotate("alpha")
        with pytest.raises(AgentError) as stale:
            await alpha.get(ticket["request_id"])
        assert stale.value.reason == "not_authorised"
    assert (await refused(AsyncAgent("alpha", runtime.paths.socket, token=old).connect)).reason
    async with AsyncAgent("alpha", runtime.paths.socket, token=new) as alpha:
        await eventually(lambda: runtime.broker.get(ticket["request_id"]).state == State.pending)
        assert (await alpha.get(ticket["request_id"]))["state"] == "pending"
    await runtime.stop()
    registry.revoke("alpha")  # while the console is stopped
    runtime = await start()
    assert runtime.broker.get(ticket["request_id"]).state == State.cancelled


async def test_with_a_passphrase_a_decision_without_it_is_refused_and_recorded(start, paths, clock):
    OperatorPassphrase(paths.operator_passphrase).set("correct horse battery")
    runtime = await start(OPEN, clock=clock)
    # Deleting the file after the start changes nothing: the console pinned it.
    paths.operator_passphrase.unlink()
    async with AsyncAgent("bot", runtime.paths.socket) as agent:
        ticket = await agent.submit(**SEARCH, purpose="guarded")
    request_id = ticket["request_id"]
    await eventually(lambda: runtime.broker.get(request_id).state == State.pending)
    async with operator(runtime) as line:
        assert line.hello_info["passphrase_required"] is True
        for params in ({}, {"passphrase": "wrong guess"}):
            with pytest.raises(AgentError) as refusal:
                await line.call("approvals.approve", {"request_id": request_id, **params})
            assert refusal.value.reason == "passphrase_required"
        with pytest.raises(AgentError):
            await line.call("approvals.deny", {"request_id": request_id, "reason": "x"})
        assert runtime.broker.get(request_id).state == State.pending
        past_the_wait(runtime, clock)  # a wrong passphrase earns one (test_guessing.py)
        approved = await line.call(
            "approvals.approve", {"request_id": request_id, "passphrase": "correct horse battery"}
        )
        history = await line.call("approvals.list", {"view": "history"})
    assert history[0]["decision"]["evidence"] == approved["decision"]["evidence"]
    assert approved["decision"]["evidence"]["channel"] == "cli"
    assert approved["decision"]["evidence"]["pid"] == os.getpid()
    # The first refusal whole, the rest of its burst counted (refusal_log.RefusalAudit).
    runtime.broker.decisions.refusals.flush(everything=True)
    refusals = [
        json.loads(e["data"])
        for e in runtime.ledger.events(request_id)
        if e["type"] == "decision_refused"
    ]
    assert [r["reason"] for r in refusals] == ["no operator passphrase given"]
    assert refusals[0]["evidence"]["uid"] == os.getuid()
    (summary,) = summaries(runtime)
    assert summary["count"] == 2 and summary["requests"] == [request_id]
    assert summary["reasons"] == {"wrong operator passphrase": 1, "no operator passphrase given": 1}
    assert summary["evidence"]["uid"] == os.getuid()


def summaries(runtime: Runtime) -> list[dict[str, Any]]:
    rows = runtime.ledger.db.execute(
        "SELECT data FROM events WHERE type = 'decisions_refused' ORDER BY seq"
    ).fetchall()
    return [json.loads(data) for (data,) in rows]


async def test_an_unsafe_socket_folder_is_refused_and_left_as_it_was(paths, sandbox, tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    unsafe = Runtime(
        paths=paths.__class__(home=paths.home, socket=shared / "agents.sock", explicit_home=True),
        sandbox=sandbox,
        agent_settings=STRICT,
    )
    with pytest.raises(UnsafeFolder, match="writable by others"):
        await unsafe.start()
    assert stat.S_IMODE(shared.stat().st_mode) == 0o777
    assert not (shared / "agents.sock").exists()
    # Opened to other users, the agents' socket cannot sit in the owner-only home folder.
    inside = Runtime(
        paths=paths, sandbox=sandbox, agent_settings=AgentSettings(uids=frozenset({65534}))
    )
    with pytest.raises(UnsafeFolder, match="SVC_CONSOLE_HOME"):
        await inside.start()
