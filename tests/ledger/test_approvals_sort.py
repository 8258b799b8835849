"""The approvals screen's lists sorted in SQL: every order of the pending list, both ways, gives the
order of sorting every row in Python as the list always has (the estimate's amount_usdc, NULLs
last; ties by creation time, then id), its pages line up, each page is read through a partial
index of schema `_v5` with no sort (EXPLAIN QUERY PLAN), the ledger keeps the estimate's amount
column with the estimate, and a ledger of the previous schema gains the column, filled, on opening.

Everything runs on a real ledger file written through the ledger's own API."""

from __future__ import annotations

import contextlib
import json
import sqlite3
import string
from collections.abc import Callable, Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import sqlite_utils
from postgres import url_for

from svc_console.core.models import Decision, Estimate, RiskFlag, Severity, SpendRequest, Verdict
from svc_console.core.money import to_atomic
from svc_console.core.states import State
from svc_console.ledger import Ledger
from svc_console.ledger.request_windows import RequestQuery
from svc_console.ledger.schema import MIGRATIONS, migrate
from svc_console.tui.request_lists import (
    HISTORY_LIST,
    PAGE_SIZE,
    PENDING,
    Filter,
    ListKind,
    ListState,
)

T0 = 1_790_000_000.0
PENDING_COUNT = 317  # six full pages and a short one
HISTORY_COUNT = 40
# Agents equal but for ASCII case (tied under NOCASE, so creation time and id decide), and
# letters outside ASCII, which NOCASE leaves as they are.
AGENTS = ("alpha-bot", "Alpha-bot", "beta-bot", "ALPHA-BOT", "\u00c9mile-bot", "zeta", "\u00e9mile")
# Amounts at USDC's edges (the smallest unit, the largest amount, decimals a float spells
# inexactly); the rest repeat, so most amounts are ties.
EDGE_AMOUNTS = {
    0: "0",
    1: "0.000001",
    2: "999999.999999",
    3: "1000000",
    4: "0.29",
    5: "123456.789012",
    6: "0.1",
}
NO_ESTIMATE = frozenset({9, 70, 171, PENDING_COUNT + 3})  # pending and history rows, unpriced
FROM_VERSION = 4  # the schema before the estimate's amount column
V5_INDEXES = {
    "created": "requests_pending_created",
    "amount": "requests_pending_amount",
    "expires": "requests_pending_expires",
    "agent": "requests_pending_agent",
}
FILTERS = {
    "none": Filter(),
    "text": Filter(text="alpha"),
    "risk": Filter(risk="high"),
    "verdict": Filter(verdict="ask"),
}


def _amount(n: int) -> Decimal:
    return Decimal(EDGE_AMOUNTS.get(n) or Decimal((n * 7) % 13 + 1) / 100)


def _seed(ledger: Ledger, pending: int, history: int) -> None:
    """`pending` requests waiting for the operator and `history` decided ones, as the broker
    writes them: received, inspecting, then pending (with an estimate, risk flags and a verdict)
    or denied by a rule. Three requests share each second, and ids do not follow creation."""
    for n in range(pending + history):
        request_id = f"req_{(n * 7919) % 10007:05d}"
        created = T0 + n // 3
        ledger.insert_request(
            SpendRequest(
                id=request_id,
                agent=AGENTS[n % len(AGENTS)],
                kind="market_call",
                endpoint_id="ep_websearch_basic",
                inputs={"query": f"topic {n}"},
                purpose=f"background {n}",
                state=State.received,
                created_at=created,
                updated_at=created,
            )
        )
        ledger.transition(request_id, State.inspecting, at=created)
        learned: dict[str, Any] = {
            "risk": [RiskFlag(code="input_secret", severity=Severity.high, reason="a key")]
            if n % 5 == 0
            else [],
            "verdict": Verdict(outcome="ask" if n < pending else "deny", summary="seeded"),
        }
        if n not in NO_ESTIMATE:
            learned["estimate"] = Estimate(amount_usdc=_amount(n), chain="base", protocol="x402")
        if n < pending:
            expires = T0 + 900 + (n * 11) % 17
            ledger.transition(request_id, State.pending, at=created, expires_at=expires, **learned)
        else:
            ledger.transition(
                request_id, State.denied, at=created + (n * 13) % 7, reason="a rule", **learned
            )


@pytest.fixture(scope="module")
def ledger(
    request: pytest.FixtureRequest, engine: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Ledger]:
    url = url_for(request, engine)
    store = Ledger(tmp_path_factory.mktemp("sort") / "ledger.db", url=url)
    try:
        _seed(store, PENDING_COUNT, HISTORY_COUNT)
        yield store
    finally:
        store.close()


# -- the order of old: every row read and sorted in Python --------------------------------------


def _rows(ledger: Ledger, kind: ListKind) -> list[dict[str, Any]]:
    """Every row of a list with what its sorts and filters read, the amount from the estimate's
    JSON (not from the column under test)."""
    marks = ",".join("?" * len(kind.states))
    cursor = ledger.db.execute(
        "SELECT id, agent, created_at, updated_at, expires_at, estimate, risk, verdict,"
        f" endpoint_id FROM requests WHERE state IN ({marks})",
        [str(state) for state in kind.states],
    )
    rows = []
    for row in cursor.fetchall():
        request_id, agent, created, updated, expires, estimate, risk, verdict, endpoint = row
        rows.append(
            {
                "id": request_id,
                "agent": agent,
                "created_at": created,
                "updated_at": updated,
                "expires_at": expires,
                "amount": Decimal(json.loads(estimate)["amount_usdc"]) if estimate else None,
                "severities": {flag["severity"] for flag in json.loads(risk or "[]")},
                "verdict": json.loads(verdict)["outcome"] if verdict else None,
                "endpoint_id": endpoint,
            }
        )
    return rows


_ASCII_LOWER = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)
KEYS: dict[str, Callable[[dict[str, Any]], Any]] = {
    "updated": lambda row: row["updated_at"],
    "expires": lambda row: row["expires_at"],
    # SQLite's NOCASE folds ASCII letters only.
    "agent": lambda row: row["agent"].translate(_ASCII_LOWER),
}


def _sorted_ids(rows: list[dict[str, Any]], order: str, descending: bool) -> list[str]:
    """The list's order as it was defined: by the key, then creation time, then id, all in the
    one direction; requests without an estimate last by amount either way."""

    def ties(row: dict[str, Any]) -> tuple[float, str]:
        return (row["created_at"], row["id"])

    if order == "created":
        ordered = sorted(rows, key=ties, reverse=descending)
    elif order == "amount":
        priced = [row for row in rows if row["amount"] is not None]
        unpriced = [row for row in rows if row["amount"] is None]
        ordered = sorted(priced, key=lambda r: (r["amount"], *ties(r)), reverse=descending)
        ordered += sorted(unpriced, key=ties, reverse=descending)
    else:
        assert all(KEYS[order](row) is not None for row in rows)
        ordered = sorted(rows, key=lambda r: (KEYS[order](r), *ties(r)), reverse=descending)
    return [row["id"] for row in ordered]


def _matches(row: dict[str, Any], wanted: Filter) -> bool:
    if wanted.text and wanted.text.lower() not in f"{row['agent']} {row['endpoint_id']}".lower():
        return False
    if wanted.risk == "high" and "high" not in row["severities"]:
        return False
    return wanted.verdict is None or row["verdict"] == wanted.verdict


def _list_state(kind: ListKind, key: str, descending: bool) -> ListState:
    """The screen's own list state, sorted by `key` in the direction asked."""
    state = ListState(kind)
    assert state.sort_by(key)
    if state.descending != descending:
        state.reverse()
    return state


def _every_page(ledger: Ledger, state: ListState, wanted: Filter) -> list[str]:
    """The ids of every page of a list, turned as the screen turns them."""
    query = state.query(wanted)
    state.settle(ledger.count(query))
    shown: list[str] = []
    while True:
        page = ledger.window(query, offset=state.offset, limit=PAGE_SIZE)
        assert len(page) == PAGE_SIZE or state.page == state.pages - 1
        shown += [request.id for request in page]
        if not state.turn(1):
            return shown


SORTS = [
    (kind, option.key, descending)
    for kind in (PENDING, HISTORY_LIST)
    for option in kind.sorts
    for descending in (False, True)
]


@pytest.mark.parametrize(
    ("kind", "key", "descending"),
    SORTS,
    ids=[f"{kind.name}-{key}-{'desc' if d else 'asc'}" for kind, key, d in SORTS],
)
def test_each_sort_pages_through_the_order_of_sorting_every_row(
    ledger: Ledger, kind: ListKind, key: str, descending: bool
):
    state = _list_state(kind, key, descending)
    expected = _sorted_ids(_rows(ledger, kind), state.sort.order, descending)
    assert len(expected) == (PENDING_COUNT if kind is PENDING else HISTORY_COUNT)

    shown = _every_page(ledger, state, Filter())

    assert shown == expected  # every request once, none missing, in the one order
    assert state.total == len(expected)


@pytest.mark.parametrize("name", ["text", "risk", "verdict"])
@pytest.mark.parametrize("key", [option.key for option in PENDING.sorts])
def test_a_filtered_pending_list_keeps_the_order(ledger: Ledger, key: str, name: str):
    wanted = FILTERS[name]
    for descending in (False, True):
        state = _list_state(PENDING, key, descending)
        rows = [row for row in _rows(ledger, PENDING) if _matches(row, wanted)]
        assert rows
        assert _every_page(ledger, state, wanted) == _sorted_ids(rows, state.sort.order, descending)


def test_requests_without_an_estimate_come_last_both_ways(ledger: Ledger):
    unpriced = {
        request_id
        for (request_id,) in ledger.db.execute(
            "SELECT id FROM requests WHERE state = 'pending' AND estimate IS NULL"
        ).fetchall()
    }
    assert len(unpriced) == 3
    for descending in (False, True):
        shown = _every_page(ledger, _list_state(PENDING, "amount", descending), Filter())
        assert set(shown[-len(unpriced) :]) == unpriced


# -- the plans ------------------------------------------------------------------------------------


def _page_statement(
    ledger: Ledger, query: RequestQuery, monkeypatch: pytest.MonkeyPatch
) -> tuple[str, list[Any]]:
    """The statement and parameters `Ledger.window` runs for a page's ids, as it runs them."""
    seen: list[tuple[str, list[Any]]] = []
    execute = ledger.db.execute

    def recording(sql: str, parameters: Any = None) -> sqlite3.Cursor:
        seen.append((sql, list(parameters or [])))
        return execute(sql, parameters)

    with monkeypatch.context() as patch:
        patch.setattr(ledger.db, "execute", recording)
        ledger.window(query, offset=2 * PAGE_SIZE, limit=PAGE_SIZE)
    statements = [(sql, args) for sql, args in seen if sql.startswith("SELECT id FROM requests")]
    assert len(statements) == 1, seen
    return statements[0]


PLANS = [
    (option.key, descending, name)
    for option in PENDING.sorts
    for descending in (False, True)
    for name in FILTERS
]


@pytest.mark.engines("sqlite")  # PostgreSQL's plans: test_postgres_walks_each_pending_index
@pytest.mark.parametrize(
    ("key", "descending", "name"),
    PLANS,
    ids=[f"{key}-{'desc' if d else 'asc'}-{name}" for key, d, name in PLANS],
)
def test_each_pending_sort_walks_its_index_without_sorting(
    ledger: Ledger, key: str, descending: bool, name: str, monkeypatch: pytest.MonkeyPatch
):
    state = _list_state(PENDING, key, descending)
    sql, args = _page_statement(ledger, state.query(FILTERS[name]), monkeypatch)
    steps = [row[3] for row in ledger.db.execute(f"EXPLAIN QUERY PLAN {sql}", args).fetchall()]

    assert not [step for step in steps if "TEMP B-TREE" in step], steps
    index = V5_INDEXES[state.sort.order]
    table_steps = [step for step in steps if step.startswith(("SCAN requests", "SEARCH requests"))]
    assert table_steps and all(index in step for step in table_steps), steps
    if name == "none":
        # Nothing to check but the index's own columns: the page's ids never leave the index.
        assert table_steps == [f"SEARCH requests USING COVERING INDEX {index} (state=?)"], steps


def _postgres_plan(ledger: Ledger, sql: str, args: list[Any]) -> dict[str, Any]:
    """PostgreSQL's plan of a page, with sorting and whole-table scans priced out: a ledger is
    never ANALYZEd, so on a few hundred rows the planner would rather read the table; what is
    asked here is whether an index can give the page in its order, with no sort."""
    with ledger.db.atomic():
        ledger.db.execute("SET LOCAL enable_seqscan = off")
        ledger.db.execute("SET LOCAL enable_sort = off")
        (plan,) = ledger.db.execute(f"EXPLAIN (FORMAT JSON) {sql}", args).fetchone()
    return plan[0]["Plan"]


def _nodes(plan: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield plan
    for child in plan.get("Plans", ()):
        yield from _nodes(child)


@pytest.mark.engines("postgresql")
@pytest.mark.parametrize(
    ("key", "descending", "name"),
    PLANS,
    ids=[f"{key}-{'desc' if d else 'asc'}-{name}" for key, d, name in PLANS],
)
def test_postgres_walks_each_pending_index(
    ledger: Ledger, key: str, descending: bool, name: str, monkeypatch: pytest.MonkeyPatch
):
    """On PostgreSQL each order of the pending list is read through its partial index, in order;
    the amount newest-first through one of its own (its NULLs last, `pg_dialect`)."""
    state = _list_state(PENDING, key, descending)
    sql, args = _page_statement(ledger, state.query(FILTERS[name]), monkeypatch)
    nodes = list(_nodes(_postgres_plan(ledger, sql, args)))
    scans = [node for node in nodes if node.get("Relation Name") == "requests"]
    sorted_here = [node for node in nodes if "Sort" in node["Node Type"]]
    index = V5_INDEXES[state.sort.order]
    if key == "amount" and descending:
        index = "requests_pending_amount_desc"
    assert scans and all(node.get("Index Name") == index for node in scans), nodes
    assert not sorted_here, nodes


# -- the column beside the estimate ---------------------------------------------------------------


def _stored_units(ledger: Ledger, request_id: str) -> int | None:
    row = ledger.db.execute(
        "SELECT estimate_usdc FROM requests WHERE id = ?", [request_id]
    ).fetchone()
    return row[0]


def _estimate(amount: str, **more: Any) -> Estimate:
    return Estimate(amount_usdc=Decimal(amount), chain="base", protocol="x402", **more)


def test_the_amount_column_follows_every_write_of_the_estimate(
    tmp_path: Path, ledger_url: str | None
):
    ledger = Ledger(tmp_path / "ledger.db", url=ledger_url)
    try:
        request = SpendRequest(
            id="req_a", agent="bot", kind="market_call", endpoint_id="ep", inputs={},
            purpose="p", state=State.received, created_at=T0, updated_at=T0,
        )  # fmt: skip
        ledger.insert_request(request)
        assert _stored_units(ledger, "req_a") is None
        ledger.transition("req_a", State.inspecting, at=T0)
        # The amount, not the upper bound of a dynamic price, is what the list shows and sorts by.
        estimate = _estimate("0.05", min_usdc=Decimal("0.01"), max_usdc=Decimal("0.2"))
        ledger.transition("req_a", State.pending, at=T0, estimate=estimate, expires_at=T0 + 60)
        assert _stored_units(ledger, "req_a") == 50_000
        # Approved, executed, repriced by the provider: back to the operator at the new price.
        decision = Decision(approved=True, by="op", at=T0 + 1, ceiling_usdc=Decimal("0.2"))
        decision_id = ledger.decide("req_a", decision, State.approved)
        execution = ledger.start_execution("req_a", decision_id, 1, "req_a-1", at=T0 + 2)
        ledger.finish_execution(execution, State.repriced, at=T0 + 3, error="price rose")
        assert _stored_units(ledger, "req_a") == 50_000  # state changes alone leave it
        ledger.transition("req_a", State.pending, at=T0 + 3, estimate=_estimate("0.3"))
        assert _stored_units(ledger, "req_a") == 300_000
        assert ledger.get("req_a").estimate == _estimate("0.3")

        # A request inserted with its estimate, and one whose estimate is cleared.
        priced = request.model_copy(update={"id": "req_b", "estimate": _estimate("999999.999999")})
        ledger.insert_request(priced)
        assert _stored_units(ledger, "req_b") == 999_999_999_999
        ledger.transition("req_b", State.inspecting, at=T0, estimate=None)
        assert _stored_units(ledger, "req_b") is None
    finally:
        ledger.close()


# -- upgrading a ledger of the previous schema ----------------------------------------------------


def _requests_schema(db: sqlite3.Connection) -> tuple[list[tuple], list[str]]:
    columns = db.execute("PRAGMA table_info(requests)").fetchall()
    indexes = sorted(row[1] for row in db.execute("PRAGMA index_list(requests)").fetchall())
    return columns, indexes


def _downgrade(path: Path) -> None:
    """Leave the file as the previous version would have: the same rows, written by the same
    ledger code but for the column, without the column and indexes `_v5` adds (and the columns of
    the steps after it)."""
    with contextlib.closing(sqlite3.connect(path)) as raw:
        for index in [*V5_INDEXES.values(), "requests_updated"]:
            raw.execute(f"DROP INDEX {index}")
        for table, column in (
            ("requests", "estimate_usdc"),
            ("requests", "agent_verified"),
            ("requests", "submitter"),
            ("decisions", "evidence"),
            ("requests", "broker"),
        ):
            raw.execute(f"ALTER TABLE {table} DROP COLUMN {column}")
        raw.execute(f"PRAGMA user_version = {FROM_VERSION}")
        raw.commit()
        with contextlib.closing(sqlite3.connect(":memory:")) as previous:
            for step in MIGRATIONS[:FROM_VERSION]:
                step(sqlite_utils.Database(previous))
            assert _requests_schema(raw) == _requests_schema(previous)


def _units_from_json(ledger: Ledger) -> dict[str, int | None]:
    rows = ledger.db.execute("SELECT id, estimate FROM requests").fetchall()
    return {
        request_id: to_atomic(Estimate.model_validate_json(estimate).amount_usdc)
        if estimate
        else None
        for request_id, estimate in rows
    }


def test_a_ledger_of_the_previous_schema_gains_the_column_filled(tmp_path: Path):
    path = tmp_path / "ledger.db"
    written = Ledger(path)
    try:
        _seed(written, 60, 12)
    finally:
        written.close()
    _downgrade(path)

    ledger = Ledger(path)
    try:
        version = ledger.db.execute("PRAGMA user_version").fetchone()[0]
        assert version == len(MIGRATIONS)
        stored = dict(ledger.db.execute("SELECT id, estimate_usdc FROM requests").fetchall())
        expected = _units_from_json(ledger)
        assert stored == expected
        assert None in stored.values() and 1_000_000_000_000 in stored.values()
        assert {0, 1, 290_000, 123_456_789_012, 999_999_999_999} <= set(stored.values())
        assert set(V5_INDEXES.values()) <= set(_requests_schema(ledger.db.conn)[1])
        for descending in (False, True):
            state = _list_state(PENDING, "amount", descending)
            rows = _rows(ledger, PENDING)
            assert _every_page(ledger, state, Filter()) == _sorted_ids(rows, "amount", descending)

        # Meeting the step again changes nothing.
        ledger.db.execute(f"PRAGMA user_version = {FROM_VERSION}")
        migrate(ledger.db)
        assert dict(ledger.db.execute("SELECT id, estimate_usdc FROM requests").fetchall()) == (
            stored
        )
        assert ledger.db.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)
    finally:
        ledger.close()
