"""A draft policy replayed against the ledger's recent past: `svc-console policy simulate`'s
replay and report, for the policies screen, which runs it in a worker thread."""

from __future__ import annotations

from pathlib import Path

from svc_console.ledger.replay import replaying
from svc_console.policy.loader import LoadedPolicy
from svc_console.policy.report import simulation_lines
from svc_console.policy.simulate import parse_since, simulate, warmup_start

SIMULATED_PERIOD = "30d"


def simulate_draft(draft: LoadedPolicy, ledger_path: Path, now: float) -> list[str]:
    """The report lines of `draft` over the last `SIMULATED_PERIOD` before `now`, read on a
    query-only connection of the calling thread's own (the broker keeps writing through its own).
    A ledger that cannot be read raises `ledger.readers.ReadError`."""
    since = now - parse_since(SIMULATED_PERIOD)
    with replaying(ledger_path, warmup_start(since), now) as past:
        report = simulate(draft, past, since=since, until=now)
    return simulation_lines(report, SIMULATED_PERIOD)
