"""Faults, end to end: over a thousand requests through the approval socket, the broker, the SQLite
ledger and the sandbox over real HTTP, while the sandbox's fault switch makes the marketplace fail
on purpose: 5xx answers, calls that outlast the client's timeout, connections cut mid-answer,
garbled bodies, challenges re-priced or moved to another chain, an empty wallet, a provider that
leaves the registry.

Most requests are approved by the policy (a SKILLS.md loaded as the runtime loads one) under a mix
of faults; for each kind of fault, a batch waits for the operator and is approved through the
broker's API once the fault is armed, so the fault meets the execution. Every request must end in
the state its fault calls for, with a reason an operator understands (the words that say what
happened, on one line, no traceback); no charge the sandbox made may exceed the ceiling of the
approval the ledger committed, or settle on another chain; no request may be charged twice. The
console's TUI runs over the same runtime the whole time and must answer key presses while the
faults run.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Iterable, Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from helpers import agent_token, eventually
from sandbox_process import SandboxProcess
from textual.pilot import Pilot
from tui_support import started, until

from svc_console.agent import AsyncAgent
from svc_console.broker import BrokerConfig
from svc_console.broker.params import ApproveParams, DenyParams
from svc_console.config.paths import Paths
from svc_console.core.money import from_atomic
from svc_console.core.states import FINAL, State
from svc_console.market.wallet import WalletClient
from svc_console.runtime import Runtime
from svc_console.tui.app import ConsoleApp
from svc_console.tui.approvals.screen import ApprovalsScreen

POLICY = """# SKILLS.md: fault weather

The `weather-*` agents' small searches are approved without asking; the operator decides the rest.

```policy
auto_approve:
  - name: weather searches
    when:
      agents: ["weather-*"]
      max_usdc: 0.05
```
"""
SEARCH = "ep_websearch_basic"  # 0.01 USDC on base, provider prov_searchly
SCRAPE = "ep_scrape_page"  # 0.02 to 0.10 USDC on base or solana: always the operator's
BATCH = 60  # requests the operator approves into each kind of fault
WEATHER_AGENTS, WEATHER_EACH = 10, 60  # auto-approved under a mix of faults
CLIENT_TIMEOUT_S = 1.0
SETTLE_S = 120.0  # the most a batch may take to end (a loaded machine is slow, never wrong)


# -- helpers -----------------------------------------------------------------------------------


async def submit(
    runtime: Runtime, agent: str, count: int, tag: str, endpoint: str = SEARCH
) -> list[str]:
    """`count` requests from one agent, sent at once over its connection."""

    def inputs(n: int) -> dict[str, Any]:
        if endpoint == SCRAPE:
            return {"url": f"https://example.com/{tag}/{n}"}
        return {"query": f"{tag} {n}"}

    # Registered: the policy's `weather-*` names agents that prove their names.
    token = agent_token(runtime.paths, agent)
    async with AsyncAgent(agent, runtime.paths.socket, token=token) as client:
        tickets = await asyncio.gather(
            *(
                client.submit(endpoint_id=endpoint, inputs=inputs(n), purpose=f"faults: {tag}")
                for n in range(count)
            )
        )
    return [ticket["request_id"] for ticket in tickets]


def rows(runtime: Runtime, ids: Iterable[str]) -> dict[str, dict[str, Any]]:
    ids = list(ids)
    marks = ",".join("?" * len(ids))
    cursor = runtime.ledger.db.execute(
        f"SELECT id, state, reason, funding_url FROM requests WHERE id IN ({marks})", ids
    )
    return {r[0]: {"state": r[1], "reason": r[2], "funding_url": r[3]} for r in cursor}


async def settle(runtime: Runtime, ids: list[str], states: Iterable[State] = FINAL) -> None:
    """Until every request is in one of `states` (looked at every 50 ms: the broker shares this
    loop, and a tighter poll would only slow it down)."""
    wanted = {str(s) for s in states}
    deadline = asyncio.get_running_loop().time() + SETTLE_S
    while not all(r["state"] in wanted for r in rows(runtime, ids).values()):
        left = {r["state"] for r in rows(runtime, ids).values()} - wanted
        assert asyncio.get_running_loop().time() < deadline, f"still {left} after {SETTLE_S} s"
        await asyncio.sleep(0.05)


async def approve(runtime: Runtime, ids: list[str]) -> None:
    assert runtime.broker is not None
    for request_id in ids:
        await runtime.broker.approve(ApproveParams(request_id=request_id))


def readable(reason: str | None, *words: str) -> None:
    """A reason an operator reads: one line, no traceback, and the words that say what happened."""
    assert reason, "a request ended without a reason"
    assert "\n" not in reason and "\r" not in reason, reason
    assert "Traceback" not in reason and 'File "' not in reason, reason
    assert len(reason) <= 400, reason
    for word in words:
        assert word.lower() in reason.lower(), f"{word!r} not in {reason!r}"


def expect(runtime: Runtime, ids: list[str], state: State, *words: str) -> None:
    for request_id, row in rows(runtime, ids).items():
        assert row["state"] == state, (request_id, row)
        readable(row["reason"], *words)


def charges_of(sandbox: SandboxProcess, ids: Iterable[str]) -> dict[str, list[Any]]:
    wanted = set(ids)
    found: dict[str, list[Any]] = {}
    for charge in sandbox.charges():
        request_id = charge.idempotency_key.rsplit("-", 1)[0]
        if request_id in wanted:
            found.setdefault(request_id, []).append(charge)
    return found


# -- the runtime and the console ---------------------------------------------------------------


@pytest.fixture
def sandbox(home: Path) -> Iterator[SandboxProcess]:
    """The sandbox in a process of its own (the console's process then has a core to itself),
    its wallet well funded."""
    process = SandboxProcess(home / "sandbox-process").start()
    process.set_balance(10_000)
    yield process
    process.stop()


@pytest.fixture
def runtime(paths: Paths, sandbox: SandboxProcess) -> Runtime:
    """A console runtime (not started) with the policy, against that sandbox."""
    policy = paths.home / "faults-policy.md"
    policy.write_text(POLICY)
    return Runtime(
        paths=paths, sandbox=sandbox.stand_in, config=BrokerConfig(), policy_files=[policy]
    )


class ShortTimeout:
    """The wallet proxy client swapped for one with a short timeout, for the timeout batch only:
    the latency fault then outlasts the client, as a slow service outlasts a real one's 30 s."""

    def __init__(self, runtime: Runtime, sandbox: SandboxProcess):
        self.runtime, self.sandbox = runtime, sandbox

    async def __aenter__(self) -> None:
        market = self.runtime.market
        assert market is not None
        self.original = market.wallet
        sandbox = self.sandbox
        market.wallet = WalletClient(
            market.wallet_api_base, sandbox.username, sandbox.api_token, timeout_s=CLIENT_TIMEOUT_S
        )

    async def __aexit__(self, *exc: object) -> None:
        market = self.runtime.market
        assert market is not None
        short, market.wallet = market.wallet, self.original
        await short.aclose()


# -- the batches the operator approves into a fault --------------------------------------------


async def operator_batch(
    runtime: Runtime, tag: str, endpoint: str = SEARCH, size: int = BATCH
) -> list[str]:
    ids = await submit(runtime, f"ops-{tag}", size, tag, endpoint)
    await settle(runtime, ids, [State.pending])
    return ids


async def five_xx(runtime: Runtime, sandbox: SandboxProcess) -> list[str]:
    ids = await operator_batch(runtime, "5xx")
    quarter = BATCH // 4
    for n, status in enumerate((500, 502, 503, 504)):
        part = ids[n * quarter : (n + 1) * quarter]
        sandbox.set_fault("error", status=status, routes=["proxy"])
        await approve(runtime, part)
        await settle(runtime, part)
        sandbox.clear_faults()
        expect(runtime, part, State.failed, str(status))
    return ids


async def timeouts(runtime: Runtime, sandbox: SandboxProcess, size: int = BATCH) -> list[str]:
    ids = await operator_batch(runtime, "timeout", size=size)
    async with ShortTimeout(runtime, sandbox):
        sandbox.set_fault("latency", delay_ms=3_000, routes=["proxy"])
        await approve(runtime, ids)
        await settle(runtime, ids)
    sandbox.clear_faults()
    expect(runtime, ids, State.unknown, "did not answer", "may have been charged", "reconcile")
    # Whatever the sandbox did with the calls after the client gave up is checked with all the
    # charges at the end: at most once, within the ceiling.
    return ids


async def drops(runtime: Runtime, sandbox: SandboxProcess) -> list[str]:
    ids = await operator_batch(runtime, "drop")
    sandbox.set_fault("drop", routes=["proxy"])
    await approve(runtime, ids)
    await settle(runtime, ids)
    sandbox.clear_faults()
    expect(runtime, ids, State.unknown, "did not answer", "may have been charged", "reconcile")
    charged = charges_of(sandbox, ids)
    assert all(len(charged.get(i, [])) == 1 for i in ids), "a dropped call was executed once"
    return ids


async def garbled(runtime: Runtime, sandbox: SandboxProcess) -> list[str]:
    ids = await operator_batch(runtime, "malformed")
    sandbox.set_fault("malformed", routes=["proxy"])
    await approve(runtime, ids)
    await settle(runtime, ids)
    sandbox.clear_faults()
    # The service executed and charged; its answer cannot be read. Not `failed` (which says
    # nothing was charged): the operator must reconcile.
    expect(runtime, ids, State.unknown, "unexpected answer", "may have been charged", "reconcile")
    charged = charges_of(sandbox, ids)
    assert all(len(charged.get(i, [])) == 1 for i in ids)
    return ids


async def repriced(runtime: Runtime, sandbox: SandboxProcess) -> list[str]:
    half = BATCH // 2
    dearer = await operator_batch(runtime, "reprice", SCRAPE)
    elsewhere = await operator_batch(runtime, "rechain")
    assert runtime.broker is not None
    # Ten times: above the dry run's upper bound (0.10 USDC) whatever the page's runtime price.
    sandbox.set_fault("reprice", factor=10, routes=["proxy"])
    await approve(runtime, dearer)
    await settle(runtime, dearer, [State.pending])
    sandbox.set_fault("reprice", chain="solana", routes=["proxy"])
    await approve(runtime, elsewhere)
    await settle(runtime, elsewhere, [State.pending])
    sandbox.clear_faults()
    assert not charges_of(sandbox, dearer + elsewhere), "a re-priced challenge was paid"
    expect(runtime, dearer, State.pending, "asked", "above the approved", "nothing was paid")
    expect(runtime, elsewhere, State.pending, "solana", "base", "nothing was paid")
    for row in rows(runtime, elsewhere).values():
        assert "above" not in row["reason"], f"the same price is not above: {row['reason']}"
    for request_id in dearer:
        again = runtime.broker.get(request_id)
        assert again.estimate is not None and again.decision is not None
        assert again.estimate.amount_usdc > again.decision.ceiling_usdc  # the new price, to decide
    # Back with the operator: approved again at the new price, or denied.
    await approve(runtime, dearer[:half])
    for request_id in dearer[half:] + elsewhere:
        await runtime.broker.deny(DenyParams(request_id=request_id, reason="too dear now"))
    await settle(runtime, dearer + elsewhere)
    expect(runtime, dearer[half:] + elsewhere, State.denied, "too dear now")
    assert {r["state"] for r in rows(runtime, dearer[:half]).values()} == {"succeeded"}
    return dearer + elsewhere


async def unfunded(runtime: Runtime, sandbox: SandboxProcess) -> list[str]:
    ids = await operator_batch(runtime, "unfunded")
    assert runtime.broker is not None
    balance = sandbox.balance()
    sandbox.set_balance(0)
    await approve(runtime, ids)
    await settle(runtime, ids, [State.awaiting_funds])
    expect(runtime, ids, State.awaiting_funds, "wallet unfunded", "fund it", "retry once")
    assert all(r["funding_url"] for r in rows(runtime, ids).values())
    half = BATCH // 2
    sandbox.set_balance(balance)  # the operator funded the wallet
    for request_id in ids[:half]:
        await runtime.broker.retry_funded(request_id)
    await settle(runtime, ids[:half])
    sandbox.set_balance(0)  # or retried before the funds arrived
    for request_id in ids[half:]:
        await runtime.broker.retry_funded(request_id)
    await settle(runtime, ids[half:])
    sandbox.set_balance(balance)
    assert {r["state"] for r in rows(runtime, ids[:half]).values()} == {"succeeded"}
    expect(runtime, ids[half:], State.failed, "still unfunded on the retry")
    return ids


async def delisted(runtime: Runtime, sandbox: SandboxProcess) -> list[str]:
    # Approved, then the provider leaves the registry before the call.
    approved = await operator_batch(runtime, "delisted-late")
    sandbox.set_fault("delist", provider="prov_searchly", routes=["proxy"], count=1)
    await approve(runtime, approved)
    await settle(runtime, approved)
    expect(runtime, approved, State.failed, "allowlisted registry")
    # Asked for after it left: the dry run is refused, the policy never approves.
    after = await submit(runtime, "weather-delisted", BATCH, "delisted")
    await settle(runtime, after)
    sandbox.clear_faults()  # back in the registry
    expect(runtime, after, State.rejected, "not in the marketplace's allowlisted registry")
    return approved + after


# -- auto-approved requests in mixed weather ---------------------------------------------------


async def weather(
    runtime: Runtime,
    sandbox: SandboxProcess,
    agents: int = WEATHER_AGENTS,
    each: int = WEATHER_EACH,
) -> list[str]:
    """Auto-approved searches while the proxy fails (5xx), cuts or garbles one answer in twenty
    each: a fault may meet the dry run (rejected) or the execution (failed or unknown)."""
    for n, kind in enumerate(("error", "drop", "malformed")):
        sandbox.add_fault(kind, routes=["proxy"], rate=0.05, seed=n)
    batches = [submit(runtime, f"weather-{n}", each, f"weather {n}") for n in range(agents)]
    ids = [i for batch in await asyncio.gather(*batches) for i in batch]
    await settle(runtime, ids)
    assert all(fault["fired"] > 0 for fault in sandbox.faults())
    sandbox.clear_faults()
    executed = {
        row[0]
        for row in runtime.ledger.db.execute(
            f"SELECT DISTINCT request_id FROM executions WHERE request_id IN"
            f" ({','.join('?' * len(ids))})",
            ids,
        )
    }
    charged = charges_of(sandbox, ids)
    seen: Counter[str] = Counter()
    for request_id, row in rows(runtime, ids).items():
        state, reason = row["state"], row["reason"]
        seen[state] += 1
        paid = len(charged.get(request_id, []))
        if request_id not in executed:  # the dry run failed: nothing was approved or paid
            assert state == "rejected" and paid == 0, (request_id, row)
            readable(reason, "could not inspect the endpoint")
        elif state == "succeeded":
            assert paid == 1, (request_id, row)
        elif state == "failed":  # a 5xx before the route ran, or (a loaded machine) no connection
            assert paid == 0, (request_id, row)
            readable(reason, "nothing was charged: cannot reach" if "reach" in reason else "(50")
        else:  # cut or garbled after the route ran: charged, and the operator reconciles
            assert state == "unknown" and paid == 1, (request_id, row)
            readable(reason, "may have been charged", "reconcile")
    assert seen["succeeded"] > len(ids) // 2 and seen["rejected"] and seen["unknown"]
    return ids


# -- the tests ----------------------------------------------------------------------------------


async def test_a_thousand_requests_under_faults_end_right_and_pay_within_their_ceilings(
    runtime: Runtime, sandbox: SandboxProcess
):
    async with runtime:
        ids = await weather(runtime, sandbox)
        for batch in (five_xx, timeouts, drops, garbled, repriced, unfunded, delisted):
            ids += await batch(runtime, sandbox)
        assert len(ids) >= 1_000 and len(set(ids)) == len(ids)
        await settle(runtime, ids)
        check_charges(runtime, sandbox, ids)


async def press_while(pilot: Pilot[Any], screen: ApprovalsScreen, busy: asyncio.Task) -> None:
    """Keys pressed while requests are executing under faults are answered."""
    runtime = screen.runtime
    await eventually(lambda: runtime.ledger.count_in_states([State.executing]) or busy.done(), 60)
    assert not busy.done(), "the faults were over before a key could be pressed"
    await pilot.press("h")
    await until(pilot, lambda: screen.active == "history")
    await pilot.press("p")
    await until(pilot, lambda: screen.active == "pending")


async def test_the_console_answers_keys_while_faults_run(runtime: Runtime, sandbox: SandboxProcess):
    app = ConsoleApp(runtime, cursor_blink=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await started(pilot)
        screen = app.screen
        assert isinstance(screen, ApprovalsScreen)
        storm = asyncio.create_task(weather(runtime, sandbox, agents=3, each=40))
        await press_while(pilot, screen, storm)
        ids = await storm
        hanging = asyncio.create_task(timeouts(runtime, sandbox, size=10))
        await press_while(pilot, screen, hanging)
        ids += await hanging
        check_charges(runtime, sandbox, ids)


def check_charges(runtime: Runtime, sandbox: SandboxProcess, ids: list[str]) -> None:
    """Every charge belongs to an execution whose approval was committed first, is at most that
    approval's ceiling, on the approved chain; no request is charged twice."""
    db = runtime.ledger.db
    executions = {
        row[0]: row[1:]
        for row in db.execute(
            "SELECT e.idempotency_key, e.request_id, e.started_at, d.approved, d.at,"
            " d.ceiling_usdc FROM executions e JOIN decisions d ON d.id = e.decision_id"
        )
    }
    per_request: Counter[str] = Counter()
    charges = sandbox.charges()
    assert charges, "nothing was charged at all"
    for charge in charges:
        found = executions.get(charge.idempotency_key)
        assert found is not None, f"charge {charge.id} has no execution in the ledger"
        request_id, started_at, approved, decided_at, ceiling = found
        assert approved and decided_at <= started_at, charge
        assert charge.price_usdc <= from_atomic(ceiling), (charge, from_atomic(ceiling))
        request = runtime.broker.get(request_id)
        assert request.estimate is not None and charge.chain == request.estimate.chain
        per_request[request_id] += 1
    assert max(per_request.values()) == 1
    assert set(per_request) <= set(ids)
    assert sum(c.price_usdc for c in charges) > Decimal(0)
