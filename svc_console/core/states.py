"""The request state machine of DESIGN.md: which moves are legal, which states are final."""

from enum import StrEnum


class State(StrEnum):
    received = "received"
    inspecting = "inspecting"
    rejected = "rejected"
    denied = "denied"
    pending = "pending"
    approved = "approved"
    auto_approved = "auto_approved"
    executing = "executing"
    awaiting_funds = "awaiting_funds"
    repriced = "repriced"
    succeeded = "succeeded"
    failed = "failed"
    expired = "expired"
    cancelled = "cancelled"
    unknown = "unknown"


S = State
TRANSITIONS: dict[State, frozenset[State]] = {
    S.received: frozenset({S.inspecting, S.cancelled}),
    S.inspecting: frozenset({S.rejected, S.denied, S.pending, S.auto_approved, S.cancelled}),
    S.pending: frozenset({S.approved, S.denied, S.expired, S.cancelled}),
    S.approved: frozenset({S.executing}),
    S.auto_approved: frozenset({S.executing}),
    S.executing: frozenset({S.succeeded, S.failed, S.awaiting_funds, S.repriced, S.unknown}),
    S.awaiting_funds: frozenset({S.executing, S.failed, S.cancelled, S.expired}),
    S.repriced: frozenset({S.pending}),
}

FINAL: frozenset[State] = frozenset(
    {S.rejected, S.denied, S.succeeded, S.failed, S.expired, S.cancelled, S.unknown}
)
# What the operator's two lists show: the requests that wait for them, and every other one that
# has been decided (by them or a rule) or has ended.
LIVE_FOR_OPERATOR = (S.pending,)
HISTORY = (*FINAL, S.approved, S.auto_approved, S.executing, S.awaiting_funds)
# States in which no money can have moved yet, so an agent may still cancel.
CANCELLABLE: frozenset[State] = frozenset({S.received, S.inspecting, S.pending, S.awaiting_funds})


class IllegalTransition(Exception):
    def __init__(self, current: State, target: State):
        super().__init__(f"a request cannot go from {current} to {target}")
        self.current, self.target = current, target


def check_transition(current: State, target: State) -> None:
    if target not in TRANSITIONS.get(current, frozenset()):
        raise IllegalTransition(current, target)
