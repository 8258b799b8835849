"""The demo's simulated agents speak the public socket protocol and keep the queue moving, each a
registered agent with its token; its policy lets the looping agent's first identical calls
through and stops the fourth."""

from __future__ import annotations

import asyncio
import contextlib

from helpers import eventually, process_gone

from svc_console.broker.params import ApproveParams
from svc_console.config.agent_registry import AgentRegistry
from svc_console.core.states import State
from svc_console.demo import (
    LOOPING_AGENT,
    MCP_AGENT,
    PERSONAS,
    Traffic,
    enrol,
    run_mcp_agent,
    run_persona,
    write_policy,
)

NAMES = [*(p.name for p in PERSONAS), MCP_AGENT]


def tokens(paths) -> dict[str, str]:
    """The demo's agents, registered as `svc-console demo` registers them."""
    return enrol(paths.agent_registry, paths.sandbox, NAMES)


async def test_the_demos_agents_are_registered_once_and_prove_their_names(paths, runtime):
    first = tokens(paths)
    assert sorted(first) == sorted(NAMES)
    assert tokens(paths) == first  # the next demo reuses them: no agent registered twice
    registry = AgentRegistry(paths.agent_registry)
    assert sorted(a.name for a in registry.agents()) == sorted(NAMES)
    persona = PERSONAS[0]
    task = asyncio.create_task(
        run_persona(
            persona, runtime.paths.socket, interval_s=(0.01, 0.02), token=first[persona.name]
        )
    )
    try:
        mine = await eventually(lambda: runtime.broker.pending())
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    assert mine[0].agent == persona.name and mine[0].agent_verified


async def test_a_personas_waits_end_quietly_when_the_console_stops(make_runtime):
    """Each request a persona submitted is waited for in a task of its own: when the console
    stops, those waits end there, with no error left for nobody to read (asyncio would log each
    as a task exception never retrieved)."""
    runtime = make_runtime()
    await runtime.start()

    def waits() -> list[asyncio.Task]:
        return [t for t in asyncio.all_tasks() if t.get_coro().__qualname__.endswith(".follow")]

    task = asyncio.create_task(
        run_persona(PERSONAS[0], runtime.paths.socket, interval_s=(0.01, 0.02), max_open=2)
    )
    try:
        waiting = await eventually(lambda: len(waits()) == 2 and waits())
        await runtime.stop()
        done, _ = await asyncio.wait(waiting, timeout=30)
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    assert done == set(waiting)
    assert [t.exception() for t in waiting] == [None, None]


def test_a_name_registered_otherwise_sits_the_demo_out(paths):
    AgentRegistry(paths.agent_registry).add("research-bot")  # the operator's own agent
    kept = tokens(paths)
    assert "research-bot" not in kept and sorted(kept) == sorted(set(NAMES) - {"research-bot"})


class CountedTraffic(Traffic):
    """The demo's gate, counting how often a persona passes it: once each turn of its loop,
    before it looks at how many of its requests are open."""

    def __init__(self) -> None:
        super().__init__()
        self.passes = 0

    async def go(self) -> None:
        self.passes += 1
        await super().go()


async def test_each_persona_submits_valid_requests_and_caps_its_open_ones(paths, runtime):
    token = tokens(paths)
    gates = {p.name: CountedTraffic() for p in PERSONAS}
    socket = runtime.paths.socket
    tasks = [
        asyncio.create_task(
            run_persona(
                p,
                socket,
                interval_s=(0.01, 0.02),
                max_open=2,
                seed=7,
                traffic=gates[p.name],
                token=token[p.name],
            )
        )
        for p in PERSONAS
    ]
    try:
        await eventually(lambda: len(runtime.broker.pending()) == 2 * len(PERSONAS), timeout=10)
        # Each persona then takes a whole turn more with its two requests open: the cap holds.
        passed = {name: gate.passes for name, gate in gates.items()}
        await eventually(lambda: all(g.passes >= passed[n] + 2 for n, g in gates.items()))
        submitted = runtime.ledger.db.execute("SELECT agent, count(*) FROM requests GROUP BY agent")
        assert dict(submitted.fetchall()) == {p.name: 2 for p in PERSONAS}
        pending = runtime.broker.pending()
        assert sorted(r.agent for r in pending) == sorted(p.name for p in PERSONAS for _ in "ab")
        # Approving frees a slot: the persona submits again.
        first = pending[0]
        await runtime.broker.approve(ApproveParams(request_id=first.id))
        await eventually(
            lambda: (
                sum(r.agent == first.agent for r in runtime.broker.pending()) == 2
                and runtime.broker.get(first.id).state != State.pending
            )
        )
    finally:
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
    rejected = runtime.ledger.count_in_states([State.rejected])
    assert rejected == 0


async def test_the_mcp_agent_speaks_through_the_bridge_and_waits_for_the_operator(paths, runtime):
    """The demo's MCP agent launches `svc-console mcp` with its token, reads the market for free
    (recorded, not queued), then asks to pay; its request waits for the operator like any
    other."""
    token = tokens(paths)[MCP_AGENT]
    task = asyncio.create_task(
        run_mcp_agent(runtime.paths.socket, interval_s=(0.01, 0.02), token=token)
    )
    try:
        pending = await eventually(
            lambda: [r for r in runtime.broker.pending() if r.agent == MCP_AGENT], timeout=30
        )
        assert pending[0].endpoint_id == "ep_websearch_basic" and pending[0].agent_verified
        assert "via MCP" in pending[0].purpose
        reads = runtime.ledger.db.execute(
            "SELECT count(*) FROM events WHERE type = 'read' AND data LIKE ?", [f"%{MCP_AGENT}%"]
        ).fetchone()[0]
        assert reads == 1
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def test_the_looping_agents_fourth_identical_call_waits_flagged_as_a_repeat(
    paths, make_runtime
):
    """With the demo's policy, watch-bot's searches go through on their own until the fourth
    identical one in ten minutes: that one waits for the operator with the `repeated_call` flag,
    the three before it named."""
    runtime = make_runtime()
    runtime.policy_files = [write_policy(paths.home)]
    await runtime.start()
    looping = next(p for p in PERSONAS if p.name == LOOPING_AGENT)
    token = tokens(paths)[LOOPING_AGENT]
    task = asyncio.create_task(
        run_persona(looping, runtime.paths.socket, interval_s=(0.01, 0.02), seed=7, token=token)
    )
    try:
        waiting = await eventually(lambda: runtime.broker.pending(), timeout=20)
        earlier = await eventually(
            lambda: len(went_through := _succeeded(runtime)) == 3 and went_through, timeout=20
        )
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await runtime.stop()
    fourth = waiting[0]
    assert fourth.agent == LOOPING_AGENT and fourth.state == State.pending
    flags = {flag.code: flag.reason for flag in fourth.risk}
    assert flags["repeated_call"].startswith("4th identical call in ")
    cite = next(c for c in fourth.verdict.citations if c.rule == "repeats")
    assert cite.effect == "ask" and cite.reason == flags["repeated_call"]
    # The three judged before it are named, in the order they were judged: each waits for its
    # dry run, so that order need not be the order they were submitted in.
    named = cite.reason.split("; earlier: ", 1)[1].split(", ")
    assert sorted(named) == sorted(r.id for r in earlier)
    # The three before it were the same call, and went through on their own.
    assert all(r.inputs == fourth.inputs and r.verdict.outcome == "auto_approve" for r in earlier)


def _succeeded(runtime):
    """The looping agent's calls that ended well, oldest first."""
    done = runtime.ledger.in_states([State.succeeded], limit=10)
    return sorted((r for r in done if r.agent == LOOPING_AGENT), key=lambda r: r.created_at)


async def test_the_demo_reaches_its_paths_the_policy_a_confirmation_and_an_unfunded_wallet(
    paths, make_runtime
):
    """What a newcomer meets: research-bot's search approved by its rule; scraper-7's page with
    an e-mail address in its URL denied by `never_send`; the video clip above the confirmation
    threshold and above what the demo's wallet holds: approved with the typed amount, it waits
    for funds."""
    from decimal import Decimal

    from svc_console.agent import AsyncAgent
    from svc_console.demo import prepare

    runtime = make_runtime()
    runtime.policy_files = [write_policy(paths.home)]
    await runtime.start()
    try:
        await prepare(*runtime.service_address())

        token = tokens(paths)

        async def submitted(persona_name: str, inputs: dict) -> object:
            persona = next(p for p in PERSONAS if p.name == persona_name)
            mine = token[persona.name]
            async with AsyncAgent(persona.name, runtime.paths.socket, token=mine) as agent:
                ticket = await agent.submit(
                    endpoint_id=persona.endpoint_id,
                    inputs=inputs,
                    purpose=persona.purposes[0],
                    max_usdc=persona.max_usdc,
                )
            moving = (State.received, State.inspecting, State.auto_approved, State.executing)
            return await eventually(
                lambda: (r := runtime.broker.get(ticket["request_id"])).state not in moving and r,
                timeout=20,
            )

        search = await submitted("research-bot", {"query": "heat pump adoption by country"})
        assert search.state == State.succeeded
        assert search.decision.by.startswith("policy: auto_approve \"research-bot's small")
        email = "https://example.org/team?contact=jane.doe@example.org"
        scrape = await submitted("scraper-7", {"url": email})
        assert scrape.state == State.denied and "holds emails" in scrape.reason
        clip = await submitted("video-bot", {"prompt": "a lighthouse at dawn, slow pan"})
        assert clip.state == State.pending
        assert runtime.broker.confirmation_needed(clip) == Decimal("1.5")
        await runtime.broker.approve(
            ApproveParams(request_id=clip.id, confirm_amount=Decimal("1.5"))
        )
        waiting = await eventually(
            lambda: (r := runtime.broker.get(clip.id)).state == State.awaiting_funds and r,
            timeout=20,
        )
        assert waiting.funding_url or waiting.reason
        await _fund_the_clip_through_its_checkout(runtime, clip.id)
    finally:
        await runtime.stop()


async def _fund_the_clip_through_its_checkout(runtime, clip_id: str) -> None:
    """The checkout the wallet screen opens for the clip, paid as its page offers: the page
    offers the demo's top-up, not the few cents the clip lacks, so after the clip is paid the
    wallet still holds every agent's daily budget and no later approval waits for funds."""
    import re
    from decimal import Decimal

    import httpx

    from svc_console.broker.funding import Funding
    from svc_console.demo import DEMO_TOP_UP

    funding = Funding(runtime.broker)
    started = await funding.start(clip_id)
    lacks, before = started["shortfall_usdc"], Decimal(started["balance_usdc"])
    assert before < Decimal("1.50") <= before + Decimal(lacks) and started["link"]
    async with httpx.AsyncClient(timeout=30) as http:
        page = (await http.get(started["link"])).text
        assert f"lacks {lacks} USDC" in page and f'name="amount" value="{DEMO_TOP_UP:.2f}"' in page
        token = re.search(r'name="token" value="([^"]+)"', page)
        assert token is not None
        amount = re.search(r'name="amount" value="([^"]+)"', page)
        assert amount is not None
        answer = await http.post(
            started["link"], data={"token": token.group(1), "amount": amount.group(1)}
        )
        assert answer.status_code == 200
    paid = await funding.retry(clip_id, timeout_s=20)
    assert paid.state == State.succeeded
    left = await funding.market.account.wallets()
    assert left.balance_usdc == before + DEMO_TOP_UP - Decimal("1.50")
    # The demo policy's per-agent daily budget, for each of its four agents.
    assert left.balance_usdc >= 4 * Decimal(3)


async def test_the_consoles_own_sandbox_is_a_child_process_that_the_demo_prepares_over_http(paths):
    """With no service configured, the runtime's sandbox is a process of its own: the demo's
    set-up (a poor wallet, one overbilled call) reaches it over its admin routes, an agent's paid
    call goes through it, and stopping the runtime ends it."""
    from decimal import Decimal

    import httpx

    from svc_console.agent import AsyncAgent
    from svc_console.demo import DEMO_BALANCE, prepare
    from svc_console.runtime import Runtime
    from svc_console.sandbox.child import SandboxChild

    runtime = Runtime(paths=paths, policy_files=[write_policy(paths.home)])
    await runtime.start()
    try:
        assert isinstance(runtime.sandbox, SandboxChild)
        pid = runtime.sandbox.pid
        assert pid is not None
        await prepare(*runtime.service_address())
        base_url, api_key = runtime.service_address()
        headers = {"Authorization": f"Bearer {api_key}"}
        async with httpx.AsyncClient(base_url=base_url, headers=headers, timeout=30) as http:
            balance = Decimal((await http.get("/sandbox/balance")).json()["balanceUsdc"])
            faults = (await http.get("/sandbox/faults")).json()["faults"]
        assert balance == DEMO_BALANCE
        assert [fault["kind"] for fault in faults] == ["overbill"]
        research = next(p for p in PERSONAS if p.name == "research-bot")
        token = tokens(paths)[research.name]
        async with AsyncAgent(research.name, runtime.paths.socket, token=token) as agent:
            ticket = await agent.submit(
                endpoint_id=research.endpoint_id,
                inputs={"query": "heat pump adoption by country"},
                purpose=research.purposes[0],
            )
        done = await eventually(
            lambda: (
                (r := runtime.broker.get(ticket["request_id"])).state in (State.succeeded,) and r
            ),
            timeout=30,
        )
        assert done.state == State.succeeded
    finally:
        await runtime.stop()
    assert process_gone(pid)
