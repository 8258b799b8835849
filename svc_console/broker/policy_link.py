"""The policy in force, joined to the ledger: its budget totals loaded from the ledger's running
totals at start and following every commit after; its brakes' counts loaded from the ledger's
recent requests, and the circuit breaker following every request's outcome, recording the pause
it calls for; every version of the files it sees recorded as a policy version; and, when the
files are invalid at start, the ledger's last valid version kept in force (an invalid change
never widens what is allowed, even across a restart).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable
from pathlib import Path

from svc_console.ledger import Ledger, pauses, policy_versions
from svc_console.ledger.budgets import DAY, prune, totals_rows
from svc_console.policy.brakes import FAILURES, SUCCESS, Ended, Seen
from svc_console.policy.budgets import LONGEST, RollingTotals
from svc_console.policy.live import LivePolicy, VersionSeen
from svc_console.policy.loader import PolicyFile
from svc_console.policy.watch import follow, owner_of

log = logging.getLogger(__name__)


def totals_from(ledger: Ledger, now: float) -> RollingTotals:
    """Rolling totals as the ledger holds them, kept up to date with its commits (and, on a
    shared ledger, the other brokers': from the snapshot they were loaded from on)."""
    totals = RollingTotals()
    prune(ledger, now - LONGEST - DAY)  # beyond every window: nothing will read it again
    totals.load(ledger.totals_read(lambda db: list(totals_rows(db, now))), now)
    ledger.budget_listeners.append(totals.apply)
    return totals


def live_policy(
    ledger: Ledger, files: list[Path], *, optional: bool, clock: Callable[[], float]
) -> LivePolicy:
    """A loaded LivePolicy over `files` (see policy/live.py for its states)."""
    now = clock()

    def record(version: VersionSeen) -> None:
        policy_versions.record(
            ledger,
            path=version.path,
            text=version.text,
            sha256=version.sha256,
            at=clock(),
            saved_by=version.saved_by,
            valid=version.valid,
            error=version.error,
        )

    live = LivePolicy(
        files,
        totals_from(ledger, now),
        clock=clock,
        optional=optional,
        on_version=record,
        history=history_of(ledger),
        paused={pause.agent: pause.reason for pause in pauses.paused(ledger)},
    )
    ledger.final_listeners.append(lambda finals: _follow_outcomes(ledger, live, finals))
    ledger.budget_listeners.append(live.grants.apply)
    fallback = []
    for path in files:
        last = policy_versions.latest(ledger, str(path), valid_only=True)
        if last is None:
            fallback = []
            break
        fallback.append(PolicyFile(path, str(path), last.text))
    saved_by = next((owner_of(p) for p in files if p.exists()), None)
    live.reload(saved_by=saved_by, fallback=fallback)
    return live


def history_of(ledger: Ledger) -> Callable[[float], tuple[Iterable[Seen], Iterable[Ended]]]:
    """The ledger's requests and outcomes since a time, as the brakes count them."""

    def history(since: float) -> tuple[Iterable[Seen], Iterable[Ended]]:
        seen = (Seen(*row) for row in pauses.recent_requests(ledger, since))
        ended = (
            Ended(agent, at, None if state == pauses.RESUMED else state in FAILURES)
            for agent, at, state in pauses.recent_outcomes(ledger, since, FAILURES | {SUCCESS})
        )
        return seen, ended

    return history


def _follow_outcomes(ledger: Ledger, live: LivePolicy, finals: list) -> None:
    """The circuit breaker counts each outcome; when it trips, the pause is recorded (a decision
    in the audit chain) before the agent's next request is judged."""
    for agent, state, at in finals:
        why = live.ended(agent, str(state), at)
        if why is not None and agent not in live.paused:
            pauses.pause(ledger, agent, why, "policy: circuit_breaker", at)
            live.pause(agent, why)
            log.warning("agent %s paused by the circuit breaker: %s", agent, why)


def watch(live: LivePolicy) -> asyncio.Task[None]:
    """Follow the files' changes in a task (cancel it to stop)."""

    async def run() -> None:
        try:
            await follow(live)
        except asyncio.CancelledError:
            raise
        except Exception:  # the policy in force stays; only live reloading is lost
            log.exception("watching the policy files failed; restart to reload them")

    return asyncio.create_task(run(), name="policy-watch")
