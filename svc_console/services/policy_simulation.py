"""A draft policy replayed against the ledger's recent past: what `svc-console policy simulate`
prints and the policies screen shows (from a worker thread)."""

from __future__ import annotations

from pathlib import Path

from svc_console.ledger.replay import replaying
from svc_console.policy.loader import LoadedPolicy
from svc_console.policy.report import simulation_lines
from svc_console.policy.simulate import Simulation, parse_since, simulate, warmup_start

SIMULATED_PERIOD = "30d"


def simulate_period(
    draft: LoadedPolicy, ledger_path: Path, now: float, period: str, url: str | None = None
) -> Simulation:
    """`draft` replayed over the `period` ("30d", "12h") before `now`, read on a query-only
    connection of the calling thread's own (the broker keeps writing through its own). A ledger
    that cannot be read raises `ledger.readers.ReadError`; a bad period, ValueError."""
    since = now - parse_since(period)
    with replaying(ledger_path, warmup_start(since), now, url) as past:
        return simulate(draft, past, since=since, until=now)


def simulate_draft(
    draft: LoadedPolicy, ledger_path: Path, now: float, url: str | None = None
) -> list[str]:
    """The report lines of `draft` over the last `SIMULATED_PERIOD`, as the policies screen shows
    them."""
    report = simulate_period(draft, ledger_path, now, SIMULATED_PERIOD, url)
    return simulation_lines(report, SIMULATED_PERIOD)
