"""The usage history in the ledger: sync and dedupe, the join with the ledger's decisions, the
reconciliation flags, and every query finance runs (filters, totals, breakdowns, windows), checked
against a plain Python computation over the same rows, and their plans checked to use indexes."""

from __future__ import annotations

import hashlib
import sqlite3
from collections import Counter, defaultdict
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import sqlite_utils
from postgres import url_for

from svc_console.core.models import Decision, EndpointRecord, Evidence, SpendRequest
from svc_console.core.states import State
from svc_console.core.usage import (
    DAY_S,
    LedgerMatch,
    Reconciled,
    UsageCharge,
    UsageFilter,
    day_of,
    reconcile,
)
from svc_console.ledger import Ledger
from svc_console.ledger import usage_query as U
from svc_console.ledger.audit import verify
from svc_console.ledger.readers import open_reader
from svc_console.ledger.schema import MIGRATIONS, migrate
from svc_console.ledger.usage_seed import charges as seeded_charges
from svc_console.ledger.usage_seed import seed_usage
from svc_console.ledger.usage_write import recheck_flagged, sync_usage

SEEDED = 1000
T0 = 1_780_000_000.0
SERVICE = "https://svc.example"


# -- a ledger with real requests, decisions and executions ------------------------------------


def _endpoint(provider: str = "prov_search", domain: str = "A7") -> EndpointRecord:
    record = {
        "id": "ep_x", "name": "X", "provider": provider, "providerName": "Prov",
        "origin": "publisher", "domain_type": domain, "product_class": "B1", "chains": ["base"],
        "protocols": ["x402"], "pricing": {"model": "fixed", "amountUsdc": "0.01"},
        "verified": True, "qualityScore": 0.95, "reliability": 0.99,
    }  # fmt: skip
    return EndpointRecord.model_validate(record)


def executed(
    ledger: Ledger,
    request_id: str,
    *,
    ceiling: str = "0.05",
    agent: str = "research-bot",
    provider: str = "prov_search",
    domain: str = "A7",
    evidence: Evidence | None = None,
) -> str:
    """A request approved with `ceiling` and executed once, as the broker records it; returns
    the execution's idempotency key."""
    request = SpendRequest(
        id=request_id, agent=agent, kind="market_call", endpoint_id="ep_x", inputs={"q": 1},
        purpose="p", state=State.received, created_at=T0, updated_at=T0,
    )  # fmt: skip
    ledger.insert_request(request)
    ledger.transition(request_id, State.inspecting, at=T0)
    ledger.transition(request_id, State.pending, at=T0, endpoint=_endpoint(provider, domain))
    decision = Decision(
        approved=True,
        by=evidence.channel if evidence else "operator",
        at=T0 + 1,
        ceiling_usdc=Decimal(ceiling),
        evidence=evidence,
    )
    decision_id = ledger.decide(request_id, decision, State.approved)
    key = f"{request_id}-1"
    ledger.start_execution(request_id, decision_id, 1, key, at=T0 + 2)
    return key


def charge(charge_id: str, amount: str, key: str | None, **fields: Any) -> UsageCharge:
    """A charge as the service's usage route lists it (camelCase on the wire)."""
    wire = {
        "id": charge_id,
        "createdAt": fields.pop("at", "2026-05-28T10:00:00Z"),
        "resourceId": "ep_x",
        "chain": "base",
        "protocol": "x402",
        "amountUsdc": amount,
        "idempotencyKey": key,
        "receipt": "0xabc",
        **fields,
    }
    return UsageCharge.model_validate(wire)


@pytest.fixture
def ledger(tmp_path: Path, ledger_url: str | None) -> Iterator[Ledger]:
    store = Ledger(tmp_path / "ledger.db", url=ledger_url)
    yield store
    store.close()


def row(ledger: Ledger, charge_id: str) -> U.UsageRow:
    found = U.get(ledger.db.conn, charge_id)
    assert found is not None
    return found


# -- schema -----------------------------------------------------------------------------------


def test_an_older_ledger_gains_the_usage_table(tmp_path: Path):
    path = tmp_path / "old.db"
    with sqlite3.connect(path) as raw:
        MIGRATIONS[0](sqlite_utils.Database(raw))
        raw.execute("PRAGMA user_version = 1")
        assert not U.has_usage(raw)
    store = Ledger(path)
    try:
        assert U.has_usage(store.db.conn)
        indexes = {r[1] for r in store.db.execute("PRAGMA index_list(usage)").fetchall()}
        assert {"usage_at", "usage_time", "usage_agent", "usage_flagged"} <= indexes
        # Meeting the step again changes nothing (it is written with IF NOT EXISTS).
        migrate(store.db)
        store.db.execute("PRAGMA user_version = 1")
        migrate(store.db)
    finally:
        store.close()


# -- sync and dedupe --------------------------------------------------------------------------


def test_sync_dedupes_a_charge_held_with_the_same_facts(ledger: Ledger):
    first = sync_usage(
        ledger, [charge("ch_1", "0.01", None), charge("ch_2", "0.02", None)], service=SERVICE
    )
    assert (first.received, first.inserted, first.conflicts, first.unchanged) == (2, 2, 0, 0)

    again = sync_usage(
        ledger, [charge("ch_1", "0.01", None), charge("ch_2", "0.02", None)], service=SERVICE
    )
    assert (again.inserted, again.conflicts, again.unchanged) == (0, 0, 2)
    assert U.count(ledger.db.conn, UsageFilter()) == 2

    # A page that lists one charge twice stores it once.
    twice = sync_usage(
        ledger, [charge("ch_3", "0.03", None), charge("ch_3", "0.03", None)], service=SERVICE
    )
    assert (twice.received, twice.inserted) == (2, 1)
    assert U.count(ledger.db.conn, UsageFilter()) == 3
    assert {r.service for r in U.window(ledger.db.conn, UsageFilter(), 0, 10)} == {SERVICE}


def test_a_charge_whose_text_holds_nul_is_stored_found_and_held_on_each_engine(
    ledger: Ledger, engine: str
):
    """PostgreSQL's text cannot hold NUL, which a service's text may carry: the charge is stored
    (with U+FFFD in its place there), is the same charge at the next sync, and a filter on the
    text as the service sent it finds it. Nothing else of the history is lost."""
    hostile = "prov_\x00nul"
    charges = [
        charge("ch_nul", "0.01", None, provider=hostile, agent="bot\x00"),
        charge("ch_plain", "0.02", None, provider="prov_plain"),
    ]
    first = sync_usage(ledger, charges, service=SERVICE)
    assert (first.inserted, first.conflicts) == (2, 0)
    again = sync_usage(ledger, charges, service=SERVICE)
    assert (again.inserted, again.conflicts, again.unchanged) == (0, 0, 2)
    stored = "prov_\ufffdnul" if engine == "postgresql" else hostile
    assert row(ledger, "ch_nul").provider == stored
    found = U.window(ledger.db.conn, UsageFilter(provider=hostile), 0, 10)
    assert [r.id for r in found] == ["ch_nul"]
    assert U.count(ledger.db.conn, UsageFilter()) == 2
    report = verify(ledger.path, url=ledger.url)  # the chain sealed what was stored
    assert report.intact, (report.broken, report.problems)


def test_sync_is_all_or_nothing(ledger: Ledger):
    def failing() -> Iterator[UsageCharge]:
        yield charge("ch_1", "0.01", None)
        raise RuntimeError("the page broke off")

    with pytest.raises(RuntimeError):
        sync_usage(ledger, failing(), service=SERVICE)
    assert U.count(ledger.db.conn, UsageFilter()) == 0


def test_a_charge_carries_who_decided_as_the_console_observed_it(ledger: Ledger):
    by_cli = Evidence(channel="cli", uid=1000, pid=4242, process="svc-console")
    by_rule = Evidence(channel="policy", rule="small searches", policy_version="ab" * 32)
    keys = [executed(ledger, "req_a", evidence=by_cli), executed(ledger, "req_b", evidence=by_rule)]
    sync_usage(
        ledger, [charge("ch_1", "0.01", keys[0]), charge("ch_2", "0.01", keys[1])], service=SERVICE
    )
    assert row(ledger, "ch_1").decided_by == "cli · uid 1000 · pid 4242 (svc-console)"
    assert row(ledger, "ch_2").decided_by == "policy rule small searches · policy abababababab"


def test_a_charge_is_joined_with_its_request_and_decision(ledger: Ledger):
    key = executed(ledger, "req_a", ceiling="0.05", agent="pricing-bot", provider="prov_p")
    result = sync_usage(ledger, [charge("ch_1", "0.04", key)], service=SERVICE)
    assert result.flagged == 0
    stored = row(ledger, "ch_1")
    assert stored.state == Reconciled.ok and stored.flag is None
    assert stored.request_id == "req_a"
    assert stored.decision == "approved" and stored.decided_by == "operator"
    assert stored.ceiling_usdc == Decimal("0.05") and stored.amount_usdc == Decimal("0.04")
    # What the service left out comes from the ledger's request.
    assert (stored.agent, stored.provider, stored.domain_type) == ("pricing-bot", "prov_p", "A7")


def test_what_the_ledger_filled_in_is_not_a_change_on_the_next_sync(ledger: Ledger):
    key = executed(ledger, "req_a", agent="pricing-bot", provider="prov_p")
    sync_usage(ledger, [charge("ch_1", "0.04", key)], service=SERVICE)
    assert row(ledger, "ch_1").agent == "pricing-bot"
    again = sync_usage(ledger, [charge("ch_1", "0.04", key)], service=SERVICE)
    assert (again.inserted, again.conflicts, again.unchanged) == (0, 0, 1)
    # A real change (the amount) is another version, kept beside the first, which stays as it was.
    changed = sync_usage(ledger, [charge("ch_1", "0.06", key)], service=SERVICE)
    assert changed.conflicts == 1 and changed.flagged == 1
    first, second = U.versions(ledger.db.conn, "ch_1")
    assert (first.state, first.amount_usdc, first.agent) == (
        Reconciled.ok,
        Decimal("0.04"),
        "pricing-bot",
    )
    assert (second.state, second.version, second.request_id) == (Reconciled.conflict, 2, "req_a")


def test_what_the_service_reports_is_kept_over_the_ledger(ledger: Ledger):
    key = executed(ledger, "req_a", agent="pricing-bot", provider="prov_p")
    sync_usage(
        ledger,
        [charge("ch_1", "0.01", key, agent="svc-account", provider="prov_q")],
        service=SERVICE,
    )
    stored = row(ledger, "ch_1")
    assert (stored.agent, stored.provider) == ("svc-account", "prov_q")


# -- reconciliation flags ---------------------------------------------------------------------


def test_a_charge_no_approval_covers_is_flagged(ledger: Ledger):
    result = sync_usage(
        ledger,
        [charge("ch_1", "0.01", "req_nobody-1"), charge("ch_2", "0.01", None)],
        service=SERVICE,
    )
    assert result.flagged == 2
    unknown, keyless = row(ledger, "ch_1"), row(ledger, "ch_2")
    assert (unknown.state, unknown.flag) == (Reconciled.uncovered, "no_request")
    assert (keyless.state, keyless.flag) == (Reconciled.uncovered, "no_key")
    assert unknown.request_id is None and unknown.decision is None
    assert "no request in the ledger" in (unknown.flag_text or "")


def test_a_charge_above_the_approved_ceiling_is_flagged(ledger: Ledger):
    key = executed(ledger, "req_a", ceiling="0.05")
    sync_usage(ledger, [charge("ch_1", "0.050001", key)], service=SERVICE)
    stored = row(ledger, "ch_1")
    assert (stored.state, stored.flag) == (Reconciled.over, "above_ceiling")
    assert stored.request_id == "req_a" and stored.ceiling_usdc == Decimal("0.05")

    # Exactly the ceiling is within what was approved.
    key = executed(ledger, "req_b", ceiling="0.05")
    sync_usage(ledger, [charge("ch_2", "0.05", key)], service=SERVICE)
    assert row(ledger, "ch_2").state == Reconciled.ok


def test_a_second_charge_on_one_approval_is_flagged_whatever_the_sync_order(ledger: Ledger):
    key = executed(ledger, "req_a")
    later = charge("ch_late", "0.01", key, at="2026-05-28T11:00:00Z")
    earlier = charge("ch_early", "0.01", key, at="2026-05-28T10:00:00Z")
    sync_usage(ledger, [later], service=SERVICE)
    assert row(ledger, "ch_late").state == Reconciled.ok
    # The earlier charge arrives in a later sync: it is the one the approval covers.
    sync_usage(ledger, [earlier], service=SERVICE)
    assert row(ledger, "ch_early").state == Reconciled.ok
    assert (row(ledger, "ch_late").state, row(ledger, "ch_late").flag) == (
        Reconciled.uncovered,
        "duplicate",
    )


def test_recheck_clears_a_flag_once_the_ledger_knows_the_execution(ledger: Ledger):
    # Synced before the ledger had the execution (e.g. a charge seen from another console).
    sync_usage(ledger, [charge("ch_1", "0.01", "req_a-1")], service=SERVICE)
    assert row(ledger, "ch_1").state == Reconciled.uncovered
    executed(ledger, "req_a")
    assert recheck_flagged(ledger) == 0
    assert row(ledger, "ch_1").state == Reconciled.ok
    assert U.totals(ledger.db.conn, UsageFilter(state="flagged")).count == 0


def test_reconcile_rules():
    match = LedgerMatch("r", "a", None, None, approved=True, decided_by="op", ceiling=100)
    assert reconcile(100, match) == (Reconciled.ok, None)
    assert reconcile(101, match) == (Reconciled.over, "above_ceiling")
    denied = LedgerMatch("r", "a", None, None, approved=False, decided_by="op", ceiling=None)
    assert reconcile(1, denied) == (Reconciled.uncovered, "not_approved")
    undecided = LedgerMatch("r", "a", None, None, approved=None, decided_by=None, ceiling=None)
    assert reconcile(1, undecided) == (Reconciled.uncovered, "not_approved")
    no_ceiling = LedgerMatch("r", "a", None, None, approved=True, decided_by="op", ceiling=None)
    assert reconcile(1, no_ceiling) == (Reconciled.over, "no_ceiling")
    assert reconcile(1, None) == (Reconciled.uncovered, "no_request")
    assert reconcile(1, None, has_key=False) == (Reconciled.uncovered, "no_key")


def test_wire_times_and_amounts():
    c = charge("ch_1", "0.010000", None, at="2026-05-28T10:00:00.5+02:00")
    assert c.at == 1_779_955_200.5  # 08:00:00.5 UTC
    assert charge("ch_2", "1", None, at=1_779_955_200).at == 1_779_955_200.0
    assert c.model_dump(mode="json")["createdAt"] == "2026-05-28T08:00:00.500000Z"
    assert c.model_dump(mode="json")["amountUsdc"] == "0.01"
    with pytest.raises(ValueError, match="ISO-8601"):
        charge("ch_3", "1", None, at="yesterday")
    with pytest.raises(ValueError, match="decimals"):
        charge("ch_4", "0.0000001", None)


# -- queries over a seeded history ------------------------------------------------------------


@pytest.fixture(scope="module")
def seeded(
    request: pytest.FixtureRequest, engine: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[sqlite3.Connection]:
    url = url_for(request, engine)
    path = tmp_path_factory.mktemp("usage") / "ledger.db"
    seed_usage(path, SEEDED, days=60, url=url)
    conn = open_reader(path, url)
    yield conn
    conn.close()


@pytest.fixture(scope="module")
def everything(seeded: sqlite3.Connection) -> list[U.UsageRow]:
    """Every row, newest first, the slow way: what the queries must agree with."""
    rows = [U.UsageRow(*r) for r in seeded.execute(f"SELECT {U._SELECT} FROM usage")]
    return sorted(rows, key=lambda r: (r.at, r.seq), reverse=True)


def matches(r: U.UsageRow, f: UsageFilter) -> bool:
    return (
        (f.since is None or r.at >= f.since)
        and (f.until is None or r.at < f.until)
        and all(
            getattr(f, c) is None or getattr(r, c) == getattr(f, c)
            for c in ("agent", "provider", "chain", "domain_type")
        )
        and (
            f.state is None
            or (f.state == "flagged" and r.flagged)
            or (f.state != "flagged" and r.state == f.state)
        )
    )


def filters(everything: list[U.UsageRow]) -> list[UsageFilter]:
    newest = everything[0]
    busiest = Counter(r.provider for r in everything).most_common(1)[0][0]
    week = (day_of(newest.at) - 6) * DAY_S
    return [
        UsageFilter(),
        UsageFilter(since=week),
        UsageFilter(since=week - 14 * DAY_S, until=week),
        UsageFilter(agent=newest.agent),
        UsageFilter(provider=busiest),
        UsageFilter(chain="base"),
        UsageFilter(domain_type=newest.domain_type),
        UsageFilter(state="flagged"),
        UsageFilter(state="ok"),
        UsageFilter(state="uncovered"),
        UsageFilter(state="over"),
        UsageFilter(since=week, agent=newest.agent, state="ok"),
        UsageFilter(agent="nobody"),
    ]


def test_seeded_history_is_deterministic_and_has_flags(everything: list[U.UsageRow]):
    assert len(everything) == SEEDED
    digest = hashlib.sha256(repr(list(seeded_charges(200))).encode()).hexdigest()
    assert digest == hashlib.sha256(repr(list(seeded_charges(200))).encode()).hexdigest()
    assert list(seeded_charges(50, seed=1)) != list(seeded_charges(50, seed=2))
    states = Counter(r.state for r in everything)
    assert states["uncovered"] and states["over"] and states["ok"] > 900
    assert len({r.id for r in everything}) == SEEDED


def test_counts_and_totals_under_every_filter(seeded, everything):
    for f in filters(everything):
        expected = [r for r in everything if matches(r, f)]
        assert U.count(seeded, f) == len(expected), f
        totals = U.totals(seeded, f)
        flagged = [r for r in expected if r.flagged]
        assert totals == U.UsageTotals(
            len(expected),
            sum(r.amount for r in expected),
            len(flagged),
            sum(r.amount for r in flagged),
        ), f


def test_spend_per_day_provider_and_agent(seeded, everything):
    for f in filters(everything):
        expected = [r for r in everything if matches(r, f)]
        by_day: dict[int, list[int]] = defaultdict(lambda: [0, 0])
        for r in expected:
            by_day[day_of(r.at)][0] += 1
            by_day[day_of(r.at)][1] += r.amount
        days = U.per_day(seeded, f)
        if not expected:
            assert days == []
            continue
        # Every day from the first to the last, empty days included, summing to the totals.
        assert [d.key for d in days] == list(range(min(by_day), max(by_day) + 1))
        assert {d.key: [d.count, d.amount] for d in days if d.count} == dict(by_day)
        for column, query in (("provider", U.per_provider), ("agent", U.per_agent)):
            spent: dict[str, int] = defaultdict(int)
            count: Counter[str] = Counter()
            for r in expected:
                spent[getattr(r, column)] += r.amount
                count[getattr(r, column)] += 1
            top = sorted(spent, key=lambda k: (-spent[k], k))[:5]
            assert query(seeded, f, 5) == [U.SpendBucket(k, count[k], spent[k]) for k in top]


def test_windows_and_keyset_pages_agree_with_the_full_order(seeded, everything):
    for f in filters(everything):
        expected = [r for r in everything if matches(r, f)]
        n = len(expected)
        for offset in (0, 7, n // 2, max(0, n - 5)):
            assert U.window(seeded, f, offset, 20) == expected[offset : offset + 20]
            # Counted from the end: the same rows, oldest first.
            tail = expected[::-1][offset : offset + 20]
            assert U.window(seeded, f, offset, 20, newest_first=False) == tail
        if n < 2:
            continue
        middle = n // 2
        assert U.after(seeded, f, expected[middle].key, 30) == expected[middle + 1 : middle + 31]
        assert (
            U.before(seeded, f, expected[middle].key, 30) == expected[max(0, middle - 30) : middle]
        )
        assert U.after(seeded, f, expected[-1].key, 30) == []
        assert U.before(seeded, f, expected[0].key, 30) == []


def test_stream_yields_everything_oldest_first_in_batches(seeded, everything):
    for f in (UsageFilter(), UsageFilter(state="flagged"), UsageFilter(agent="nobody")):
        expected = [r for r in everything if matches(r, f)][::-1]
        assert list(U.stream(seeded, f, batch=64)) == expected


def test_distinct_values_for_the_filters(seeded, everything):
    for column in U.FILTER_COLUMNS:
        assert U.distinct(seeded, column) == sorted({getattr(r, column) for r in everything})
    with pytest.raises(ValueError):
        U.distinct(seeded, "amount; DROP TABLE usage")


def test_ties_in_time_are_ordered_by_seq(ledger: Ledger):
    same = "2026-05-28T10:00:00Z"
    sync_usage(
        ledger, [charge(f"ch_{n}", "0.01", None, at=same) for n in range(5)], service=SERVICE
    )
    conn = ledger.db.conn
    rows = U.window(conn, UsageFilter(), 0, 10)
    assert [r.id for r in rows] == ["ch_4", "ch_3", "ch_2", "ch_1", "ch_0"]
    assert [r.id for r in U.after(conn, UsageFilter(), rows[1].key, 2)] == ["ch_2", "ch_1"]
    assert [r.id for r in U.before(conn, UsageFilter(), rows[3].key, 2)] == ["ch_3", "ch_2"]


def test_filter_validation():
    with pytest.raises(ValueError, match="state"):
        UsageFilter(state="pending")
    with pytest.raises(ValueError, match="after its start"):
        UsageFilter(since=10, until=10)
    assert UsageFilter().is_default and not UsageFilter(agent="a").is_default


# -- plans: every query is answered from an index ---------------------------------------------


def plan(conn: sqlite3.Connection, sql: str, params: list[object]) -> list[str]:
    return [r[3] for r in conn.execute(f"EXPLAIN QUERY PLAN {sql}", params)]


@pytest.mark.engines("sqlite")  # PostgreSQL's plans: test_postgres_pages_usage_through_indexes
@pytest.mark.parametrize(
    "f",
    [
        UsageFilter(),
        UsageFilter(since=T0),
        UsageFilter(since=T0, until=T0 + DAY_S),
        UsageFilter(agent="a"),
        UsageFilter(provider="p"),
        UsageFilter(chain="base"),
        UsageFilter(domain_type="A7"),
        UsageFilter(state="flagged"),
        UsageFilter(state="over"),
    ],
    ids=lambda f: ",".join(f"{k}" for k, v in vars(f).items() if v is not None) or "none",
)
def test_query_plans_use_indexes(seeded: sqlite3.Connection, f: UsageFilter):
    sql, params = U.where(f)
    window = f"SELECT {U._SELECT} FROM usage WHERE {sql} {U._NEWEST} LIMIT 60 OFFSET 100"
    keyset = (
        f"SELECT {U._SELECT} FROM usage WHERE {sql} AND at <= ? AND (at < ? OR seq < ?)"
        f" {U._NEWEST} LIMIT 60"
    )
    statements = {
        "window": (window, params),
        "keyset": (keyset, [*params, T0, T0, 5]),
        "count": (f"SELECT count(*) FROM usage WHERE {sql}", params),
        "totals": (f"SELECT count(*), sum(amount) FROM usage WHERE {sql}", params),
        "flagged": (f"SELECT count(*), sum(amount) FROM usage WHERE {sql} AND flagged = 1", params),
        "day": (
            f"SELECT count(*), sum(amount) FROM usage WHERE {U.where(f, times=False)[0]}"
            " AND at >= ? AND at < ?",
            [*U.where(f, times=False)[1], T0, T0 + DAY_S],
        ),
    }
    for name, (statement, args) in statements.items():
        steps = plan(seeded, statement, args)
        assert not any(s == "SCAN usage" for s in steps), (name, steps)
        assert any("INDEX" in s for s in steps), (name, steps)
        if name in ("window", "keyset"):
            # Read in order: never a sort of every matching row (a tie-break sort of rows that
            # share one instant is fine).
            assert "USE TEMP B-TREE FOR ORDER BY" not in steps, (name, steps)
    if (
        f.since is None
        and f.state is None
        and not any(getattr(f, c) for c in ("chain", "domain_type"))
    ):
        # Without a filter that needs the table's rows, the sums never leave the index.
        totals = plan(seeded, statements["totals"][0], statements["totals"][1])
        assert any("COVERING INDEX" in s for s in totals), totals
    for column in ("provider", "agent"):
        grouped = plan(
            seeded,
            f"SELECT {column}, count(*), sum(amount) AS spent FROM usage GROUP BY {column}",
            [],
        )
        assert grouped == [f"SCAN usage USING COVERING INDEX usage_{column}"]


def _postgres_nodes(conn: Any, sql: str, params: list[object]) -> list[dict[str, Any]]:
    """PostgreSQL's plan, flattened, with sorts and whole-table reads priced out: whether an
    index can give the rows in their order at all (not what a planner guesses is cheapest on a
    thousand rows)."""
    conn.execute("BEGIN")
    try:
        conn.execute("SET LOCAL enable_seqscan = off")
        conn.execute("SET LOCAL enable_sort = off")
        ((plan,),) = conn.execute(f"EXPLAIN (FORMAT JSON) {sql}", params).fetchall()
    finally:
        conn.execute("ROLLBACK")
    nodes, todo = [], [plan[0]["Plan"]]
    while todo:
        node = todo.pop()
        nodes.append(node)
        todo += node.get("Plans", [])
    return nodes


@pytest.mark.engines("postgresql")
@pytest.mark.parametrize(
    "f",
    [
        UsageFilter(),
        UsageFilter(since=T0, until=T0 + DAY_S),
        UsageFilter(agent="a"),
        UsageFilter(provider="p"),
        UsageFilter(chain="base"),
        UsageFilter(state="flagged"),
    ],
    ids=lambda f: ",".join(f"{k}" for k, v in vars(f).items() if v is not None) or "none",
)
def test_postgres_pages_usage_through_indexes(seeded: Any, f: UsageFilter):
    """On PostgreSQL the usage pages (by offset and by key) are read in order from an index of
    the usage table: never a sort of every matching row."""
    sql, params = U.where(f)
    for statement, args in (
        (f"SELECT {U._SELECT} FROM usage WHERE {sql} {U._NEWEST} LIMIT 60 OFFSET 100", params),
        (
            f"SELECT {U._SELECT} FROM usage WHERE {sql} AND at <= ? AND (at < ? OR seq < ?)"
            f" {U._NEWEST} LIMIT 60",
            [*params, T0, T0, 5],
        ),
    ):
        nodes = _postgres_nodes(seeded, statement, args)
        scans = [n for n in nodes if n.get("Relation Name") == "usage"]
        assert scans and all("Index" in n["Node Type"] for n in scans), nodes
        assert not [n for n in nodes if n["Node Type"] == "Sort"], nodes
