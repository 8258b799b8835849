"""A deterministic usage history of any size, for benchmarks, tests and the demo.

The same `seed` and size always give the same rows, byte for byte. The charges look like a real
account's: a few dozen agents, a few hundred providers with their domain type, chains, protocol and
prices, a year of history with busy and quiet days, and a small share of reconciliation flags
(charges no approval covers, charges above the approved ceiling).

The rows are written as a sync would store them after reconciling, but without the ledger's
requests, decisions and executions behind them (a million of those would dwarf the usage table and
add nothing to what is measured): `request_id` names a request that is not in the file. Do not run
`recheck_flagged` on a seeded ledger and expect the flags to hold.

It writes fast: one transaction, rows in time order, and the usage indexes dropped before the bulk
insert and built again after it (building an index from sorted data beats a million random index
inserts).
"""

from __future__ import annotations

import math
import random
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from svc_console.core.taxonomy import CHAINS
from svc_console.core.usage import DAY_S

SEED = 8402
# 2026-05-28T00:00:00Z: history ends here by default, so seeded dates never depend on today.
DEFAULT_END = 1_779_926_400.0
DEFAULT_DAYS = 365
AGENT_COUNT = 24
PROVIDER_COUNT = 320
BATCH = 50_000
# Out of 10,000 charges: how many no approval covers, and how many exceed their ceiling.
UNCOVERED_PER_10K = 40
OVER_PER_10K = 25

_FIRST = (
    "atlas", "nimbus", "quartz", "harbor", "lumen", "vector", "cobalt", "meridian", "sable",
    "orbit", "delta", "falcon", "juniper", "tundra", "cinder", "willow", "zenith", "ember",
    "granite", "halcyon",
)  # fmt: skip
_SECOND = (
    "data", "labs", "feeds", "ai", "api", "works", "systems", "analytics", "signal", "cloud",
    "grid", "io", "metrics",
)  # fmt: skip
_AGENT_ROLES = (
    "research", "market-watch", "support", "pricing", "scraper", "briefing", "compliance",
    "sourcing", "translation", "forecast", "newsroom", "triage",
)  # fmt: skip
_DOMAINS = [f"A{n}" for n in range(1, 23)]


@dataclass(frozen=True)
class _Provider:
    name: str
    domain_type: str
    chains: tuple[str, ...]
    protocol: str
    price: int  # atomic USDC of a typical call
    endpoints: tuple[str, ...]


def _providers(rng: random.Random) -> list[_Provider]:
    providers = []
    names = [f"{a}-{b}" for a in _FIRST for b in _SECOND]
    rng.shuffle(names)
    for name in names[:PROVIDER_COUNT]:
        chains = tuple(rng.sample(CHAINS, rng.choice((1, 1, 2, 3))))
        protocol = "mpp" if "tempo" in chains and rng.random() < 0.7 else "x402"
        price = rng.choice((1_000, 2_500, 5_000, 10_000, 20_000, 50_000, 100_000, 250_000))
        endpoints = tuple(f"ep_{name.replace('-', '_')}_{k}" for k in range(rng.randint(1, 5)))
        providers.append(_Provider(name, rng.choice(_DOMAINS), chains, protocol, price, endpoints))
    return providers


def _agents() -> list[str]:
    return [
        f"{_AGENT_ROLES[n % len(_AGENT_ROLES)]}-bot-{n // len(_AGENT_ROLES) + 1}"
        for n in range(AGENT_COUNT)
    ]


INSERT_COLUMNS = (
    "row_key", "id", "at", "agent", "kind", "resource", "provider", "domain_type", "chain",
    "protocol", "amount", "idempotency_key", "receipt", "request_id", "decision", "decided_by",
    "ceiling", "state", "flag", "flagged", "synced_at",
)  # fmt: skip


def charges(
    rows: int, *, seed: int = SEED, end: float = DEFAULT_END, days: int = DEFAULT_DAYS
) -> Iterator[tuple[object, ...]]:
    """The rows of a seeded history, oldest first, as tuples in `INSERT_COLUMNS` order."""
    rng = random.Random(seed)
    providers = _providers(rng)
    agents = _agents()
    # Some providers and agents are much busier than others, as in any real account.
    provider_weights = [1.0 / (rank + 1) ** 0.8 for rank in range(len(providers))]
    agent_weights = [1.0 / (rank + 1) ** 0.6 for rank in range(len(agents))]
    pick_providers = rng.choices(providers, provider_weights, k=min(rows, 65_536))
    pick_agents = rng.choices(agents, agent_weights, k=min(rows, 65_536))
    first_day = int(end // DAY_S) - days
    for n, at in enumerate(_instants(rows, first_day, days, rng)):
        provider = pick_providers[rng.randrange(len(pick_providers))]
        agent = pick_agents[rng.randrange(len(pick_agents))]
        chain = provider.chains[rng.randrange(len(provider.chains))]
        ceiling = provider.price * 2 if rng.random() < 0.3 else provider.price
        amount = max(1, int(provider.price * (0.6 + rng.random() * 0.4)))
        charge_id = f"ch_seed_{n:07d}"
        request_id = f"req_seed_{n:07d}"
        key = f"{request_id}-1"
        receipt = f"0x{rng.getrandbits(256):064x}"
        roll = rng.randrange(10_000)
        if roll < UNCOVERED_PER_10K:
            state, flag, flagged = "uncovered", "no_request", 1
            request_id = decision = decided_by = None
            ceiling_value = None
            key = f"unknown-{n:07d}"
        elif roll < UNCOVERED_PER_10K + OVER_PER_10K:
            state, flag, flagged = "over", "above_ceiling", 1
            decision, decided_by, ceiling_value = "approved", "operator", provider.price // 2
            amount = provider.price
        else:
            state, flag, flagged = "ok", None, 0
            decision = "approved"
            decided_by = "operator" if roll % 3 else "policy:small-calls"
            ceiling_value = ceiling
        yield (
            charge_id,  # the row's key: seeded rows name no service, as rows synced before
            charge_id,
            round(at, 3),
            agent,
            "market_call",
            provider.endpoints[rng.randrange(len(provider.endpoints))],
            provider.name,
            provider.domain_type,
            chain,
            provider.protocol,
            amount,
            key,
            receipt,
            request_id,
            decision,
            decided_by,
            ceiling_value,
            state,
            flag,
            flagged,
            end,
        )


def _per_day(rows: int, first_day: int, days: int) -> list[int]:
    """How many charges each day gets: growing over the year, quieter at weekends, with a slow
    swell, so the chart of spend per day has something to show."""
    weights = []
    for n in range(days):
        weekday = (first_day + n + 3) % 7  # 1970-01-01 was a Thursday; Monday is 0
        weights.append(
            (1 + 0.6 * n / days) * (0.55 if weekday >= 5 else 1.0) * (1 + 0.25 * math.sin(n / 9))
        )
    total = sum(weights)
    counts = [int(rows * w / total) for w in weights]
    for n in range(rows - sum(counts)):
        counts[n % days] += 1
    return counts


def _instants(rows: int, first_day: int, days: int, rng: random.Random) -> Iterator[float]:
    """The charges' times, in order, spread within each day with a little jitter."""
    for n, count in enumerate(_per_day(rows, first_day, days)):
        start = (first_day + n) * DAY_S
        for k in range(count):
            yield start + DAY_S * (k + rng.random() * 0.9) / count


def seed_usage(
    path: Path,
    rows: int,
    *,
    seed: int = SEED,
    end: float = DEFAULT_END,
    days: int = DEFAULT_DAYS,
    url: str | None = None,
) -> None:
    """Add `rows` seeded charges to the usage table of the ledger at `path` (with `url`, of that
    PostgreSQL ledger), created with its schema if missing. The ledger must not be open in a
    broker meanwhile."""
    from svc_console.ledger.store import Ledger

    Ledger(path, url=url).close()  # the schema, by the ledger's own migrations
    if url:
        from svc_console.ledger.pg import bulk_load

        bulk_load(url, "usage", INSERT_COLUMNS, charges(rows, seed=seed, end=end, days=days))
        return
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("PRAGMA synchronous=OFF")
        conn.execute("PRAGMA cache_size=-200000")
        indexes = conn.execute(
            "SELECT name, sql FROM sqlite_master"
            " WHERE type = 'index' AND tbl_name = 'usage' AND sql IS NOT NULL"
        ).fetchall()
        conn.execute("BEGIN")
        for name, _ in indexes:
            conn.execute(f"DROP INDEX {name}")
        sql = (
            f"INSERT INTO usage ({', '.join(INSERT_COLUMNS)})"
            f" VALUES ({', '.join('?' * len(INSERT_COLUMNS))})"
        )
        batch: list[tuple[object, ...]] = []
        for row in charges(rows, seed=seed, end=end, days=days):
            batch.append(row)
            if len(batch) >= BATCH:
                conn.executemany(sql, batch)
                batch.clear()
        conn.executemany(sql, batch)
        for _, create in indexes:
            conn.execute(create)
        conn.execute("COMMIT")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()


def main(argv: list[str] | None = None) -> int:
    import argparse
    import time

    parser = argparse.ArgumentParser(description="Seed a ledger with a usage history.")
    parser.add_argument("path", type=Path)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--url", help="a PostgreSQL ledger's URL (its key files beside PATH)")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    seed_usage(args.path, args.rows, seed=args.seed, url=args.url)
    print(f"{args.rows:,} charges in {time.perf_counter() - started:.1f} s: {args.path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
