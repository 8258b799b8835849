"""Agents the circuit breaker paused, as operators see and resume them.

The pause itself is recorded where the breaker trips (`policy_link`); resuming is an operator's
decision like an approval: kept in the audit chain with who made it, refused to the paused
agent's own processes, and told to the policy so the agent's rules apply again.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from svc_console.broker import errors
from svc_console.broker.deciders import Decider, refuse_own_request
from svc_console.core import names
from svc_console.ledger import Ledger, pauses
from svc_console.ledger.pauses import Pause
from svc_console.policy import PolicyEngine

log = logging.getLogger(__name__)


class AgentPauses:
    def __init__(self, ledger: Ledger, policy: PolicyEngine, clock: Callable[[], float]):
        self.ledger, self.policy, self.clock = ledger, policy, clock

    def paused(self) -> list[Pause]:
        return pauses.paused(self.ledger)

    def follow(self) -> None:
        """On a shared ledger (each tick): the pauses other brokers' circuit breakers recorded
        and the resumes their operators decided, told to this broker's policy."""
        held = getattr(self.policy, "paused", None)
        if held is None:  # no policy in force: nothing is paused here
            return
        recorded = {pause.agent: pause.reason for pause in pauses.paused(self.ledger)}
        for agent in held.keys() - recorded.keys():
            self.policy.resumed(agent)
        for agent in recorded.keys() - held.keys():
            self.policy.pause(agent, recorded[agent])  # type: ignore[attr-defined]

    def resume(self, agent: str, decider: Decider) -> Pause:
        """Resume a paused agent, or raise why not (it is not paused; the decider is the agent)."""
        agent = names.fold(agent)  # as pauses are kept: `Research-Bot` is research-bot
        latest = self.ledger.latest_of(agent)
        if latest is not None:
            try:
                refuse_own_request(latest, decider)
            except errors.NotAuthorised:
                reason = f"agent {agent} asked to resume itself"
                self.ledger.record_refusal(latest.id, reason, decider.evidence(), self.clock())
                raise errors.NotAuthorised(
                    f"this comes from agent {agent}'s own process tree: an agent cannot resume"
                    " itself. Resume it from the console's TUI or another terminal."
                ) from None
        try:
            closed = pauses.resume(self.ledger, agent, decider.evidence(), self.clock())
        except pauses.NotPaused:
            raise errors.WrongState(f"agent {agent} is not paused") from None
        self.policy.resumed(agent)
        log.info("agent %s resumed by %s", agent, decider.by)
        return closed
