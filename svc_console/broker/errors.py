"""Errors the broker reports to agents and operators, each with a stable JSON-RPC code and a
one-word reason (the socket's `data.reason`)."""


class BrokerError(Exception):
    code = -32000
    reason = "error"

    def __init__(self, message: str, **data: object):
        super().__init__(message)
        self.message = message
        self.data = data


class InvalidParams(BrokerError):
    code, reason = -32602, "invalid_params"


class SecretInParams(InvalidParams):
    """A submission holding what looks like a secret (a private key, an sk_live_ key, a bearer
    token): refused before anything is recorded. The same code and reason as any invalid params;
    `data` adds `field` (a path, never the value) and `kind` (a secrets_scan kind)."""


class UnknownRequest(BrokerError):
    code, reason = -32001, "unknown_request"


class NotAuthorised(BrokerError):
    code, reason = -32002, "not_authorised"


class WrongState(BrokerError):
    """The request is not in a state where this action applies (cancel after execution began)."""

    code, reason = -32003, "wrong_state"


class FactsChanged(WrongState):
    """A decision bound to facts the request no longer has (`core/shown_facts.py`): repriced,
    re-quoted, its verdict or state changed, or another request altogether. Nothing is decided
    or recorded; `data.request_ids` names the requests that changed."""

    reason = "changed"


class ConfirmationRequired(BrokerError):
    code, reason = -32004, "confirmation_required"


class BlockedByPolicy(BrokerError):
    """An approval the policy in force forbids now (a deny rule, a budget's hard stop)."""

    code, reason = -32007, "blocked_by_policy"


class TooLarge(BrokerError):
    code, reason = -32005, "too_large"


class Busy(BrokerError):
    """A limit of the socket was reached (connections, concurrent waits)."""

    code, reason = -32006, "busy"


class IdempotencyConflict(BrokerError):
    """A key used again with other parameters: `data.fields` names those that differ."""

    code, reason = -32009, "idempotency_conflict"


class MarketFailed(BrokerError):
    """The marketplace did not answer an operator's step usably (a balance read, a funding
    checkout); nothing was recorded or spent. The message says which step, inert."""

    code, reason = -32010, "market_error"


class PassphraseRequired(NotAuthorised):
    """A decision over the operator socket without the operator passphrase, or with a wrong one.
    A kind of `not_authorised`, with its own reason so the CLI knows to ask for it."""

    code, reason = -32008, "passphrase_required"


class OperatorRequired(NotAuthorised):
    """A decision over the operator socket of a console with operator accounts, without an
    account's name and token or with a wrong one (said alike: the caller learns nothing of which
    names exist)."""

    code, reason = -32011, "operator_required"


class SecondOperatorRequired(NotAuthorised):
    """Under the two-person rule, an approval by an operator who may not give it: the one who
    already approved, the one who registered the asking agent, or no named operator at all."""

    code, reason = -32012, "second_operator_required"


class CredentialRequired(NotAuthorised):
    """A decision over the operator socket where agents of the owner's own user are accepted and
    no operator credential (passphrase, account) is set: refused, saying how to set one."""

    code, reason = -32013, "credential_required"


class TooManyTries(NotAuthorised):
    """A credential tried while its peer waits after wrong ones (`backoff`): refused unchecked;
    `data.retry_in_s` says when the next try is checked."""

    code, reason = -32014, "too_many_tries"
