"""The policy in force, as the broker uses it: loaded from the configured SKILLS.md files, reloaded
when they change, and failing closed when a change is invalid.

States (`PolicyStatus.state`):

- `none`: no policy file (the default path does not exist, and no policy was in force): the
  operator decides everything, as with `ManualReview`. No banner.
- `active`: the files are valid and in force.
- `invalid`: the files as saved now have errors. The last valid version stays in force (from this
  process, or else the ledger's last valid version), auto-approval is suspended, and
  `status.message` says why, for the banner. With no valid version at all, the operator decides
  everything.

An invalid change never widens what is allowed: deny rules and caps of the last valid version
still apply, and nothing is approved without the operator until the files are fixed. Deleting a
policy file that is in force is such a change.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any, Literal

from svc_console.core.models import EndpointRecord, Estimate, SpendRequest, Verdict
from svc_console.policy.brakes import FAILURES, SUCCESS, Ended, Seen
from svc_console.policy.budget_view import BudgetLine, budget_lines
from svc_console.policy.budgets import RollingTotals
from svc_console.policy.engine import CompiledPolicy, Evaluation
from svc_console.policy.errors import PolicyInvalid
from svc_console.policy.facts import Facts, facts_of
from svc_console.policy.grants import GrantBook
from svc_console.policy.loader import PolicyFile, load, read
from svc_console.policy.verdicts import to_verdict

log = logging.getLogger(__name__)
MAX_ERRORS_SHOWN = 20


@dataclass(frozen=True)
class PolicyStatus:
    state: Literal["none", "active", "invalid"]
    paths: tuple[str, ...]
    sha256: str | None = None  # of the version in force
    errors: tuple[str, ...] = ()  # of the files as saved, when invalid
    since: float = 0.0

    @property
    def auto_approval_suspended(self) -> bool:
        return self.state == "invalid"

    @property
    def message(self) -> str | None:
        """One line for the banner, or None when there is nothing to say."""
        if self.state != "invalid":
            return None
        first = self.errors[0] if self.errors else "the policy cannot be read"
        more = f" (+{len(self.errors) - 1} more)" if len(self.errors) > 1 else ""
        kept = (
            f"the last valid version ({self.sha256[:12]}) stays in force"
            if self.sha256
            else "no valid version: the operator decides every request"
        )
        return f"POLICY ERROR {first}{more} · {kept}; auto-approval suspended until fixed"


@dataclass(frozen=True)
class VersionSeen:
    """A file's content the console saw, valid or not (to record as a policy version)."""

    path: str
    text: str
    sha256: str
    saved_by: str | None
    valid: bool
    error: str | None


Listener = Callable[[PolicyStatus], None]
# The ledger's recent requests and outcomes since a time, for the brakes' counts.
History = Callable[[float], tuple[Iterable[Seen], Iterable[Ended]]]


@dataclass
class LivePolicy:
    """A PolicyEngine over files that may change. `optional`: a missing file means no policy
    (the default $SVC_CONSOLE_HOME/SKILLS.md) rather than an error (a file named explicitly)."""

    paths: list[Path]
    totals: RollingTotals = field(default_factory=RollingTotals)
    clock: Callable[[], float] = time.time
    optional: bool = False
    on_version: Callable[[VersionSeen], None] | None = None
    history: History | None = None
    compiled: CompiledPolicy | None = None
    # Agents the circuit breaker paused, and why: their requests wait for the operator.
    paused: dict[str, str] = field(default_factory=dict)
    # The operator's standing decisions (broker/grants.py makes and ends them).
    grants: GrantBook = field(default_factory=GrantBook)
    status: PolicyStatus = field(init=False)
    _listeners: list[Listener] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.status = PolicyStatus("none", tuple(str(p) for p in self.paths))

    # -- loading ----------------------------------------------------------------------------

    def reload(
        self, *, saved_by: str | None = None, fallback: list[PolicyFile] | None = None
    ) -> PolicyStatus:
        """Read the files again. Valid: in force. Invalid: the last valid version stays (or, on
        a first load, `fallback`: the last valid version the ledger recorded), auto-approval is
        suspended. Returns the new status (listeners are told too)."""
        names = tuple(str(p) for p in self.paths)
        now = self.clock()
        never_loaded = self.compiled is None and self.status.state == "none"
        if self.optional and never_loaded and not any(path.exists() for path in self.paths):
            # No policy file and none was in force: the operator decides everything. A file
            # deleted while in force is not this case: that change is an error (it would widen).
            return self._set(PolicyStatus("none", names, since=now))
        files: list[PolicyFile] = []
        try:
            files = [read(path) for path in self.paths]
            compiled = CompiledPolicy(load(files))
        except PolicyInvalid as exc:
            errors = tuple(str(error) for error in exc.errors[:MAX_ERRORS_SHOWN])
            for policy_file in files:
                self._seen(policy_file, saved_by, valid=False, error="\n".join(errors))
            if self.compiled is None and fallback:
                self.compiled = _compile_quietly(fallback)
                self._count_from_ledger(None, now)
            sha = self.compiled.sha256 if self.compiled else None
            log.warning("policy invalid, auto-approval suspended: %s", errors[:1])
            return self._set(PolicyStatus("invalid", names, sha, errors, now))
        for policy_file in files:
            self._seen(policy_file, saved_by, valid=True, error=None)
        older, self.compiled = self.compiled, compiled
        self._count_from_ledger(older, now)
        log.info("policy %s in force (%s)", compiled.sha256[:12], ", ".join(names))
        return self._set(PolicyStatus("active", names, compiled.sha256, (), now))

    def _count_from_ledger(self, older: CompiledPolicy | None, now: float) -> None:
        """The brakes of the version now in force take the counts of the one before when they
        are the same brakes, and else count the ledger's requests within their windows."""
        compiled = self.compiled
        if compiled is None:
            return
        brakes = compiled.brakes
        if brakes.take_over(older.brakes if older else None) or not brakes.counting:
            return
        if self.history is not None:
            seen, ended = self.history(now - brakes.horizon)
            brakes.load(seen, ended)

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener)

    def _set(self, status: PolicyStatus) -> PolicyStatus:
        changed = status != self.status
        self.status = status
        if changed:
            for listener in list(self._listeners):
                try:
                    listener(status)
                except Exception:
                    log.exception("a policy listener failed")
        return status

    def _seen(
        self, policy_file: PolicyFile, saved_by: str | None, *, valid: bool, error: str | None
    ) -> None:
        if self.on_version is None:
            return
        version = VersionSeen(
            str(policy_file.path or policy_file.name),
            policy_file.text,
            policy_file.sha256,
            saved_by,
            valid,
            error,
        )
        try:
            self.on_version(version)
        except Exception:
            log.exception("could not record the policy version")

    # -- the PolicyEngine protocol -------------------------------------------------------------

    @property
    def confirm_above_usdc(self) -> Decimal | None:
        return self.compiled.confirm_above_usdc if self.compiled else None

    @property
    def two_person_above_usdc(self) -> Decimal | None:
        """The last valid policy's: an invalid draft never lifts the rule."""
        return self.compiled.two_person_above_usdc if self.compiled else None

    @property
    def pending_ttl_s(self) -> float | None:
        return self.compiled.pending_ttl_s if self.compiled else None

    def evaluate(
        self,
        request: SpendRequest,
        endpoint: EndpointRecord | None,
        estimate: Estimate | None,
        *,
        now: float | None = None,
        dataset: Any = None,
    ) -> Verdict:
        compiled, status = self.compiled, self.status
        if compiled is None:
            summary = "no policy rule decides this: the operator does"
            if status.state == "invalid":
                summary = "the policy has errors and no valid version: the operator decides"
            return Verdict(outcome="ask", summary=summary)
        facts = facts_of(request, endpoint, estimate, dataset)
        now = self.clock() if now is None else now
        suspended = status.auto_approval_suspended
        result = compiled.evaluate(facts, self.totals, now, auto_allowed=not suspended)
        note = "auto-approval is suspended while the policy has errors: the operator decides"
        return to_verdict(result, compiled.sha256, note=note if suspended else None)

    def admit(
        self,
        request: SpendRequest,
        endpoint: EndpointRecord | None,
        estimate: Estimate | None,
        *,
        now: float,
        dataset: Any = None,
        count: bool = True,
    ) -> Verdict:
        """The verdict on a new request, brakes included, counted in the brakes' counts. The
        caller commits it before it awaits anything (see broker/intake.py). Without `count`,
        the request admitted once judged again on the budgets as they now stand (another
        broker's reservations among them: ledger/shared.py); the brakes, which counted it the
        first time, are not asked again."""
        compiled, status = self.compiled, self.status
        facts = facts_of(request, endpoint, estimate, dataset)
        paused = self.paused.get(facts.agent)  # by whom it counts as: (unverified) is one
        if compiled is None:
            return self._without_rules(facts, now, paused)
        suspended = status.auto_approval_suspended
        result = compiled.evaluate(
            facts,
            self.totals,
            now,
            auto_allowed=not suspended,
            brakes=count,
            paused=paused,
            grants=self.grants,
        )
        if count:
            denied = result.outcome == "deny"
            compiled.brakes.count(result.tally, request.id, now, denied=denied)
        note = "auto-approval is suspended while the policy has errors: the operator decides"
        return to_verdict(result, compiled.sha256, note=note if suspended else None)

    def _without_rules(self, facts: Facts, now: float, paused: str | None) -> Verdict:
        """No policy in force: the operator decides, but for what their grants decide."""
        if paused is not None:
            return Verdict(
                outcome="ask", summary=f"agent {facts.agent}'s rules are paused ({paused})"
            )
        result = Evaluation()
        if self.grants.denies(facts, now, result.citations) is not None:
            result.outcome = "deny"
        elif (grant := self.grants.approves(facts, now, result.citations)) is not None:
            result.outcome, result.rule = "auto_approve", grant.rule
        note = None
        if self.status.state == "invalid":
            note = "the policy has errors and no valid version: the operator decides"
        return to_verdict(result, note=note)

    def budget_lines(
        self, request: SpendRequest, reserved: dict, now: float | None = None
    ) -> list[BudgetLine]:
        """The budgets `request` draws on, now and after approving it (see budget_view)."""
        if self.compiled is None:
            return []
        facts = facts_of(request, request.endpoint, request.estimate)
        counted = request.decision is not None and request.decision.approved
        now = self.clock() if now is None else now
        return budget_lines(self.compiled, self.totals, facts, reserved, now, counted=counted)

    def ended(self, agent: str, state: str, at: float) -> str | None:
        """Follow a request's final state; why to pause its agent when the circuit breaker
        trips (the caller records the pause and calls `pause`)."""
        if self.compiled is None or agent in self.paused:
            return None
        if state in FAILURES:
            return self.compiled.brakes.ended(agent, True, at)
        if state == SUCCESS:
            self.compiled.brakes.ended(agent, False, at)
        return None

    def pause(self, agent: str, why: str) -> None:
        self.paused[agent] = why

    def resumed(self, agent: str) -> None:
        self.paused.pop(agent, None)
        if self.compiled is not None:
            self.compiled.brakes.resumed(agent)

    def approval_blocked(self, request: SpendRequest, now: float | None = None) -> str | None:
        """Why the operator may not approve this request now (a deny rule or a budget's hard
        stop, with today's totals), or None. Checked just before the approval's reservation."""
        if self.compiled is None:
            return None
        verdict = self.evaluate(request, request.endpoint, request.estimate, now=now)
        return verdict.summary if verdict.outcome == "deny" else None


def _compile_quietly(files: list[PolicyFile]) -> CompiledPolicy | None:
    try:
        return CompiledPolicy(load(files))
    except PolicyInvalid:  # the recorded version no longer loads (a newer vocabulary?)
        return None
