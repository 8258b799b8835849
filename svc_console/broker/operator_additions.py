"""Adding an operator account through the running console, so that the addition is a decision in
the audit chain, and, under a two-person rule, a decision of two operators.

Without a two-person rule in the policy in force, an operator's `operators add NAME` adds the
account at once (`operator_added`, naming who added it). Under one, the first operator's asking is
a proposal (`operator_proposed`); a second, different operator asking the same adds it
(`operator_added`, naming both), and the token goes to that second operator, the only time it is
shown. The new account records both as its creators, so that neither can count it as a second
person beside them (`two_person.not_two_people`). A proposal lapses after a day, or when its
proposer's account is removed. Like every account added while a console runs, it counts from the
console's next start.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from pydantic import Field, field_validator

from svc_console.broker import errors, two_person
from svc_console.broker.deciders import Decider
from svc_console.broker.params import Credentials
from svc_console.config.operator_accounts import AccountsError
from svc_console.core import names

PROPOSED, ADDED = "operator_proposed", "operator_added"
PROPOSAL_LIFETIME_S = 86_400.0


class AddParams(Credentials):
    """`operators.add`: the new operator's name, and who asks (an account's name and token)."""

    name: str = Field(min_length=1, max_length=64)

    @field_validator("name")
    @classmethod
    def _one_form(cls, value: str) -> str:
        # So that `Bob` seconds the proposal to add `bob` (core/names.py).
        return names.canonical(value)


class OperatorAdditions:
    def __init__(self, broker: Any, accounts: Any, clock: Callable[[], float]):
        self.broker, self.accounts, self.clock = broker, accounts, clock

    def add(self, name: str, decider: Decider) -> dict[str, Any]:
        """Add `name` as `decider` asks (an operator proved by their token), or propose it."""
        who = decider.operator
        if who is None:
            raise errors.OperatorRequired("adding an operator needs an operator account's token")
        if two_person.threshold(self.broker.policy) is None:
            token = self._add(name, who, None)
            self._record(ADDED, {"name": name, "by": [who]}, decider)
            return {"name": name, "state": "added", "by": [who], "token": token}
        proposer = self._proposer(name)
        if proposer is None:
            others = [a.name for a in self.accounts.accounts() if a.active and a.name != who]
            if not others:
                raise errors.SecondOperatorRequired(
                    f"a policy holds a two-person rule and {who} is this console's only"
                    " operator: no second one can approve adding another. Add a team's"
                    " operators before the rule comes into force; nothing changed"
                )
            self._record(PROPOSED, {"name": name, "by": who}, decider)
            return {"name": name, "state": "proposed", "by": [who], "token": None}
        if proposer == who:
            raise errors.SecondOperatorRequired(
                f"{who} already asked to add operator {name}: under the two-person rule a"
                " second, different operator approves it; nothing changed"
            )
        token = self._add(name, proposer, who)
        self._record(ADDED, {"name": name, "by": [proposer, who]}, decider)
        return {"name": name, "state": "added", "by": [proposer, who], "token": token}

    def _add(self, name: str, added_by: str, seconded_by: str | None) -> str:
        try:
            return self.accounts.add(name, added_by=added_by, seconded_by=seconded_by)
        except AccountsError as exc:
            raise errors.InvalidParams(f"{exc}; nothing changed") from None

    def _proposer(self, name: str) -> str | None:
        """Who proposed adding `name`, while that proposal stands: the latest event about the
        name is a proposal less than a day old by an operator whose account is still there."""
        rows = self.broker.ledger.db.execute(
            "SELECT type, data, at FROM events WHERE request_id IS NULL AND type IN (?, ?)"
            " ORDER BY seq DESC",
            [PROPOSED, ADDED],
        ).fetchall()
        for kind, data, at in rows:
            said = json.loads(data)
            if said.get("name") != name:
                continue
            if kind != PROPOSED or self.clock() - float(at) >= PROPOSAL_LIFETIME_S:
                return None
            proposer = said.get("by")
            return None if self.accounts.removed(proposer) else proposer
        return None

    def _record(self, kind: str, data: dict[str, Any], decider: Decider) -> None:
        data = {**data, "evidence": decider.evidence().model_dump(mode="json")}
        ledger = self.broker.ledger
        with ledger.transaction():
            ledger.event(None, kind, data, self.clock())
