"""Policy evaluation: one request judged against a 100-rule SKILLS.md, with the budget totals of a
1,000,000-row ledger, as the broker judges it (microseconds per evaluation).

The ledger is the shared deterministic one (`data.ledger`); its running budget totals are built
once from its rows (a broker keeps them as it goes; these rows were generated without one) and
loaded the way the broker loads them at start. Each evaluation judges a different request, drawn
from the ledger's own (agents, providers, endpoints, prices), at the moment after the last one:
every budget window is full. What is timed is what the broker does for a new request: the
decision (`CompiledPolicy.evaluate` with the brakes), every rule that decided or warned, each
budget's figures before and after, and the request counted in the brakes' counts. Building the
`Verdict` model from it (done once per request, on the way to the ledger) is timed too and shown
as context.

Baseline: the same evaluation with each budget's spend summed from the ledger with SQL (one
`SELECT sum(...)` per budget over its window), as an engine without running totals would.

Target: median at most 20 µs.
"""

from __future__ import annotations

import os
import random
import sqlite3
import tempfile
import time
from pathlib import Path

import data
import harness
from harness import Baseline, BenchResult, Figures, Target

from svc_console.ledger import Ledger
from svc_console.ledger.budgets import totals_rows
from svc_console.ledger.replay import PastRequest
from svc_console.policy.budgets import RollingTotals
from svc_console.policy.engine import CompiledPolicy
from svc_console.policy.facts import facts_of_record
from svc_console.policy.loader import load_paths
from svc_console.policy.verdicts import to_verdict

ROWS = 1_000_000
POLICY = Path(__file__).with_name("policy-100-rules.md")
TARGET = Target({"median": 20.0})
EVALUATIONS_PER_RUN = 20_000
SAMPLE_REQUESTS = 2_000
BASELINE_SAMPLES = 20
WINDOW_SQL = {"agent": "r.agent = ?", "provider": "r.provider = ?", "overall": "1 = 1"}


def _budget_totals(db: sqlite3.Connection) -> None:
    """Running totals for rows written without a broker: settled spend per bucket by minute,
    hour and day, each stamped with its end, as the ledger keeps them (ledger/budgets.py)."""
    keys = {
        "agent": "r.agent",
        "provider": "r.provider",
        "domain_type": "json_extract(r.endpoint, '$.domain_type')",
        "overall": "''",
    }
    db.execute("DELETE FROM budget_totals")
    for grain in (60, 3600, 86_400):
        whole = f"CAST(r.created_at / {grain} AS INTEGER)"
        end = f"({whole} + (r.created_at / {grain} > {whole})) * {grain}"
        for scope, key in keys.items():
            db.execute(
                f"""INSERT INTO budget_totals (grain, at, scope, key, reserved_usdc, settled_usdc)
                    SELECT {grain}, {end}, '{scope}', {key}, 0, sum(e.charged_usdc)
                    FROM requests r JOIN executions e ON e.request_id = r.id
                    WHERE e.charged_usdc IS NOT NULL AND {key} IS NOT NULL
                    GROUP BY 2, 4"""
            )
    db.commit()


def _requests(ledger: Ledger, count: int) -> list[PastRequest]:
    """A spread of the ledger's own requests, as facts are built from them."""
    import json

    total = ledger.db.execute("SELECT max(rowid) FROM requests").fetchone()[0]
    rng = random.Random(8402)
    picked = []
    for rowid in rng.sample(range(1, total + 1), count * 2):
        row = ledger.db.execute(
            "SELECT id, agent, kind, endpoint_id, inputs, endpoint, estimate FROM requests"
            " WHERE rowid = ? AND endpoint IS NOT NULL AND estimate IS NOT NULL",
            [rowid],
        ).fetchone()
        if row is None:
            continue
        picked.append(
            PastRequest(
                id=row[0],
                agent=row[1],
                # The ledger's agents are registered ones: each has budgets of its own.
                agent_verified=True,
                kind=row[2],
                endpoint_id=row[3],
                dataset_id=None,
                inputs=json.loads(row[4]),
                max_usdc=None,
                state="received",
                created_at=0.0,
                endpoint=json.loads(row[5]),
                estimate=json.loads(row[6]),
                verdict=None,
                approved=None,
                decided_by=None,
                ceiling=None,
                charged=None,
            )
        )
        if len(picked) == count:
            break
    return picked


def _sql_sums(db: sqlite3.Connection, policy: CompiledPolicy, facts, now: float) -> int:
    """What an engine without running totals does: sum each budget's window from the ledger."""
    total = 0
    for check in policy.budgets:
        per = check.scope
        if per == "domain_type":
            where, args = "json_extract(r.endpoint, '$.domain_type') = ?", [facts.domain_type]
        elif per == "overall":
            where, args = WINDOW_SQL["overall"], []
        else:
            where, args = WINDOW_SQL[per], [getattr(facts, per)]
        seconds = {0: 3600, 1: 86_400, 2: 7 * 86_400, 3: 30 * 86_400}[check.window]
        total += db.execute(
            "SELECT coalesce(sum(e.charged_usdc), 0) FROM requests r"
            " JOIN executions e ON e.request_id = r.id"
            f" WHERE r.created_at > ? AND {where}",
            [now - seconds, *args],
        ).fetchone()[0]
    return total


def run(runs: int) -> list[BenchResult]:
    source = data.ledger(ROWS)
    with tempfile.TemporaryDirectory(prefix="svc-bench-policy-") as folder:
        path = data.copy_ledger(source, Path(folder))
        ledger = Ledger(path)
        try:
            started = time.perf_counter()
            _budget_totals(ledger.db.conn)
            backfill_s = time.perf_counter() - started
            now = ledger.db.execute("SELECT max(created_at) FROM requests").fetchone()[0] + 60
            started = time.perf_counter()
            totals = RollingTotals()
            totals.load(totals_rows(ledger.db, now), now)
            load_ms = (time.perf_counter() - started) * 1000
            loaded_rows = sum(1 for _ in totals_rows(ledger.db, now))

            loaded = load_paths([POLICY])
            policy = CompiledPolicy(loaded)
            facts = [facts_of_record(r) for r in _requests(ledger, SAMPLE_REQUESTS)]
            outcomes: dict[str, int] = {}
            for f in facts:
                outcome = policy.evaluate(f, totals, now, brakes=True).outcome
                outcomes[outcome] = outcomes.get(outcome, 0) + 1
            count = policy.brakes.count

            def evaluate(request, totals, now):
                """As the broker judges a new request (`LivePolicy.admit`)."""
                result = policy.evaluate(request, totals, now, brakes=True)
                count(result.tally, "req", now, denied=result.outcome == "deny")
                return result

            samples: list[float] = []
            cpu_samples: list[float] = []
            verdict_samples: list[float] = []
            clock, cpu = time.perf_counter_ns, time.thread_time_ns
            for _ in range(runs):
                for n in range(EVALUATIONS_PER_RUN):
                    request = facts[n % len(facts)]
                    start = clock()
                    evaluate(request, totals, now)
                    samples.append((clock() - start) / 1000)
                # The CPU time of each evaluation: what it costs without the time this process
                # waits for a core on a shared machine (context for the wall-clock figures).
                for n in range(EVALUATIONS_PER_RUN // 4):
                    request = facts[n % len(facts)]
                    start = cpu()
                    evaluate(request, totals, now)
                    cpu_samples.append((cpu() - start) / 1000)
                for n in range(EVALUATIONS_PER_RUN // 10):
                    request = facts[n % len(facts)]
                    start = clock()
                    to_verdict(evaluate(request, totals, now), policy.sha256)
                    verdict_samples.append((clock() - start) / 1000)

            baseline_samples = []
            empty = RollingTotals()
            for request in facts[:BASELINE_SAMPLES]:
                start = clock()
                _sql_sums(ledger.db.conn, policy, request, now)
                evaluate(request, empty, now)
                baseline_samples.append((clock() - start) / 1000)
        finally:
            ledger.close()

    verdict = Figures.of(verdict_samples)
    cpu_time = Figures.of(cpu_samples)
    rules = _count_rules(loaded.rules)
    return [
        BenchResult(
            name="policy evaluation, 100 rules, 1M-row ledger",
            unit="µs",
            figures=Figures.of(samples),
            target=TARGET,
            baseline=Baseline(
                "budgets summed from the ledger with SQL", Figures.of(baseline_samples)
            ),
            context={
                "rules": rules,
                "budgets": len(policy.budgets),
                "auto_approve_rules": len(policy.auto),
                "brakes": {
                    "rate_limits": len(policy.brakes.rates),
                    "repeats": policy.brakes.repeats is not None,
                    "circuit_breaker": policy.brakes.breaker is not None,
                    "velocity": policy.brakes.velocity is not None,
                },
                "ledger_rows": ROWS,
                "totals_rows_loaded": loaded_rows,
                "totals_load_ms": round(load_ms, 1),
                "totals_built_from_rows_s": round(backfill_s, 1),
                "distinct_requests": len(facts),
                "outcomes": outcomes,
                "verdict_model_us": {"median": round(verdict.median, 1), "p99": verdict.p99},
                "cpu_time_us": {"median": round(cpu_time.median, 1), "p99": cpu_time.p99},
                "machine": harness.machine(),
            },
            note=(
                f"{rules} rules; totals from {loaded_rows:,} ledger rows in {load_ms:.0f} ms;"
                f" CPU time per evaluation: median {cpu_time.median:.1f} µs;"
                f" evaluate + Verdict model: median {verdict.median:.0f} µs"
            ),
        )
    ]


def _count_rules(rules) -> int:
    """Rules as an author counts them: each list entry, budget, requirement, pattern, scalar
    setting and auto-approve rule (with its own budgets)."""
    from svc_console.policy.rules import LIST_KEYS

    count = len(rules.budgets)
    for side in (rules.allow, rules.deny):
        count += sum(len(getattr(side, key) or ()) for key in LIST_KEYS) if side else 0
    count += len(rules.require.model_dump(exclude_none=True)) if rules.require else 0
    count += len(rules.never_send or ()) + len(rules.never_send_patterns or {})
    count += len(rules.hours or ())
    count += sum(
        getattr(rules, key) is not None
        for key in (
            "per_call_max_usdc",
            "confirm_above_usdc",
            "pending_lifetime",
            "timezone",
            "compute_tools",
            "dynamic_pricing",
        )
    )
    count += sum(1 + len(rule.budgets) for rule in rules.auto_approve)
    count += len(rules.rate_limits)
    count += sum(
        getattr(rules, key) is not None for key in ("repeats", "circuit_breaker", "velocity")
    )
    return count


if __name__ == "__main__":
    os.environ.pop("SVC_BASE_URL", None)
    harness.main(run, default_runs=3)
