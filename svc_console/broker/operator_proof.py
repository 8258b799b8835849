"""Who may act over the operator socket: the one check every decision and every act that touches
money or permissions passes (approve, deny, both in bulk, a grant's revocation, a paused agent's
resume, a funding checkout and its retry).

The kernel says only that the caller runs as the console's owner, and so does every agent of
that user: the socket's owner-only mode tells the operator from such an agent no better than the
process tree does (`deciders.refuse_own_request`, an extra, never the protection). What such an
agent cannot do is know what the operator knows. So:

- with operator accounts, every act needs an account's name and token;
- without, wherever agents of the owner's own user are accepted (open enrolment, or
  `allow_same_user`), every act needs the operator passphrase, and with none set every act is
  refused, saying how to set one;
- where they are not (strict enrolment, other users' agents only), the passphrase guards the
  decisions once one is set.

The broker's own TUI decides in its own process and never passes here. A wrong passphrase or
token makes the caller's uid wait before its next try (`backoff`), and every refusal is kept in
the audit chain by bursts (`refusal_log.RefusalAudit`).
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable
from typing import Any, Protocol

from svc_console.broker import errors
from svc_console.broker.backoff import Backoff
from svc_console.broker.deciders import Decider, Peer
from svc_console.broker.params import Credentials

NO_CREDENTIAL = (
    "agents running as your own user are accepted, and they can use the operator socket as well"
    " as you can: decisions from outside the console's own terminal need an operator"
    " credential, and none is set. Set the operator passphrase with `svc-console operators"
    " passwd` (or add operator accounts with `svc-console operators add NAME`), then restart"
    " the console"
)


class Passphrase(Protocol):
    def is_set(self) -> bool: ...
    def verify(self, candidate: str) -> bool: ...


class Operators(Protocol):
    """The operator accounts the console pinned at start (`config.operator_accounts`)."""

    def any(self) -> bool: ...
    def authenticate(self, name: str, token: str) -> Any: ...


class OperatorProof:
    def __init__(
        self,
        broker: Any,
        passphrase: Passphrase | None,
        operators: Operators | None,
        same_user: Callable[[], bool],
    ):
        self.broker, self.passphrase, self.operators = broker, passphrase, operators
        self.same_user = same_user
        self.backoff = Backoff(broker.clock)

    def accounts(self) -> bool:
        return self.operators is not None and self.operators.any()

    def passphrase_set(self) -> bool:
        return self.passphrase is not None and self.passphrase.is_set()

    def describe(self) -> dict[str, Any]:
        """What hello and `approvals.follow` tell the operator's tools: what to ask for, and
        when nothing would do, why and how to set a credential."""
        accounts, same_user = self.accounts(), self.same_user()
        missing = same_user and not accounts and not self.passphrase_set()
        return {
            "operators_required": accounts,
            "passphrase_required": not accounts and self.passphrase_set(),
            # Every act needs the credential, not only decisions (a grant's revocation, funding).
            "credential_required": same_user,
            "no_credential": NO_CREDENTIAL if missing else None,
        }

    async def decider(
        self,
        peer: Peer | None,
        request_id: str | None,
        given: Credentials,
        *,
        decision: bool = True,
    ) -> Decider:
        """Who acts over this socket, proved, or a refusal (kept in the audit chain).
        `decision=False`: an act that is not a decision (a grant's revocation, funding), which
        the passphrase guards only where same-user agents are accepted."""
        decider = Decider.on_operator_socket(peer)
        if self.accounts():
            return await self._account(peer, request_id, given, decider)
        if given.operator is not None:
            raise errors.OperatorRequired(
                "this console has no operator accounts (svc-console operators add NAME):"
                " drop --operator; nothing was decided"
            )
        same_user = self.same_user()
        if not (decision or same_user):
            return decider
        if not self.passphrase_set():
            if not same_user:
                return decider
            self._refuse(request_id, "no operator credential is set", decider)
            raise errors.CredentialRequired(f"{NO_CREDENTIAL}; nothing was decided")
        assert self.passphrase is not None
        typed = given.passphrase
        if typed and await self._checked(peer, request_id, decider, self.passphrase.verify, typed):
            return decider
        reason = "wrong operator passphrase" if typed else "no operator passphrase given"
        self._refuse(request_id, reason, decider)
        raise errors.PassphraseRequired(f"{reason}: a decision needs the operator passphrase")

    async def _account(
        self, peer: Peer | None, request_id: str | None, given: Credentials, decider: Decider
    ) -> Decider:
        """With accounts: the account whose name and token were given."""
        assert self.operators is not None
        if given.operator is not None and given.token is not None:
            account = await self._checked(
                peer, request_id, decider, self.operators.authenticate, given.operator, given.token
            )
            if account is not None:
                return Decider.on_operator_socket(peer, account.name)
        reason = (
            "unknown operator or wrong token"
            if given.operator is not None
            else "no operator account named"
        )
        self._refuse(request_id, reason, decider)
        raise errors.OperatorRequired(
            f"{reason}: this console's decisions need an operator account (--operator NAME"
            " with its token); nothing was decided"
        )

    async def _checked(
        self,
        peer: Peer | None,
        request_id: str | None,
        decider: Decider,
        check: Callable[..., Any],
        *given: str,
    ) -> Any:
        """`check(*given)` (a slow hash: off the event loop), unless the peer must wait after
        its last failures; the check's answer, falsy for a failure."""
        uid = peer.uid if peer is not None else None
        async with self.backoff.turn(uid):
            wait = self.backoff.retry_in(uid)
            if wait > 0:
                self._refuse(request_id, "a try while backing off", decider)
                seconds = math.ceil(wait)
                raise errors.TooManyTries(
                    f"too many wrong credentials from uid {uid}: try again in {seconds} s;"
                    " nothing was decided",
                    retry_in_s=seconds,
                )
            answer = await asyncio.to_thread(check, *given)
            if answer:
                self.backoff.succeeded(uid)
            else:
                self.backoff.failed(uid)
            return answer

    def _refuse(self, request_id: str | None, reason: str, decider: Decider) -> None:
        """Keep the refusal; a request id that names no request is not kept as one."""
        known = request_id is not None and self.broker.ledger.get(request_id) is not None
        self.broker.decisions.refuse(request_id if known else None, reason, decider)
