"""An operator's "always": the rule a decision becomes (`policy/always.py`), judged with the other
policy files in force exactly as the broker would load them, shown as a diff, and saved as the
policy editor saves (the watcher then puts it in force). Used by `approvals approve --always` and
by the approvals screen, which shows the diff on the policies screen to confirm."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

from svc_console.core.models import SpendRequest
from svc_console.policy import drafts
from svc_console.policy.always import Always, with_rule
from svc_console.policy.facts import ceiling, facts_of

DAILY_CALLS = 20  # the daily budget offered: this many calls at the approved amount


@dataclass(frozen=True)
class Proposal:
    path: Path
    name: str  # as the editor and verdicts name the file
    saved: str | None
    text: str
    rule: Always
    check: drafts.DraftCheck

    @property
    def diff(self) -> list[str]:
        return drafts.diff_lines(self.saved, self.text, self.name)


class NotInForce(Exception):
    """The chosen file is not one of the policy files in force."""


def propose(
    request: SpendRequest,
    path: Path,
    in_force: list[Path],
    home: Path,
    *,
    daily: Decimal | None,
    at: float,
) -> Proposal:
    """The rule for `request` added to `path`, judged with the other files in force."""
    path = path.expanduser().absolute()
    files = [p.absolute() for p in in_force]
    if path not in files:
        shown = ", ".join(str(p) for p in files)
        raise NotInForce(f"{path} is not a policy file in force ({shown})")
    per_call = ceiling(request, request.estimate)
    facts = facts_of(request, request.endpoint, request.estimate)
    rule = Always(
        agent=facts.agent,  # as the policy will read it: (unverified) for an unverified agent
        kind=str(request.kind),
        target=facts.endpoint or "",
        per_call_max=per_call,
        daily=daily if daily is not None else per_call * DAILY_CALLS,
        request_id=request.id,
        at=at,
    )
    named = {p: drafts.read_saved(p, drafts.display_name(p, home)) for p in files}
    chosen = named[path]
    text = with_rule(chosen.text, rule)
    judged = drafts.check([(saved, text if p == path else None) for p, saved in named.items()])
    return Proposal(path, chosen.name, chosen.text, text, rule, judged)


def save(proposal: Proposal) -> None:
    drafts.save(proposal.path, proposal.text)
