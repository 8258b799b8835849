"""The budgets a request draws on, as the operator weighs an approval: for each, what is spent and
what is reserved in its window now, what remains, its warn level and hard stop, and what the
approval would make of it.

Read from the rolling totals (reserved and settled together) and the open reservations (approvals
not yet charged), so nothing scans the ledger. A request already approved counts in its totals;
its line says so rather than count it twice.
"""

from __future__ import annotations

from dataclasses import dataclass

from svc_console.core.buckets import Bucket
from svc_console.policy.budgets import WINDOW_NAMES, RollingTotals
from svc_console.policy.engine import CompiledPolicy
from svc_console.policy.facts import Facts


@dataclass(frozen=True)
class BudgetLine:
    """Atomic USDC in the budget's window now, and after approving this request."""

    budget: str  # `daily allowance: research-bot`
    window: str  # hour, day, week, month
    spent: int
    reserved: int
    warn: int | None
    max: int | None
    after: int  # spent + reserved once this request's ceiling is reserved
    where: str  # `SKILLS.md:12`

    @property
    def remaining(self) -> int | None:
        return None if self.max is None else max(0, self.max - self.spent - self.reserved)

    @property
    def remaining_after(self) -> int | None:
        return None if self.max is None else max(0, self.max - self.after)

    @property
    def passes_warn(self) -> bool:
        return self.warn is not None and self.after > self.warn

    @property
    def passes_max(self) -> bool:
        return self.max is not None and self.after > self.max


def budget_lines(
    policy: CompiledPolicy,
    totals: RollingTotals,
    facts: Facts,
    reserved: dict[Bucket, int],
    now: float,
    *,
    counted: bool = False,
) -> list[BudgetLine]:
    """Each of the policy's budgets this request counts in. `reserved`: the open reservations'
    amounts by bucket (within every window: an approval is charged or released in minutes);
    `counted`: the request is already approved, so its amount is in the totals."""
    from svc_console.policy.verdicts import short

    lines = []
    for check in policy.budgets:
        bucket = check.bucket(facts)
        if bucket is None:
            continue
        used = totals.used(bucket, check.window, now)
        held = min(reserved.get(bucket, 0), used)
        lines.append(
            BudgetLine(
                budget=check.label_for(bucket[1]),
                window=WINDOW_NAMES[check.window],
                spent=used - held,
                reserved=held,
                warn=check.warn,
                max=check.max,
                after=used if counted else used + facts.amount,
                where=short(check.where),
            )
        )
    return lines
