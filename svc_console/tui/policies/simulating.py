"""The policies screen's simulation: the draft replayed against the ledger's recent past
(`services/policy_simulation.py`), and what the simulation view says before, during and after."""

from __future__ import annotations

from pathlib import Path

from svc_console.ledger.readers import ReadError
from svc_console.policy.drafts import DraftCheck
from svc_console.policy.loader import LoadedPolicy
from svc_console.services.policy_simulation import SIMULATED_PERIOD, simulate_draft
from svc_console.tui.policies.simulation import SimulationShown


def refused(result: DraftCheck) -> SimulationShown:
    """A draft with errors is not simulated."""
    count, first = len(result.errors), result.errors[0] if result.errors else "?"
    return SimulationShown(
        note=f"The draft has {count} error{'s' if count > 1 else ''} (first {first}):"
        " fix them to simulate it.",
        tone="high",
    )


def started(draft: LoadedPolicy) -> SimulationShown:
    return SimulationShown(
        note=f"Replaying the last {SIMULATED_PERIOD} of requests against draft"
        f" {draft.sha256[:12]}…",
        tone="info",
    )


def run(
    draft: LoadedPolicy, ledger_path: Path, now: float, url: str | None = None
) -> SimulationShown:
    """In a worker thread: the simulation's report, or why the ledger could not be read."""
    try:
        lines = simulate_draft(draft, ledger_path, now, url)
    except ReadError as exc:
        return SimulationShown(note=f"The ledger could not be read: {exc}", tone="high")
    return SimulationShown(draft.sha256, tuple(lines))
