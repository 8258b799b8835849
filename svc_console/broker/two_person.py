"""The two-person rule (SKILLS.md `two_person: {above_usdc: X}`): above that ceiling, two
different operators approve before a request is approved.

Two accounts are two people only as far as the console can tell (invariant 13): an account
created by one of the two approvers (who added it, or seconded adding it), or two accounts
created by the same account, never count as two. So one operator cannot approve twice with an
account they made (`operators add alice2 --operator alice`), nor with two of them; and under the
rule, adding an account needs a second operator (`broker.operator_additions`). What it cannot
tell is who holds a token: accounts made by different operators, whose tokens one person holds,
still count as two (docs/operators.md).

The first approval is an `operator_approval` event in the audit chain and the request stays
pending; the second, by another operator, commits the decision, which names both. Neither may be
the operator who registered the asking agent; a named operator is needed (an account's, or the
TUI's own), since two approvals by nobody in particular are no two people. A first approval
counts only for the request as it was approved: the same ceiling and the same stay in the queue
(a re-priced request comes back with a new lifetime and needs two approvals again). A first
approval is in the ledger, so it outlives a restart of the console.
A deny by anyone ends the request, as any deny does. No policy rule or grant approves above the
amount (policy/engine.py), so only operators ever satisfy it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from decimal import Decimal

from svc_console.broker import errors
from svc_console.broker.deciders import Decider
from svc_console.core import names
from svc_console.core.models import Evidence, SpendRequest
from svc_console.core.money import format_usdc
from svc_console.core.states import State
from svc_console.ledger import Ledger

KIND = "operator_approval"


def threshold(policy: object) -> Decimal | None:
    """The policy's two-person amount; None when it has none (an engine that predates the rule,
    as some tests' stand-ins do, has none)."""
    return getattr(policy, "two_person_above_usdc", None)


def applies(policy: object, ceiling: Decimal) -> bool:
    above = threshold(policy)
    return above is not None and ceiling > above


def approvals(
    ledger: Ledger,
    request: SpendRequest,
    ceiling: Decimal,
    removed: Callable[[str], bool] = lambda name: False,
) -> list[str]:
    """The operators who approved `request` so far, first first, as it stands now; an approval
    by an operator whose account was `removed` since no longer counts."""
    return list(approved_by(ledger, request, ceiling, removed))


def approved_by(
    ledger: Ledger,
    request: SpendRequest,
    ceiling: Decimal,
    removed: Callable[[str], bool] = lambda name: False,
) -> dict[str, Evidence]:
    """`approvals`, each with the evidence recorded with it (what a mandate names)."""
    rows = ledger.db.execute(
        "SELECT data FROM events WHERE request_id = ? AND type = ? ORDER BY seq",
        [request.id, KIND],
    ).fetchall()
    found: dict[str, Evidence] = {}
    for (data,) in rows:
        approval = json.loads(data)
        # Another stay in the queue (after a re-price) or another ceiling: another question.
        same = approval.get("expires_at") == request.expires_at
        same = same and approval.get("ceiling_usdc") == str(ceiling)
        if same and not removed(approval["operator"]):
            # In the one form names compare in (a first approval recorded before there was one).
            who = names.fold(approval["operator"])
            found.setdefault(who, Evidence.model_validate(approval["evidence"]))
    return found


def second_needed(
    ledger: Ledger,
    request: SpendRequest,
    ceiling: Decimal,
    decider: Decider,
    *,
    at: float,
    registrant: Callable[[str], str | None],
    removed: Callable[[str], bool],
    refuse: Callable[[str], None],
    creators: Callable[[str], frozenset[str]] = lambda name: frozenset(),
) -> list[str] | None:
    """Check `decider` may approve under the rule. Returns the names of the approvals the
    decision will carry (the first one's and this one's) when this approval completes it; None
    after recording a first approval. Refuses (kept in the audit chain by `refuse`) an approval
    that cannot count."""
    who = decider.operator
    if who is None:
        reason = "the two-person rule needs named operators"
        refuse(reason)
        raise errors.SecondOperatorRequired(
            f"{request.id} may cost {format_usdc(ceiling)} USDC, above the two-person amount:"
            f" {reason}"
            " (operator accounts: svc-console operators add NAME, then --operator NAME; in the"
            " TUI, settings.toml [operator] name);"
            " nothing was decided"
        )
    registered_by = registrant(request.agent)
    if registered_by is not None and names.fold(registered_by) == who:
        reason = f"operator {who} registered agent {request.agent}"
        refuse(reason)
        raise errors.SecondOperatorRequired(
            f"{reason}: under the two-person rule two other operators approve its requests;"
            " nothing was decided"
        )
    so_far = approvals(ledger, request, ceiling, removed)
    if who in so_far:
        reason = f"operator {who} already approved {request.id}"
        refuse(reason)
        raise errors.SecondOperatorRequired(
            f"{reason}: the two-person rule needs a second, different operator; nothing changed"
        )
    if so_far:
        first = so_far[0]
        why = not_two_people(first, who, creators)
        if why is not None:
            reason = f"operators {first} and {who} do not count as two people: {why}"
            refuse(reason)
            raise errors.SecondOperatorRequired(
                f"{reason}; the two-person rule needs an operator whose account neither of you"
                " created; nothing changed"
            )
        return [first, who]
    _record_first(ledger, request, ceiling, decider, at)
    return None


def not_two_people(
    first: str, second: str, creators: Callable[[str], frozenset[str]]
) -> str | None:
    """Why two approvers' accounts may be one person's, or None when they count as two."""
    made_first, made_second = creators(first), creators(second)
    if first in made_second:
        return f"{first} created {second}'s account"
    if second in made_first:
        return f"{second} created {first}'s account"
    shared = sorted(made_first & made_second)
    if shared:
        return f"{shared[0]} created both accounts"
    return None


def _record_first(
    ledger: Ledger, request: SpendRequest, ceiling: Decimal, decider: Decider, at: float
) -> None:
    """The first approval, in the audit chain; the request stays pending."""
    if request.expires_at is not None and at >= request.expires_at:
        raise errors.WrongState(
            f"request {request.id} ran out of time before this approval; nothing was decided"
        )
    data = {
        "operator": decider.operator,
        "ceiling_usdc": str(ceiling),
        "expires_at": request.expires_at,
        "evidence": decider.evidence().model_dump(mode="json"),
    }
    with ledger.transaction():
        state = ledger.db.execute(
            "SELECT state FROM requests WHERE id = ?", [request.id]
        ).fetchone()
        if state is None or state[0] != State.pending:
            raise errors.WrongState(f"request {request.id} is no longer pending")
        ledger.event(request.id, KIND, data, at)


def status(above: Decimal, names: list[str]) -> str:
    """What the approvals detail says of a request under the rule."""
    rule = f"two different operators approve above {format_usdc(above)} USDC"
    if names:
        return f"approved by {', '.join(names)}; needs a second operator ({rule})"
    return f"{rule}; none has yet"
