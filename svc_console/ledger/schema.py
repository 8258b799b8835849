"""Tables of the ledger and their migrations (the schema version counts applied steps: SQLite's
PRAGMA user_version, a one-row table on PostgreSQL; `engine.Database.schema_version`).

Amounts are integer atomic USDC units (6 decimals). JSON columns hold the pydantic models' dumps.
"""

import functools
from collections.abc import Callable
from typing import Any

from svc_console.ledger import engine
from svc_console.ledger.engine import Database

SCHEMA_VERSION = 1


def _v1(db: Database) -> None:
    """The broker's record: requests, the decisions on them, the executions that paid, and the
    hash-chained event log. The text sqlite-utils wrote for these tables when this step was made
    with it, kept as it was so old and new ledgers hold one schema."""
    _v1_requests(db)
    _v1_decisions(db)
    _v1_executions(db)
    _v1_events(db)


def _v1_requests(db: Database) -> None:
    """What agents asked for, with what the broker learned about each request."""
    db.execute(
        """CREATE TABLE "requests" (
   "id" TEXT PRIMARY KEY,
   "agent" TEXT NOT NULL,
   "kind" TEXT NOT NULL,
   "endpoint_id" TEXT,
   "dataset_id" TEXT,
   "provider" TEXT,
   "inputs" TEXT NOT NULL,
   "purpose" TEXT NOT NULL,
   "max_usdc" INTEGER,
   "idempotency_key" TEXT,
   "state" TEXT NOT NULL,
   "reason" TEXT,
   "created_at" REAL NOT NULL,
   "updated_at" REAL NOT NULL,
   "expires_at" REAL,
   "endpoint" TEXT,
   "estimate" TEXT,
   "risk" TEXT,
   "verdict" TEXT,
   "skill" TEXT,
   "funding_url" TEXT
)"""
    )
    db.execute(
        "CREATE UNIQUE INDEX requests_idempotency ON requests(agent, idempotency_key)"
        " WHERE idempotency_key IS NOT NULL"
    )
    _index(db, "requests", "state", "expires_at")
    _index(db, "requests", "provider")
    _index(db, "requests", "created_at")


def _index(db: Database, table: str, *columns: str, unique: bool = False) -> None:
    """An index named as sqlite-utils names them (`idx_<table>_<columns>`)."""
    name = "_".join(("idx", table, *columns))
    listed = ", ".join(f'"{column}"' for column in columns)
    kind = "UNIQUE INDEX" if unique else "INDEX"
    db.execute(f'CREATE {kind} "{name}"\n    ON "{table}" ({listed})')


def _v1_decisions(db: Database) -> None:
    """Each approval or denial of a request, by the operator or a policy."""
    db.execute(
        """CREATE TABLE "decisions" (
   "id" INTEGER PRIMARY KEY,
   "request_id" TEXT NOT NULL REFERENCES "requests"("id"),
   "approved" INTEGER NOT NULL,
   "by" TEXT NOT NULL,
   "at" REAL NOT NULL,
   "ceiling_usdc" INTEGER,
   "note" TEXT
)"""
    )
    _index(db, "decisions", "request_id")


def _v1_executions(db: Database) -> None:
    """Each attempt to pay for an approved request, under its idempotency key."""
    db.execute(
        """CREATE TABLE "executions" (
   "id" INTEGER PRIMARY KEY,
   "request_id" TEXT NOT NULL REFERENCES "requests"("id"),
   "decision_id" INTEGER NOT NULL REFERENCES "decisions"("id"),
   "attempt" INTEGER NOT NULL,
   "idempotency_key" TEXT NOT NULL,
   "started_at" REAL NOT NULL,
   "finished_at" REAL,
   "status" TEXT,
   "charged_usdc" INTEGER,
   "chain" TEXT,
   "outcome" TEXT,
   "error" TEXT
)"""
    )
    _index(db, "executions", "idempotency_key", unique=True)
    _index(db, "executions", "request_id")


def _v1_events(db: Database) -> None:
    """The event log, each row hash-chained to the one before it (`ledger/audit.py`)."""
    db.execute(
        """CREATE TABLE "events" (
   "seq" INTEGER PRIMARY KEY,
   "at" REAL NOT NULL,
   "request_id" TEXT,
   "type" TEXT NOT NULL,
   "data" TEXT NOT NULL,
   "prev_hash" TEXT NOT NULL,
   "hash" TEXT NOT NULL
)"""
    )


def _v2(db: Database) -> None:
    """Policies: each policy version seen, budget reservations and the running totals per bucket
    by minute, hour and day (ledger/budgets.py, ledger/policy_versions.py). Approvals recorded
    before this step are counted in the totals here, once, so upgrading never forgets spend a
    budget must see.

    Written with IF NOT EXISTS, like _v3, while the migrations of parallel work are put in order."""
    db.execute(
        """CREATE TABLE IF NOT EXISTS policy_versions (
            id INTEGER PRIMARY KEY,
            path TEXT NOT NULL,
            sha256 TEXT NOT NULL,
            at REAL NOT NULL,
            saved_by TEXT,
            valid INTEGER NOT NULL,
            error TEXT,
            text TEXT NOT NULL
        )"""
    )
    db.execute("CREATE INDEX IF NOT EXISTS policy_versions_path ON policy_versions(path, id)")
    db.execute(
        """CREATE TABLE IF NOT EXISTS budget_reservations (
            id INTEGER PRIMARY KEY,
            request_id TEXT NOT NULL REFERENCES requests(id),
            decision_id INTEGER REFERENCES decisions(id),
            slot INTEGER NOT NULL,
            buckets TEXT NOT NULL,
            reserved_usdc INTEGER NOT NULL,
            settled_usdc INTEGER NOT NULL,
            state TEXT NOT NULL,
            at REAL NOT NULL,
            closed_at REAL
        )"""
    )
    db.execute(
        "CREATE INDEX IF NOT EXISTS budget_reservations_open"
        " ON budget_reservations(request_id, state)"
    )
    # Totals per bucket at three grains (60, 3600, 86400 s), each row stamped with the end of
    # its minute, hour or day; clustered by time so a start reads three ranges in order.
    db.execute(
        """CREATE TABLE IF NOT EXISTS budget_totals (
            grain INTEGER NOT NULL,
            at INTEGER NOT NULL,
            scope TEXT NOT NULL,
            key TEXT NOT NULL,
            reserved_usdc INTEGER NOT NULL DEFAULT 0,
            settled_usdc INTEGER NOT NULL DEFAULT 0,
            PRIMARY KEY (grain, at, scope, key)
        ) WITHOUT ROWID"""
    )
    from svc_console.ledger.budgets import backfill

    backfill(db)


def _v3(db: Database) -> None:
    """The synced usage history (ledger/usage_write.py writes it, ledger/usage_query.py reads it).

    Written with IF NOT EXISTS so the step is safe to meet twice while the migrations of parallel
    work are put in order. Every index serves a query of ledger/usage_query.py (checked with EXPLAIN
    QUERY PLAN in tests/ledger/test_usage_ledger.py). `usage_at` (at, then the rowid) gives the
    newest-first window in order, so even a deep OFFSET skips index entries, not rows; each filter
    column leads an index followed by `at`; `amount` rides along in `usage_time` and the agent and
    provider indexes so totals, spend per day and the breakdowns are read from the index alone."""
    db.execute(
        """CREATE TABLE IF NOT EXISTS usage (
            seq INTEGER PRIMARY KEY,
            id TEXT NOT NULL UNIQUE,
            at REAL NOT NULL,
            agent TEXT,
            kind TEXT NOT NULL,
            resource TEXT NOT NULL,
            provider TEXT,
            domain_type TEXT,
            chain TEXT NOT NULL,
            protocol TEXT NOT NULL,
            amount INTEGER NOT NULL,
            idempotency_key TEXT,
            receipt TEXT,
            request_id TEXT,
            decision TEXT,
            decided_by TEXT,
            ceiling INTEGER,
            state TEXT NOT NULL,
            flag TEXT,
            flagged INTEGER NOT NULL,
            fingerprint TEXT,
            synced_at REAL NOT NULL
        )"""
    )
    for name, columns in (
        ("usage_at", "at"),
        ("usage_time", "at, amount"),
        ("usage_agent", "agent, at, amount"),
        ("usage_provider", "provider, at, amount"),
        ("usage_chain", "chain, at"),
        ("usage_domain", "domain_type, at"),
        ("usage_flagged", "flagged, at"),
        ("usage_idempotency", "idempotency_key"),
    ):
        db.execute(f"CREATE INDEX IF NOT EXISTS {name} ON usage({columns})")


def _v4(db: Database) -> None:
    """The catalogue cache: market endpoints and dataset listings with their search indexes. The
    tables are defined in ledger/catalogue_schema.py; each index serves a query of
    ledger/catalogue_search.py."""
    from svc_console.ledger.catalogue_schema import create_tables

    if db.dialect == "sqlite":  # a cache of the market, kept in the local file (FTS5 trigrams)
        create_tables(db.conn)


def _v5(db: Database) -> None:
    """The pending list sorted in SQL by an index for each of its orders (ledger/request_windows.py
    `ORDERS`), so a sort reads the page on screen, not the queue.

    `estimate_usdc` is the estimate's `amount_usdc` (the figure the list shows and sorts by, not
    its upper bound) in atomic units, NULL without an estimate; the ledger writes it with the
    estimate (`Ledger._write_state`) and this step fills it for the rows already there (a decimal
    of at most 6 places and 1,000,000 USDC survives REAL exactly enough to round to its units).
    Each index is partial, holding pending requests only, so a long history neither grows nor
    slows them. It leads with `state`, constant in it, so that `state = ?` is an equality on it:
    without statistics (a ledger is never ANALYZEd) SQLite would otherwise rather look the
    pending requests up by (state, expires_at) and sort them. It ends with the tie-breakers
    (created_at, id), so a page's ids are read from the index alone (checked with EXPLAIN QUERY
    PLAN in tests/ledger/test_approvals_sort.py).

    Safe to meet twice, like _v2 to _v4: the column is added only when missing, indexes with IF
    NOT EXISTS, and filling again writes the same values."""
    columns = set(db.column_names("requests"))
    if "estimate_usdc" not in columns:
        db.execute("ALTER TABLE requests ADD COLUMN estimate_usdc INTEGER")
    db.execute(
        "UPDATE requests SET estimate_usdc = CAST(round("
        "CAST(json_extract(estimate, '$.amount_usdc') AS REAL) * 1000000) AS INTEGER)"
        " WHERE estimate IS NOT NULL"
    )
    for name, columns_sql in (
        ("requests_pending_created", "created_at, id"),
        ("requests_pending_amount", "estimate_usdc, created_at, id"),
        ("requests_pending_expires", "expires_at, created_at, id"),
        ("requests_pending_agent", "agent COLLATE NOCASE, created_at, id"),
    ):
        db.execute(
            f"CREATE INDEX IF NOT EXISTS {name} ON requests(state, {columns_sql})"
            " WHERE state = 'pending'"
        )


def _v6(db: Database) -> None:
    """Agents as identities and decisions as evidence: whether a request's agent proved its name,
    which process submitted it (JSON, `Submitter`), and who made each decision (JSON,
    `Evidence`). Safe to meet twice: a column is added only when missing."""
    for table, column, kind in (
        ("requests", "agent_verified", "INTEGER NOT NULL DEFAULT 0"),
        ("requests", "submitter", "TEXT"),
        ("decisions", "evidence", "TEXT"),
    ):
        if column not in db.column_names(table):
            db.execute(f"ALTER TABLE {table} ADD COLUMN {column} {kind}")


def _v7(db: Database) -> None:
    """Brakes: agents the circuit breaker paused (a row per pause, closed by the operator's
    resume; the current pauses are the open rows), and requests by the time of their last
    change, so the breaker's recent outcomes are read at start without a scan. Safe to meet
    twice."""
    db.execute(
        "CREATE TABLE IF NOT EXISTS agent_pauses (id INTEGER PRIMARY KEY, agent TEXT NOT NULL,"
        " paused_at REAL NOT NULL, reason TEXT NOT NULL, paused_by TEXT NOT NULL,"
        " resumed_at REAL, resumed_by TEXT, evidence TEXT)"
    )
    db.execute(
        "CREATE UNIQUE INDEX IF NOT EXISTS agent_pauses_open ON agent_pauses(agent)"
        " WHERE resumed_at IS NULL"
    )
    db.execute("CREATE INDEX IF NOT EXISTS requests_updated ON requests(updated_at)")


def _v8(db: Database) -> None:
    """Grants: an operator's decision that stands for a while for one agent and one endpoint,
    dataset or tool (policy/grants.py). `used_usdc` is what it approved, reserved and settled,
    kept with the budget reservations (ledger/budgets.py); an ended grant keeps its row, with when,
    by whom and why it ended. Safe to meet twice."""
    db.execute(
        "CREATE TABLE IF NOT EXISTS grants (id INTEGER PRIMARY KEY, agent TEXT NOT NULL,"
        " kind TEXT NOT NULL, target TEXT NOT NULL, effect TEXT NOT NULL,"
        " per_call_max_usdc INTEGER NOT NULL, total_usdc INTEGER, used_usdc INTEGER NOT NULL"
        " DEFAULT 0, expires_at REAL, created_at REAL NOT NULL, created_by TEXT NOT NULL,"
        " evidence TEXT, request_id TEXT NOT NULL, ended_at REAL, ended_by TEXT,"
        " ended_reason TEXT)"
    )
    db.execute("CREATE INDEX IF NOT EXISTS grants_open ON grants(id) WHERE ended_at IS NULL")


def _v9(db: Database) -> None:
    """The two-person rule: a first operator approval is an event of its own, read back by
    request. Indexed only for that kind, so the chain's other events cost nothing more."""
    db.execute(
        "CREATE INDEX IF NOT EXISTS events_operator_approvals ON events(request_id, seq)"
        " WHERE type = 'operator_approval'"
    )


def _v10(db: Database) -> None:
    """Several brokers on one PostgreSQL ledger (`shared`): which broker answers for each
    unfinished request and made each grant (one lasting until its broker stops), and the budget
    changes each broker commits, for the others to follow. SQLite's single broker writes none.
    Safe to meet twice."""
    for table in ("requests", "grants"):
        if "broker" not in db.column_names(table):
            db.execute(f"ALTER TABLE {table} ADD COLUMN broker INTEGER")
    db.execute(
        "CREATE TABLE IF NOT EXISTS budget_changes (id INTEGER PRIMARY KEY,"
        " broker INTEGER NOT NULL, at REAL NOT NULL, buckets TEXT NOT NULL,"
        " slot INTEGER NOT NULL, delta INTEGER NOT NULL)"
    )
    db.execute("CREATE INDEX IF NOT EXISTS budget_changes_at ON budget_changes(at)")


def _charges_by_service(db: Database) -> None:
    """A charge is the service's and its id's, and a second version of it is kept beside the
    first (ledger/usage_write.py): the charge id is no longer unique. `row_key` takes over as
    the row's own identity (the audit chain seals usage rows by it): `id` renamed, so a row
    written before keeps its key, and every seal made of it still holds; `id` is then added
    again, as the charge's id, not unique. `service` (NULL on rows synced before services were
    told apart) and `version` (2 and up: the versions that conflict with the first) join it.
    Indexed for the sync's look-up of the ids it receives and the newest charge of a service.

    Safe to meet twice: the columns are renamed and added only when missing."""
    columns = set(db.column_names("usage"))
    if "row_key" not in columns:
        db.execute("ALTER TABLE usage RENAME COLUMN id TO row_key")
        db.execute("ALTER TABLE usage ADD COLUMN id TEXT NOT NULL DEFAULT ''")
        db.execute("UPDATE usage SET id = row_key")
    if "service" not in columns:
        db.execute("ALTER TABLE usage ADD COLUMN service TEXT")
    if "version" not in columns:
        db.execute("ALTER TABLE usage ADD COLUMN version INTEGER NOT NULL DEFAULT 1")
    db.execute("CREATE INDEX IF NOT EXISTS usage_charge ON usage(id, service)")
    db.execute("CREATE INDEX IF NOT EXISTS usage_service ON usage(service, at)")


def _decision_mandates(db: Database) -> None:
    """Mandates: what each approval lets be paid (core/mandate.py), kept with the decision as its
    canonical JSON (sealed with the row; its digest is in the decision's event). Decisions made
    before have none. Safe to meet twice: the column is added only when missing."""
    if "mandate" not in db.column_names("decisions"):
        db.execute("ALTER TABLE decisions ADD COLUMN mandate TEXT")


def _usage_by_request(db: Database) -> None:
    """Usage rows by the request they paid for, with their amounts: a policy simulation counts
    what each replayed request moved from them (ledger/replay.py), as the usage screen does."""
    db.execute("CREATE INDEX IF NOT EXISTS usage_request ON usage(request_id, amount)")


def _step(step: Callable[[Database], None]) -> Callable[[Any], None]:
    """A step that takes any SQLite database as well as an engine's (`engine.of`)."""

    @functools.wraps(step)
    def run(db: Any) -> None:
        step(engine.of(db))

    return run


MIGRATIONS = [
    _step(step)
    for step in (
        *(_v1, _v2, _v3, _v4, _v5, _v6, _v7, _v8, _v9, _v10),
        _charges_by_service,
        _decision_mandates,
        _usage_by_request,
    )
]


def migrate(db: Any) -> None:
    db = engine.of(db)
    version = db.schema_version()
    if version > len(MIGRATIONS):
        raise RuntimeError(
            f"the ledger was written by a newer svc-console (schema {version}); upgrade to open it"
        )
    for step in range(version, len(MIGRATIONS)):
        with db.atomic():
            db.prepare_schema()
            if db.schema_version() > step:  # another broker ran this step while we waited
                continue
            MIGRATIONS[step](db)
            db.set_schema_version(step + 1)
    if version < len(MIGRATIONS):
        with db.atomic():
            db.finish_schema()
