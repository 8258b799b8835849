"""The benchmarks' data, generated deterministically and cached under `build/bench/<key>/`.

- `ledger(rows)`: a ledger of `rows` settled requests (succeeded, denied, rejected, expired, failed,
  cancelled), with their decisions, executions and hash-chained events, as the broker writes them.
- `pending_ledger(count)`: a ledger of `count` requests waiting for the operator.
- `catalogue()`: the sandbox's full catalogue as JSON, the records a console caches.

The key of the cache folder names the generator's version and fingerprints of the ledger's schema
(as migrations leave it) and of the catalogue: a change to any of them generates afresh; otherwise
a re-run reuses the files. Files are built under a temporary name and renamed, so an interrupted
run leaves no half file behind. Callers get a path to a cached file and must copy it before
opening it with a broker (`copy_ledger`): the cache is never written to once built.

Historic rows carry no skill.md text (the live pipeline stores up to 20,000 characters of it per
request): with it a 1,000,000-row file would be several gigabytes more to write and copy, and no
query of the decision path reads that column.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import random
import shutil
import sqlite3
import sys
import tempfile
import time
from collections.abc import Iterator
from decimal import Decimal
from functools import lru_cache
from pathlib import Path
from typing import Any

from harness import REPO

from svc_console.config.audit_key import audit_key, key_file
from svc_console.core.models import EndpointRecord, Estimate, Verdict
from svc_console.core.private_files import write_private
from svc_console.ledger import Ledger
from svc_console.sandbox.catalog import catalog, settleable_chains
from svc_console.sandbox.pricing import estimate as quoted_price

GENERATOR_VERSION = 3  # 3: events linked with the ledger's audit key (HMAC)
SEED = 8402
LEDGER_SIZES = (10_000, 100_000, 1_000_000)
PENDING_COUNT = 10_000
START = 1_780_000_000.0  # the first historic request; rows are spaced STEP_S apart
STEP_S = 7.5
GENESIS = "0" * 64
AGENTS = tuple(f"agent-{n:02d}" for n in range(50))
# Final states of historic requests and how often each occurs.
OUTCOMES = (
    ("succeeded", 70),
    ("denied", 10),
    ("rejected", 8),
    ("expired", 7),
    ("failed", 3),
    ("cancelled", 2),
)
BATCH = 20_000


# As the ledger writes its JSON columns (one encoder: building one per call costs more than
# encoding the small objects of a row).
_dumps = json.JSONEncoder(separators=(",", ":"), sort_keys=True, ensure_ascii=False).encode


@lru_cache(maxsize=4096)
def _dumps_small(data: tuple[tuple[str, Any], ...]) -> str:
    """An event's data, from a small set of distinct values: encoded once each."""
    return _dumps(dict(data))


def _event_payload(at: float, request_id: str, kind: str, data_json: str) -> str:
    # Exactly `_dumps({"at", "request_id", "type", "data"})` as the ledger links it (keys
    # sorted; ids and states need no escaping), written out for speed.
    return f'{{"at":{at!r},"data":{data_json},"request_id":"{request_id}","type":"{kind}"}}'


@lru_cache(maxsize=1)
def schema_fingerprint() -> str:
    """The ledger's schema as a fresh ledger gets it (every migration applied), hashed: any
    change to a table or an index makes the cached ledgers stale."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "schema.db"
        Ledger(path).close()
        with contextlib.closing(sqlite3.connect(path)) as db:
            version = db.execute("PRAGMA user_version").fetchone()[0]
            objects = db.execute(
                "SELECT type, name, sql FROM sqlite_master ORDER BY type, name"
            ).fetchall()
    text = json.dumps([version, objects])
    return hashlib.sha256(text.encode()).hexdigest()[:10]


@lru_cache(maxsize=1)
def catalogue_fingerprint() -> str:
    ids = "\n".join(record.id for record in catalog().endpoints)
    return hashlib.sha256(ids.encode()).hexdigest()[:10]


@lru_cache(maxsize=1)
def cache_dir() -> Path:
    """`build/bench/v<generator>-<schema>-<catalogue>/`: regenerated when any of them changes."""
    key = f"v{GENERATOR_VERSION}-schema-{schema_fingerprint()}-catalogue-{catalogue_fingerprint()}"
    folder = REPO / "build" / "bench" / key
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _say(message: str) -> None:
    print(f"[bench data] {message}", file=sys.stderr, flush=True)


# -- the catalogue ----------------------------------------------------------------------------


def catalogue() -> Path:
    """Every endpoint record of the sandbox's catalogue, as the REST API serves them."""
    path = cache_dir() / "catalogue.json"
    if not path.exists():
        records = [record.model_dump(mode="json", by_alias=True) for record in catalog().endpoints]
        _atomic_write(path, json.dumps(records, separators=(",", ":")).encode())
    return path


def _atomic_write(path: Path, data: bytes) -> None:
    partial = path.with_name(path.name + ".partial")
    partial.write_bytes(data)
    partial.replace(path)


# -- ledgers ----------------------------------------------------------------------------------


class _Endpoint:
    """What a historic row needs of an endpoint, computed once per endpoint."""

    def __init__(self, record: EndpointRecord):
        protocol = record.protocols[0]
        chain = settleable_chains(record, protocol)[0]
        price = quoted_price(record)
        pricing = record.pricing
        estimate = Estimate(
            amount_usdc=price,
            min_usdc=pricing.min_usdc,
            max_usdc=pricing.max_usdc,
            chain=chain,
            protocol=protocol,
        )
        self.id, self.provider = record.id, record.provider
        self.chain, self.protocol = chain, protocol
        self.price = price
        self.ceiling = estimate.ceiling
        self.endpoint_json = _dumps(record.model_dump(mode="json"))
        self.estimate_json = _dumps(estimate.model_dump(mode="json"))
        self.estimate_units = _atomic(price)  # the ledger's estimate_usdc beside the JSON


def _request_id(n: int) -> str:
    # An odd multiplier is a bijection modulo 2**48: unique ids that look like the broker's.
    return f"req_{(n * 0x9E3779B97F4A7C15 + 0x5BD1E995) % 2**48:012x}"


def _atomic(usdc: Decimal) -> int:
    return int(usdc * 1_000_000)


VERDICT_ASK = _dumps(
    Verdict(outcome="ask", summary="no policy rule decides this: the operator does").model_dump(
        mode="json"
    )
)


def _historic(rows: int) -> Iterator[tuple[dict, dict | None, dict | None, list[tuple]]]:
    """(request row, decision row, execution row, events) for each historic request, in order."""
    rng = random.Random(SEED)
    endpoints = [_Endpoint(record) for record in catalog().endpoints]
    states = [state for state, weight in OUTCOMES for _ in range(weight)]
    for n in range(rows):
        request_id = _request_id(n)
        endpoint = endpoints[rng.randrange(len(endpoints))]
        state = states[rng.randrange(len(states))]
        at = START + n * STEP_S
        agent = AGENTS[rng.randrange(len(AGENTS))]
        settled = at + 1 + rng.random() * 30
        request = {
            "id": request_id,
            "agent": agent,
            "kind": "market_call",
            "endpoint_id": endpoint.id,
            "dataset_id": None,
            "provider": endpoint.provider,
            "inputs": f'{{"query":"topic {rng.randrange(5000)}"}}',
            "purpose": f"background for report {rng.randrange(900)}",
            "max_usdc": None,
            "idempotency_key": f"{agent}-{n}" if rng.random() < 0.5 else None,
            "state": state,
            "reason": None,
            "created_at": at,
            "updated_at": settled,
            "expires_at": at + 900 if state == "expired" else None,
            "endpoint": endpoint.endpoint_json if state != "rejected" else None,
            "estimate": endpoint.estimate_json if state != "rejected" else None,
            "estimate_usdc": endpoint.estimate_units if state != "rejected" else None,
            "risk": "[]",
            "verdict": VERDICT_ASK if state != "rejected" else None,
            "skill": None,
            "funding_url": None,
        }
        decision = execution = None
        if state in ("succeeded", "failed", "denied"):
            approved = state != "denied"
            decision = {
                "request_id": request_id,
                "approved": int(approved),
                "by": "operator",
                "at": settled - 0.5,
                "ceiling_usdc": _atomic(endpoint.ceiling) if approved else None,
                "note": None if approved else "not needed for this report",
            }
            if not approved:
                request["reason"] = decision["note"]
        if state in ("succeeded", "failed"):
            key = f"{request_id}-1"
            execution = {
                "request_id": request_id,
                "attempt": 1,
                "idempotency_key": key,
                "started_at": settled - 0.4,
                "finished_at": settled,
                "status": state,
                "charged_usdc": _atomic(endpoint.price) if state == "succeeded" else None,
                "chain": endpoint.chain if state == "succeeded" else None,
                "outcome": _outcome(endpoint, key) if state == "succeeded" else None,
                "error": None if state == "succeeded" else "upstream answered 502",
            }
            if state == "failed":
                request["reason"] = execution["error"]
        if state == "rejected":
            request["reason"] = "invalid inputs: query is required"
        if state == "expired":
            request["reason"] = "no decision before the request's lifetime ran out"
        if state == "cancelled":
            request["reason"] = "cancelled by the agent"
        events = [
            (at, request_id, "received", {"agent": agent}),
            (settled, request_id, state, {"reason": request["reason"]}),
        ]
        yield request, decision, execution, events


def _outcome(endpoint: _Endpoint, key: str) -> str:
    body = json.dumps({"results": [{"title": "Result", "url": "https://example.org/a"}]})
    return json.dumps(
        {
            "status": 200,
            "content_type": "application/json",
            "body": body,
            "body_encoding": "utf-8",
            "charged_usdc": str(endpoint.price),
            "chain": endpoint.chain,
            "receipt": {
                "protocol": endpoint.protocol,
                "network": endpoint.chain,
                "transaction": "0x" + hashlib.sha256(key.encode()).hexdigest(),
                "idempotency_key": key,
            },
        }
    )


def _insert(db: sqlite3.Connection, table: str, rows: list[dict]) -> None:
    if not rows:
        return
    columns = list(rows[0])
    sql = f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})"
    db.executemany(sql, [tuple(row[c] for c in columns) for row in rows])


def _fill(path: Path, items: Iterator[tuple[dict, dict | None, dict | None, list[tuple]]]) -> None:
    # The schema (and any migration) comes from the ledger itself; the rows go in with plain SQL,
    # many to a transaction, as no broker could write them one by one in a reasonable time.
    Ledger(path).close()
    key = audit_key(path)  # the one the ledger just made: the chain is linked as it links it
    db = sqlite3.connect(path)
    # Bulk load: no journal, and the indexes built once at the end rather than row by row.
    db.execute("PRAGMA journal_mode=OFF")
    db.execute("PRAGMA synchronous=OFF")
    indexes = db.execute(
        "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL"
        " AND tbl_name IN ('requests', 'decisions', 'executions', 'events')"
    ).fetchall()
    for name, _ in indexes:
        db.execute(f'DROP INDEX "{name}"')
    previous = GENESIS
    next_decision = 1
    requests, decisions, executions, events = [], [], [], []

    def flush() -> None:
        with db:
            _insert(db, "requests", requests)
            _insert(db, "decisions", decisions)
            _insert(db, "executions", executions)
            _insert(db, "events", events)
        for rows in (requests, decisions, executions, events):
            rows.clear()

    for request, decision, execution, request_events in items:
        requests.append(request)
        if decision is not None:
            decisions.append({"id": next_decision, **decision})
            if execution is not None:
                executions.append({"decision_id": next_decision, **execution})
            next_decision += 1
        for at, request_id, kind, data in request_events:
            data_json = _dumps_small(tuple(data.items()))
            payload = _event_payload(at, request_id, kind, data_json)
            digest = hmac.new(key, (previous + payload).encode(), hashlib.sha256).hexdigest()
            events.append(
                {
                    "at": at,
                    "request_id": request_id,
                    "type": kind,
                    "data": data_json,
                    "prev_hash": previous,
                    "hash": digest,
                }
            )
            previous = digest
        if len(requests) >= BATCH:
            flush()
    flush()
    for _, sql in indexes:
        db.execute(sql)
    db.execute("ANALYZE")
    db.execute("PRAGMA journal_mode=WAL")  # as the ledger keeps it
    db.close()


def _build(path: Path, what: str, items: Any) -> Path:
    if path.exists():
        return path
    partial = path.with_name(path.name + ".partial")
    for leftover in path.parent.glob(partial.name + "*"):
        leftover.unlink()
    _say(f"generating {what} in {path.parent.name}/ (once; cached for later runs)")
    started = time.perf_counter()
    _fill(partial, items)
    for suffix in ("-wal", "-shm", ".lock", ".head"):
        Path(f"{partial}{suffix}").unlink(missing_ok=True)
    key_file(partial).replace(key_file(path))  # the chain's key goes with its ledger
    partial.replace(path)
    _say(f"{what}: {time.perf_counter() - started:.1f} s, {path.stat().st_size / 1e6:.0f} MB")
    return path


def ledger(rows: int) -> Path:
    """A cached ledger of `rows` settled historic requests."""
    return _build(cache_dir() / f"ledger-{rows}.db", f"a {rows:,}-row ledger", _historic(rows))


def _pending(count: int) -> Iterator[tuple[dict, None, None, list[tuple]]]:
    rng = random.Random(SEED + 1)
    endpoints = [_Endpoint(record) for record in catalog().endpoints]
    # Far in the future, so no broker expires them during a benchmark.
    expires = 4_000_000_000.0
    for n in range(count):
        request_id = _request_id(10**9 + n)
        endpoint = endpoints[rng.randrange(len(endpoints))]
        agent = AGENTS[rng.randrange(len(AGENTS))]
        at = START + n
        request = {
            "id": request_id,
            "agent": agent,
            "kind": "market_call",
            "endpoint_id": endpoint.id,
            "dataset_id": None,
            "provider": endpoint.provider,
            "inputs": f'{{"query":"topic {rng.randrange(5000)}"}}',
            "purpose": f"background for report {rng.randrange(900)}",
            "max_usdc": None,
            "idempotency_key": None,
            "state": "pending",
            "reason": None,
            "created_at": at,
            "updated_at": at + 0.02,
            "expires_at": expires,
            "endpoint": endpoint.endpoint_json,
            "estimate": endpoint.estimate_json,
            "estimate_usdc": endpoint.estimate_units,
            "risk": "[]",
            "verdict": VERDICT_ASK,
            "skill": None,
            "funding_url": None,
        }
        events = [
            (at, request_id, "received", {"agent": agent}),
            (at + 0.01, request_id, "inspecting", {"reason": None}),
            (at + 0.02, request_id, "pending", {"reason": None}),
        ]
        yield request, None, None, events


def pending_ledger(count: int = PENDING_COUNT) -> Path:
    """A cached ledger of `count` requests pending, expiring long after any benchmark."""
    path = cache_dir() / f"pending-{count}.db"
    return _build(path, f"{count:,} pending requests", _pending(count))


def copy_ledger(source: Path, home: Path) -> Path:
    """A private copy of a cached ledger where the sandboxed broker of `home` looks for it."""
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    target = home / "ledger-sandbox.db"
    shutil.copyfile(source, target)
    target.chmod(0o600)
    # Its audit key goes with it: without it the console would start a new key on an old chain.
    write_private(key_file(target), key_file(source).read_text())
    return target


def prune_stale() -> None:
    """Remove this generator's caches under other keys (an older schema, catalogue or version):
    a 1,000,000-row ledger is gigabytes."""
    current = cache_dir()
    for folder in current.parent.glob("v*-schema-*-catalogue-*"):
        if folder != current and folder.is_dir():
            _say(f"removing the stale cache {folder.name}/")
            shutil.rmtree(folder, ignore_errors=True)


def prepare_all() -> None:
    """Everything `make bench` needs, generated now rather than inside a timed run."""
    prune_stale()
    catalogue()
    for rows in LEDGER_SIZES:
        ledger(rows)
    pending_ledger()


if __name__ == "__main__":
    prepare_all()
    print(cache_dir())
