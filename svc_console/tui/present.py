"""How a request's facts read on screen: durations, price ranges, verdicts, risk counts.

Plain functions over domain values (no widgets), so the queue, the detail and the modals word things
the same way. Nothing here passes untrusted text through: callers sanitise what they show.
"""

from __future__ import annotations

from collections import Counter
from decimal import Decimal
from pathlib import Path
from typing import Any

from svc_console.config.paths import Paths
from svc_console.core.models import Estimate, RiskFlag, Severity, SpendRequest, Verdict
from svc_console.core.money import format_usdc
from svc_console.core.states import State

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


# -- history: how a request ended -----------------------------------------------------------------

OUTCOME_LABELS = {
    State.auto_approved: "auto-approved",
    State.awaiting_funds: "needs funds",
    State.unknown: "unknown (reconcile)",
}
# How each state reads at a glance: names of `colors.Palette` tones.
OUTCOME_TONES = {
    State.succeeded: "good",
    State.failed: "high",
    State.unknown: "high",
    State.denied: "warn",
    State.rejected: "warn",
    State.awaiting_funds: "warn",
    State.approved: "info",
    State.auto_approved: "info",
    State.executing: "info",
    State.repriced: "warn",
}


def outcome_label(state: State) -> str:
    return OUTCOME_LABELS.get(state, str(state).replace("_", " "))


def outcome_tone(state: State) -> str:
    return OUTCOME_TONES.get(state, "label")


# -- the policy's verdict, whatever it carries ----------------------------------------------------

# The verdict's fields read by name here (a policy engine may carry rule citations and budget
# figures, or only rule names); any other field a newer engine adds is still shown, generically.
_VERDICT_KNOWN = ("outcome", "summary", "rules", "citations", "budgets", "policy_sha256")
_CAP_KEYS = ("max_usdc", "cap_usdc", "limit_usdc")


def _plain(value: Any) -> Any:
    """A model as JSON-like data; anything else unchanged."""
    return value.model_dump(mode="json") if hasattr(value, "model_dump") else value


def describe(value: Any) -> str:
    """One line for a value of unknown shape: a string as is, a record as `key value · ...`."""
    data = _plain(value)
    if isinstance(data, dict):
        parts = [f"{key} {describe(item)}" for key, item in data.items() if item not in _EMPTY]
        return " · ".join(parts)
    if isinstance(data, list):
        return ", ".join(describe(item) for item in data)
    return "-" if data in _EMPTY else str(data)


_EMPTY: tuple[Any, ...] = (None, "", [], {})


def _where(data: dict[str, Any]) -> str:
    line, file = data.get("line"), data.get("file")
    if file and line:
        return f" ({Path(str(file)).name}:{line})"
    return f" (line {line})" if line else ""


def rule_lines(verdict: Verdict) -> list[str]:
    """The rules that decided or warned, one line each: effect, rule, reason and where it is
    written when the verdict cites them; else the rules' names."""
    citations = getattr(verdict, "citations", None) or []
    if not citations:
        return [describe(rule) for rule in verdict.rules]
    lines = []
    for citation in citations:
        data = _plain(citation)
        if not isinstance(data, dict) or "rule" not in data:
            lines.append(describe(data))
            continue
        effect = f"{data['effect']}: " if data.get("effect") else ""
        reason = f" · {data['reason']}" if data.get("reason") else ""
        lines.append(f"{effect}{data['rule']}{reason}{_where(data)}")
    return lines


def budget_lines(verdict: Verdict) -> list[tuple[str, str]]:
    """(line, tone) per budget: its spend before and after this request against its cap, in the
    warn tone past the warn level and the high tone past the cap."""
    lines = []
    for budget in getattr(verdict, "budgets", None) or []:
        data = _plain(budget)
        if not isinstance(data, dict) or "before_usdc" not in data:
            lines.append((describe(data), "plain"))
            continue
        cap = next((data[key] for key in _CAP_KEYS if data.get(key) is not None), None)
        warn, after = data.get("warn_usdc"), data.get("after_usdc")
        line = f"{data.get('budget', 'budget')}: {data['before_usdc']} → {after}"
        line += f" of {cap} USDC" if cap is not None else " USDC"
        if warn is not None:
            line += f" (warns at {warn})"
        tone = "plain"
        if cap is not None and after is not None and Decimal(str(after)) > Decimal(str(cap)):
            tone = "high"
        elif warn is not None and after is not None and Decimal(str(after)) > Decimal(str(warn)):
            tone = "warn"
        lines.append((line + _where(data), tone))
    return lines


def other_verdict_fields(verdict: Verdict) -> list[tuple[str, str]]:
    """(name, one line) for the verdict's other fields; a policy's hash shortened."""
    data = verdict.model_dump(mode="json")
    rows = []
    if data.get("policy_sha256"):
        rows.append(("policy", f"sha256 {str(data['policy_sha256'])[:12]}…"))
    rows += [
        (name.replace("_", " "), describe(value))
        for name, value in data.items()
        if name not in _VERDICT_KNOWN and value not in _EMPTY
    ]
    return rows
