"""The demo started three times on one home, as a newcomer does: each start runs the runtime the
demo runs (its own sandbox in a child process, set up by the demo's `prepare`: a poor wallet and
one paid call billed at three times its approval), approves a few calls and stops. Each sandbox
numbers its charges from ch_000001 again; the usage history must only grow, the ABOVE APPROVAL
charge of every run must stay, and the audit chain must hold throughout."""

from __future__ import annotations

import itertools
import sqlite3
from dataclasses import dataclass

from helpers import eventually

from svc_console.agent import AsyncAgent
from svc_console.broker.params import ApproveParams
from svc_console.cli import main
from svc_console.config.paths import Paths
from svc_console.core.states import State
from svc_console.core.usage import UsageFilter
from svc_console.demo import prepare, write_policy
from svc_console.ledger import usage_query
from svc_console.ledger.audit import verify
from svc_console.ledger.readers import open_reader
from svc_console.runtime import Runtime

RUNS = 3
CALLS = 3  # paid calls a run: the first is the one the sandbox overbills


@dataclass(frozen=True)
class Figures:
    charges: int
    total: int  # atomic USDC
    above: list[tuple[str | None, str]]  # (service, charge id) of each ABOVE APPROVAL charge
    rows: frozenset[tuple[object, ...]]  # every charge as it is held


async def demo_run(paths: Paths) -> str:
    """One start of the demo's runtime: CALLS approved FX rates calls, then a stop. Returns the
    identity its sandbox gave itself."""
    runtime = Runtime(paths=paths, policy_files=[write_policy(paths.sandbox)])
    await runtime.start()
    try:
        await prepare(*runtime.service_address())
        broker = runtime.broker
        assert broker is not None
        async with AsyncAgent("quant-feed", runtime.paths.socket) as agent:
            for n in range(CALLS):
                ticket = await agent.submit(
                    endpoint_id="ep_fx_rates",
                    inputs={"symbol": ("EURUSD", "USDJPY", "GBPUSD")[n]},
                    purpose="mark the FX book to market",
                )
                request_id = ticket["request_id"]
                await eventually(
                    lambda r=request_id: broker.get(r).state == State.pending, timeout=30
                )
                await broker.approve(ApproveParams(request_id=request_id))
                done = await agent.wait(request_id, timeout_s=60)
                assert done["state"] == State.succeeded, done
        await runtime.sync_usage()
        async with runtime.account_client() as account:
            page = await account.usage(limit=1)
        assert page.service_id is not None and page.service_id.startswith("sandbox-")
        return page.service_id
    finally:
        await runtime.stop()


def figures(paths: Paths) -> Figures:
    conn = open_reader(paths.ledger(sandbox=True))
    try:
        totals = usage_query.totals(conn, UsageFilter())
        rows = list(usage_query.stream(conn, UsageFilter()))
    finally:
        conn.close()
    above = [(r.service, r.id) for r in rows if r.flag == "above_ceiling"]
    held = frozenset((r.service, r.id, r.version, r.at, r.amount, r.state) for r in rows)
    return Figures(totals.count, totals.amount, above, held)


async def test_restarting_the_demo_adds_charges_and_loses_none(paths: Paths, capsys):
    seen: list[Figures] = []
    services: list[str] = []
    for run in range(RUNS):
        services.append(await demo_run(paths))
        now = figures(paths)
        report = verify(paths.ledger(sandbox=True))
        assert report.intact, (run, report.broken, report.problems)
        seen.append(now)
        with capsys.disabled():
            print(f"\nrun {run + 1}: {now.charges} charges, {now.total / 1e6:.6f} USDC")
    assert len(set(services)) == RUNS  # each run its own sandbox identity
    for before, after in itertools.pairwise(seen):
        assert after.charges == before.charges + CALLS
        assert after.total > before.total
        assert before.rows <= after.rows  # every charge held is still held, as it was
    last = seen[-1]
    # Every run's sandbox numbered from ch_000001: the same ids, kept under each identity.
    ids = sorted((service, charge_id) for service, charge_id, *_ in last.rows)
    assert ids == sorted((s, f"ch_00000{n}") for s in services for n in range(1, CALLS + 1))
    assert last.above == [(s, "ch_000001") for s in services]  # one a run, none lost
    assert all(state != "conflict" for *_, state in last.rows)
    # A charge forged straight into the usage table is one the chain does not account for.
    forged = sqlite3.connect(paths.ledger(sandbox=True))
    with forged:
        forged.execute(
            "INSERT INTO usage (row_key, service, id, at, kind, resource, chain, protocol,"
            " amount, state, flagged, synced_at) VALUES (?, ?, 'ch_000004', 1.0, 'market_call',"
            " 'ep_fx_rates', 'base', 'x402', 1, 'ok', 0, 1.0)",
            [f"{services[-1]} ch_000004 v1", services[-1]],
        )
    forged.close()
    capsys.readouterr()
    assert main(["audit", "verify"]) == 1
    out = capsys.readouterr().out
    assert (
        f"usage row '{services[-1]} ch_000004 v1' is in no event: a charge the audit chain" in out
    )
