"""The console's Prometheus metrics (`serve --metrics`): the registry, and the hooks that count
into it as the broker works.

Counted in memory, never read back from the ledger: the broker's listener (told of every change
of every request, with the request as the broker already holds it) notes each transition once,
by comparing with the last state it saw of that request; the ledger's commit listener times each
commit; its final-state listener notices the circuit breaker's new pauses. Each hook is a few
dictionary look-ups and a counter's increment, on the broker's loop. What is a level rather than
a count (the queue, budgets, failures kept elsewhere) is read when Prometheus scrapes
(`metrics_scrape.py`).

The requests followed are those this broker took in (and those waiting when it started): on a
PostgreSQL ledger shared by several brokers, each counts its own, and Prometheus sums them.
Agents that did not prove their name are one series, `(unverified)`: a name an agent invents
must not make a series of its own.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.process_collector import ProcessCollector

from svc_console.core.models import Decision, SpendRequest
from svc_console.core.names import counted_as
from svc_console.core.states import FINAL, State

_INTAKE = frozenset({State.received, State.inspecting})
# From a millisecond (the console's own verdict) to a day (an operator's answer).
LATENCY_BUCKETS = (
    0.001, 0.0015, 0.002, 0.0025, 0.003, 0.004, 0.005, 0.006, 0.008, 0.01, 0.015, 0.02, 0.03,
    0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 14400, 86400,
)  # fmt: skip
COMMIT_BUCKETS = (
    0.0001, 0.00025, 0.0005, 0.00075, 0.001, 0.0015, 0.002, 0.003, 0.005, 0.01, 0.025, 0.05,
    0.1, 0.25, 1,
)  # fmt: skip
_BRAKES = {"repeats": "repeats", "velocity": "velocity", "circuit_breaker": "circuit_breaker"}


@dataclass(frozen=True, slots=True)
class _Seen:
    state: State
    decided_at: float | None


class ConsoleMetrics:
    def __init__(self, clock: Callable[[], float]):
        self.clock = clock
        self.registry = CollectorRegistry()
        ProcessCollector(registry=self.registry)
        r = self.registry
        self.decisions = Counter(
            "svc_console_decisions",
            "Decisions on requests, by outcome (approved, denied) and channel (tui, cli, slack:"
            " an operator; policy, grant: a rule)",
            ["outcome", "channel"],
            registry=r,
        )
        self.latency = Histogram(
            "svc_console_decision_latency_seconds",
            "From a request's submission to its decision: by the console (its verdict: queued for"
            " an operator, approved or denied by a rule) or by an operator",
            ["decided_by"],
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.expired = Counter(
            "svc_console_requests_expired", "Requests no operator decided in time", registry=r
        )
        money = ["agent", "provider"]
        self.approved = Counter(
            "svc_console_approved_usdc", "USDC approved (ceilings)", money, registry=r
        )
        self.charged = Counter("svc_console_charged_usdc", "USDC charged", money, registry=r)
        self.over = Counter(
            "svc_console_charged_above_approved",
            "Charges above the ceiling their approval allowed (should stay 0)",
            money,
            registry=r,
        )
        self.brakes = Counter(
            "svc_console_brake_trips",
            "Requests a brake held (rate_limits, repeats, velocity) and agents the circuit"
            " breaker paused",
            ["brake"],
            registry=r,
        )
        self.commits = Histogram(
            "svc_console_ledger_commit_seconds",
            "Ledger commits, from the seal of their events to the database's answer",
            buckets=COMMIT_BUCKETS,
            registry=r,
        )
        self._live: dict[str, _Seen] = {}
        self._paused: set[str] = set()
        self._detach: list[Callable[[], None]] = []

    def attach(self, broker: Any, policy: Any = None) -> None:
        """Follow `broker`, its ledger and (when there is one) the live policy's pauses."""
        for request in broker.pending():
            self._live[request.id] = _Seen(request.state, None)
        self._detach.append(broker.subscribe(self.request_changed))
        ledger = broker.ledger
        ledger.commit_listeners.append(self.commits.observe)
        self._detach.append(lambda: ledger.commit_listeners.remove(self.commits.observe))
        paused = getattr(policy, "paused", None)
        if isinstance(paused, dict):
            self._paused = set(paused)
            follow = lambda finals: self._pauses(paused)  # noqa: E731
            ledger.final_listeners.append(follow)
            self._detach.append(lambda: ledger.final_listeners.remove(follow))

    def detach(self) -> None:
        for undo in self._detach:
            undo()
        self._detach.clear()

    # -- the hooks -----------------------------------------------------------------------------

    def request_changed(self, request: SpendRequest) -> None:
        """The broker's listener: each transition of a followed request counted once."""
        state, decision = request.state, request.decision
        seen = self._live.get(request.id)
        if seen is None:
            if state == State.received:  # submitted here: followed from now on
                self._live[request.id] = _Seen(state, None)
            return
        decided_at = decision.at if decision is not None else seen.decided_at
        if state == seen.state and decided_at == seen.decided_at:
            return
        if seen.state in _INTAKE and state not in _INTAKE:
            self._taken_in(request)
        if decision is not None and decided_at != seen.decided_at:
            self._decided(request, decision)
        if state == State.expired:
            self.expired.inc()
        elif state == State.succeeded and request.outcome is not None:
            self._paid(request)
        if state in FINAL:
            del self._live[request.id]
        else:
            self._live[request.id] = _Seen(state, decided_at)

    def _taken_in(self, request: SpendRequest) -> None:
        """Out of intake: the console's verdict, its latency, and the brakes that held it."""
        self.latency.labels("console").observe(max(0.0, self.clock() - request.created_at))
        if request.state == State.denied and request.decision is None:  # a deny rule
            self.decisions.labels("denied", "policy").inc()
        verdict = request.verdict
        for citation in verdict.citations if verdict is not None else ():
            if citation.effect in ("deny", "ask"):
                brake = _BRAKES.get(citation.rule)
                if brake is None and citation.rule.startswith("rate_limits["):
                    brake = "rate_limits"
                if brake is not None and brake != "circuit_breaker":
                    self.brakes.labels(brake).inc()

    def _decided(self, request: SpendRequest, decision: Decision) -> None:
        channel = decision.evidence.channel if decision.evidence is not None else "unknown"
        self.decisions.labels("approved" if decision.approved else "denied", channel).inc()
        if channel not in ("policy", "grant"):
            waited = max(0.0, decision.at - request.created_at)
            self.latency.labels("operator").observe(waited)
        if decision.approved and decision.ceiling_usdc is not None:
            self.approved.labels(*_series(request)).inc(float(decision.ceiling_usdc))

    def _paid(self, request: SpendRequest) -> None:
        assert request.outcome is not None
        charged, series = request.outcome.charged_usdc, _series(request)
        self.charged.labels(*series).inc(float(charged))
        decision = request.decision
        ceiling = decision.ceiling_usdc if decision is not None else None
        if ceiling is not None and charged > ceiling:
            self.over.labels(*series).inc()

    def _pauses(self, paused: dict[str, str]) -> None:
        """After the circuit breaker's own final-state listener: the agents it paused since."""
        if paused.keys() != self._paused:
            self.brakes.labels("circuit_breaker").inc(len(paused.keys() - self._paused))
            self._paused = set(paused)


def _series(request: SpendRequest) -> tuple[str, str]:
    agent = counted_as(request.agent, request.agent_verified)
    return agent, request.endpoint.provider if request.endpoint is not None else "-"
