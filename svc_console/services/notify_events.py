"""Which changes deserve a notice, worded: the four events of `[notify]`.

- `waiting`: a request has been pending longer than `waiting_after_s` (once per stay in the queue);
- `policy_error`: the policy in force became invalid (once per set of errors);
- `awaiting_funds`: an approved request found the wallet short (once per request);
- `budget_warn`: an approval took a budget past its warn level, as the request's verdict counted
  it (once per request).

Plain and synchronous: fed requests and policy statuses, asked what is due at a time; it never
sends anything itself, so it can be tested without a network and never slows the broker.
"""

from __future__ import annotations

import itertools
import secrets
from collections.abc import Callable, Iterable
from pathlib import PurePath
from typing import Any

from svc_console.config.notify_settings import NotifySettings
from svc_console.core.models import SpendRequest
from svc_console.core.money import format_usdc
from svc_console.core.sanitize import inert_line
from svc_console.core.states import FINAL, State
from svc_console.services.notify_messages import Notice, Part, Untrusted

_APPROVED = (State.approved, State.auto_approved, State.executing, State.awaiting_funds)


class EventWatch:
    def __init__(self, settings: NotifySettings, clock: Callable[[], float]):
        self.settings = settings
        self.clock = clock
        self._pending: dict[str, float] = {}  # request id: since when it waits
        self._told: set[tuple[str, str]] = set()  # (event, request id) already notified
        self._policy_errors: tuple[str, ...] | None = None
        self._ids = (f"ntc_{secrets.token_hex(4)}_{n}" for n in itertools.count(1))

    def seed(self, pending: Iterable[SpendRequest]) -> None:
        """The requests already pending when notices start (from a previous process)."""
        for request in pending:
            self._pending.setdefault(request.id, request.updated_at)

    def request_changed(self, request: SpendRequest) -> list[Notice]:
        notices = []
        rid, state = request.id, request.state
        if state == State.pending:
            self._pending.setdefault(rid, request.updated_at)
        elif self._pending.pop(rid, None) is not None:
            self._told.discard(("waiting", rid))  # a re-priced request may wait again
        if state == State.awaiting_funds and self._first("awaiting_funds", rid):
            notices.append(self._awaiting_funds(request))
        if state in _APPROVED:
            crossed = _warn_crossed(request)
            if crossed is not None and self._first("budget_warn", rid):
                notices.append(self._budget_warn(request, crossed))
        if state in FINAL:
            self._told = {told for told in self._told if told[1] != rid}
        return notices

    def policy_changed(self, status: Any) -> list[Notice]:
        if status.state != "invalid":
            self._policy_errors = None
            return []
        errors = tuple(status.errors)
        if errors == self._policy_errors:
            return []
        self._policy_errors = errors
        if "policy_error" not in self.settings.events:
            return []
        first = _short_paths(errors[0], status.paths) if errors else "the policy cannot be read"
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        kept = (
            "the last valid version stays in force"
            if status.sha256
            else "no valid version: the operator decides every request"
        )
        parts = (
            "the policy has errors: ",
            Untrusted(first),
            f"{more}; {kept}; auto-approval is suspended",
        )
        return [self._notice("policy_error", parts)]

    def due(self) -> list[tuple[str, float]]:
        """The pending requests whose `waiting` notice is due, with how long each has waited
        (the caller reads each request and asks `waiting` for its notice)."""
        now = self.clock()
        after = self.settings.waiting_after_s
        due = [
            rid
            for rid, since in self._pending.items()
            if now - since >= after and ("waiting", rid) not in self._told
        ]
        for rid in due:
            self._told.add(("waiting", rid))
        if "waiting" not in self.settings.events:
            return []
        return [(rid, now - self._pending[rid]) for rid in due]

    def waiting(self, request: SpendRequest, waited_s: float) -> Notice | None:
        """The `waiting` notice of a request `due` named, unless it has left the queue since."""
        if request.state != State.pending:
            return None
        parts = (
            *_who(request),
            f" has waited {_duration(waited_s)} for your decision: ",
            *_what(request),
            "; purpose ",
            Untrusted(request.purpose),
        )
        return self._notice("waiting", parts, request)

    # -- wording -------------------------------------------------------------------------------

    def _awaiting_funds(self, request: SpendRequest) -> Notice:
        parts = (
            *_who(request),
            " was approved but the wallet lacks funds: ",
            *_what(request),
            "; fund it on the wallet screen or with svc-console wallet fund "
            + inert_line(request.id, 40),
        )
        return self._notice("awaiting_funds", parts, request)

    def _budget_warn(self, request: SpendRequest, crossed: Any) -> Notice:
        parts = (
            *_who(request),
            " took budget ",
            Untrusted(crossed.budget),
            f" past its warn level: {format_usdc(crossed.before_usdc)} ->"
            f" {format_usdc(crossed.after_usdc)} USDC of a warning at"
            f" {format_usdc(crossed.warn_usdc)}",
        )
        return self._notice("budget_warn", parts, request)

    def _notice(
        self, event: str, parts: tuple[Part, ...], request: SpendRequest | None = None
    ) -> Notice:
        if request is None:
            return Notice(event, parts, self.clock(), next(self._ids))
        return Notice(
            event,
            parts,
            self.clock(),
            next(self._ids),
            request_id=request.id,
            agent=request.agent,
            endpoint=request.endpoint_id or request.dataset_id or str(request.kind),
            amount_usdc=_amount(request),
        )

    def _first(self, event: str, request_id: str) -> bool:
        if (event, request_id) in self._told:
            return False
        self._told.add((event, request_id))
        return event in self.settings.events


def _who(request: SpendRequest) -> tuple[Part, ...]:
    # The id is the console's own; the agent's name is the agent's choice.
    return (f"request {inert_line(request.id, 40)} of agent ", Untrusted(request.agent))


def _what(request: SpendRequest) -> tuple[Part, ...]:
    target = request.endpoint_id or request.dataset_id or str(request.kind)
    amount = _amount(request)
    return (Untrusted(target), f", {amount} USDC" if amount else ", price unknown")


def _amount(request: SpendRequest) -> str | None:
    decision = request.decision
    if decision is not None and decision.approved and decision.ceiling_usdc is not None:
        return format_usdc(decision.ceiling_usdc)
    return format_usdc(request.estimate.amount_usdc) if request.estimate else None


def _warn_crossed(request: SpendRequest) -> Any:
    """The first budget the request's verdict takes from at most its warn level to above it."""
    verdict = request.verdict
    if verdict is None or not any(c.effect == "warn" for c in verdict.citations):
        return None
    for impact in verdict.budgets:
        warn = impact.warn_usdc
        if warn is not None and impact.before_usdc <= warn < impact.after_usdc:
            return impact
    return None


def _short_paths(error: str, paths: Iterable[str]) -> str:
    """An error as verdicts cite files (SKILLS.md:4:1): the receiver needs no folder names."""
    for path in paths:
        error = error.replace(str(path), PurePath(path).name)
    return error


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{int(seconds)} s"
    if seconds < 7200:
        return f"{int(seconds // 60)} min"
    return f"{seconds / 3600:.1f} h"
