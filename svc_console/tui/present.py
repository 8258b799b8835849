"""How a request's facts read on screen: durations, price ranges, verdicts, risk counts.

Plain functions over domain values (no widgets), so the queue, the detail and the modals word things
the same way. Nothing here passes untrusted text through: callers sanitise what they show.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from svc_console.core.models import Estimate, RiskFlag, Severity, SpendRequest
from svc_console.core.money import format_usdc
from svc_console.settings import Paths

SEVERITY_ORDER = {Severity.high: 0, Severity.warn: 1, Severity.info: 2}
# Policy outcomes, short for a table cell and spelled out for the detail.
VERDICT_LABELS = {"ask": "ask", "deny": "deny", "auto_approve": "auto"}
VERDICT_TEXT = {"ask": "ask the operator", "deny": "deny", "auto_approve": "approve automatically"}


def duration(seconds: float) -> str:
    """A compact duration that never gets wider than 7 characters ("14m 59s", "2h 05m")."""
    total = max(0, int(seconds))
    if total < 60:
        return f"{total}s"
    minutes, secs = divmod(total, 60)
    if minutes < 60:
        return f"{minutes}m {secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    if hours < 24:
        return f"{hours}h {minutes:02d}m"
    days, hours = divmod(hours, 24)
    return f"{days}d {hours:02d}h"


def age(request: SpendRequest, now: float) -> str:
    return duration(now - request.created_at)


def time_left(request: SpendRequest, now: float) -> str:
    if request.expires_at is None:
        return "-"
    left = request.expires_at - now
    return duration(left) if left > 0 else "due"


def seconds_left(request: SpendRequest, now: float) -> float | None:
    return None if request.expires_at is None else request.expires_at - now


def price_range(estimate: Estimate) -> str:
    """Min and max joined by an en dash, so a range never reads as a negative number."""
    return f"{format_usdc(estimate.min_usdc)}\N{EN DASH}{format_usdc(estimate.max_usdc)}"


def price(estimate: Estimate | None) -> str:
    """The estimate as the queue shows it: one amount, or the range a dynamic price may fall in."""
    if estimate is None:
        return "-"
    if estimate.dynamic:
        return price_range(estimate)
    return format_usdc(estimate.amount_usdc)


def verdict(request: SpendRequest, *, long: bool = False) -> str:
    if request.verdict is None:
        return "-"
    labels = VERDICT_TEXT if long else VERDICT_LABELS
    return labels.get(request.verdict.outcome, request.verdict.outcome)


def risk_counts(flags: list[RiskFlag]) -> Counter[Severity]:
    return Counter(flag.severity for flag in flags)


def by_severity(flags: list[RiskFlag]) -> list[RiskFlag]:
    """Most severe first, keeping the assessment's order within a severity."""
    return sorted(flags, key=lambda flag: SEVERITY_ORDER.get(flag.severity, 9))


def socket_hint(paths: Paths) -> str:
    """Where agents submit, written the way an operator can paste it into a shell: relative to
    $SVC_CONSOLE_HOME when the socket lives there (and so the same on every machine)."""
    socket = Path(paths.socket)
    if paths.explicit_home:
        try:
            return f"$SVC_CONSOLE_HOME/{socket.relative_to(paths.home)}"
        except ValueError:
            pass
    return str(socket)
