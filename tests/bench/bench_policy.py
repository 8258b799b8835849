"""Policy admission: one request judged against a 100-rule SKILLS.md, with the budget totals of a
1,000,000-row ledger, as the broker judges it (microseconds per request).

The ledger is the shared deterministic one (`data.ledger`); its running budget totals are built
once from its rows (a broker keeps them as it goes; these rows were generated without one) and
loaded the way the broker loads them at start. Each admission judges a different request, drawn
from the ledger's own (agents, providers, endpoints, prices, inputs), at the moment after the last
one: every budget window is full.

Two rows, both on the path the broker runs:

- admission: `LivePolicy.admit` as `broker/intake.py` calls it, from the request, its endpoint
  record and its estimate (models built before the clock starts, as intake has them): the facts
  (`facts_of`), the evaluation with the brakes, the request counted in the brakes' counts, and the
  `Verdict` with its citations (`to_verdict`; its words are written when first read, so the time
  of reading them whole is shown beside it). Baseline: the same admission with the verdict read
  whole at once (summary, citations, budget figures: what admitting cost when words were written
  eagerly). Target: median at most 20 µs.
- evaluation: `CompiledPolicy.evaluate` with the arguments `admit` gives it, on facts built
  beforehand. Baseline: the same evaluation with each budget's spend summed from the ledger with
  SQL (one `SELECT sum(...)` per budget over its window), as an engine without running totals
  would. Target: median at most 5 µs.
"""

from __future__ import annotations

import json
import os
import random
import sqlite3
import tempfile
import time
from pathlib import Path

import data
import harness
from harness import Baseline, BenchResult, Figures, Target

from svc_console.core.models import EndpointRecord, Estimate, SpendRequest
from svc_console.ledger import Ledger
from svc_console.ledger.budgets import totals_rows
from svc_console.policy.budgets import RollingTotals
from svc_console.policy.engine import CompiledPolicy
from svc_console.policy.facts import facts_of
from svc_console.policy.live import LivePolicy

ROWS = 1_000_000
POLICY = Path(__file__).with_name("policy-100-rules.md")
ADMISSION_TARGET = Target({"median": 20.0})
EVALUATION_TARGET = Target({"median": 5.0})
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


Admitted = tuple[SpendRequest, EndpointRecord, Estimate]


def _requests(ledger: Ledger, count: int) -> list[Admitted]:
    """A spread of the ledger's own requests, as intake holds them when it asks the policy:
    the request, its endpoint record and its estimate, as models."""
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
        request = SpendRequest(
            id=row[0],
            agent=row[1],
            kind=row[2],
            endpoint_id=row[3],
            inputs=json.loads(row[4]),
            purpose="bench",
            state="inspecting",
            created_at=0.0,
            updated_at=0.0,
            # The ledger's agents are registered ones: each has budgets of its own.
            agent_verified=True,
        )
        endpoint = EndpointRecord.model_validate_json(row[5])
        picked.append((request, endpoint, Estimate.model_validate_json(row[6])))
        if len(picked) == count:
            break
    return picked


def _read_whole(verdict) -> None:
    """What the ledger and the screens read of a verdict: its words and figures, serialised."""
    verdict.model_dump(mode="json")


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


def _samples(call, requests: list, count: int, clock) -> list[float]:
    """Microseconds of `call(*request)` for `count` requests in turn, one sample each."""
    samples = []
    for n in range(count):
        request = requests[n % len(requests)]
        start = clock()
        call(*request)
        samples.append((clock() - start) / 1000)
    return samples


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

            # The policy as the broker holds it: a LivePolicy over the file, with the totals.
            live = LivePolicy([POLICY], totals=totals, clock=lambda: now)
            live.reload()
            policy = live.compiled
            assert policy is not None, live.status.message
            requests = _requests(ledger, SAMPLE_REQUESTS)
            facts = [(facts_of(*request),) for request in requests]
            outcomes: dict[str, int] = {}
            for request in requests:
                outcome = live.admit(*request, now=now).outcome
                outcomes[outcome] = outcomes.get(outcome, 0) + 1

            def admit(request, endpoint, estimate):
                return live.admit(request, endpoint, estimate, now=now)

            def admit_read_whole(request, endpoint, estimate):
                _read_whole(live.admit(request, endpoint, estimate, now=now))

            def evaluate(request_facts):
                """As `admit` calls it, the agent not paused."""
                return policy.evaluate(
                    request_facts, totals, now, brakes=True, paused=None, grants=live.grants
                )

            admissions, evaluations, eager, cpu_samples = [], [], [], []
            clock, cpu = time.perf_counter_ns, time.thread_time_ns
            for _ in range(runs):
                admissions += _samples(admit, requests, EVALUATIONS_PER_RUN, clock)
                evaluations += _samples(evaluate, facts, EVALUATIONS_PER_RUN, clock)
                eager += _samples(admit_read_whole, requests, EVALUATIONS_PER_RUN // 10, clock)
                # The CPU time of each admission: what it costs without the time this process
                # waits for a core on a shared machine (context for the wall-clock figures).
                cpu_samples += _samples(admit, requests, EVALUATIONS_PER_RUN // 4, cpu)
            verdicts = [admit(*request) for request in requests[: EVALUATIONS_PER_RUN // 10]]
            words = _samples(_read_whole, [(v,) for v in verdicts], len(verdicts), clock)

            baseline_samples = []
            empty = RollingTotals()
            for (request_facts,) in facts[:BASELINE_SAMPLES]:
                start = clock()
                _sql_sums(ledger.db.conn, policy, request_facts, now)
                policy.evaluate(request_facts, empty, now, brakes=True, grants=live.grants)
                baseline_samples.append((clock() - start) / 1000)
        finally:
            ledger.close()

    cpu_time, read = Figures.of(cpu_samples), Figures.of(words)
    # What the requests came to: a row of denials never reaches the auto-approve rules.
    verdicts = "outcomes: " + ", ".join(f"{n:,} {o}" for o, n in sorted(outcomes.items()))
    rules = _count_rules(policy.loaded.rules)
    context = {
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
        "distinct_requests": len(requests),
        "outcomes": outcomes,
    }
    return [
        BenchResult(
            name="policy admission (LivePolicy.admit), 100 rules, 1M-row ledger",
            unit="µs",
            figures=Figures.of(admissions),
            target=ADMISSION_TARGET,
            baseline=Baseline("the same, the verdict read whole at once", Figures.of(eager)),
            context={
                **context,
                "path": "LivePolicy.admit: facts_of, CompiledPolicy.evaluate (brakes, grants),"
                " brakes counted, to_verdict",
                "cpu_time_us": {"median": round(cpu_time.median, 2), "p99": cpu_time.p99},
                "reading_the_words_us": {"median": round(read.median, 1), "p99": read.p99},
            },
            note=(
                f"{rules} rules; {verdicts};"
                f" CPU time per admission: median {cpu_time.median:.1f} µs;"
                f" reading a verdict's words whole later: median {read.median:.0f} µs"
            ),
        ),
        BenchResult(
            name="policy evaluation (CompiledPolicy.evaluate as admit runs it), 100 rules",
            unit="µs",
            figures=Figures.of(evaluations),
            target=EVALUATION_TARGET,
            baseline=Baseline(
                "budgets summed from the ledger with SQL", Figures.of(baseline_samples)
            ),
            context={**context, "path": "CompiledPolicy.evaluate(brakes=True), facts prebuilt"},
            note=(
                f"totals from {loaded_rows:,} ledger rows in {load_ms:.0f} ms;"
                f" {len(requests):,} distinct requests judged in turn; {verdicts}"
            ),
        ),
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
