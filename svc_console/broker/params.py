"""The parameters of each socket method, validated before anything is recorded."""

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from svc_console.core import names
from svc_console.core.models import Kind
from svc_console.core.money import PlainUsdc, Usdc
from svc_console.core.shown_facts import DIGEST
from svc_console.core.states import State

MAX_PURPOSE = 2000
MAX_WAIT_S = 3600.0


class Params(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class HelloParams(Params):
    agent: str | None = Field(None, max_length=64)
    token: str | None = Field(None, repr=False, max_length=200)
    client: str | None = Field(None, max_length=64)  # what the client is, as it says


class SubmitParams(Params):
    agent: str | None = None  # absent: the agent the connection is bound to
    kind: Kind
    endpoint_id: str | None = Field(None, min_length=1, max_length=200)
    dataset_id: str | None = Field(None, min_length=1, max_length=200)
    inputs: dict[str, Any]
    purpose: str = Field(min_length=1, max_length=MAX_PURPOSE)
    max_usdc: PlainUsdc | None = None
    idempotency_key: str | None = Field(None, min_length=1, max_length=200)

    @field_validator("agent")
    @classmethod
    def _agent_name(cls, value: str | None) -> str | None:
        # In the form the connection's identity was bound in (core/names.py).
        return names.canonical(value) if value is not None else None

    @model_validator(mode="after")
    def _target(self) -> "SubmitParams":
        if self.kind == Kind.market_call and not self.endpoint_id:
            raise ValueError("a market_call needs endpoint_id")
        if self.kind == Kind.dataset and not self.dataset_id:
            raise ValueError("a dataset purchase needs dataset_id")
        return self


class RequestParams(Params):
    request_id: str = Field(min_length=1, max_length=100)


class Credentials(Params):
    """Who decides, over the operator socket: an operator account's name and token once
    accounts exist, else the operator passphrase when one is set."""

    passphrase: str | None = Field(None, repr=False, max_length=1024)
    operator: str | None = Field(None, min_length=1, max_length=64)
    token: str | None = Field(None, repr=False, max_length=200)


class AgentParams(Credentials):
    """`agents.resume`: a paused agent, and who resumes it."""

    agent: str = Field(min_length=1, max_length=200)


class ReadParams(Params):
    """`market.read`: one of the service's free tools, with its arguments as the service takes
    them (the service checks them against its schema)."""

    tool: str = Field(min_length=1, max_length=64)
    arguments: dict[str, Any] = Field(default_factory=dict)


class WaitParams(RequestParams):
    timeout_s: float = Field(30.0, ge=0, le=MAX_WAIT_S)
    # "change": return at the request's next change of state, not only when it is final.
    until: Literal["final", "change"] = "final"
    # With "change": the state the caller last saw. A request already past it is answered at
    # once, so a change between two waits (executing, over in a moment) is never missed.
    seen: State | None = None


class FundWaitParams(WaitParams):
    """`wallet.fund_wait`: `balance_usdc` is the balance the caller last saw (a change ends the
    wait, so the caller can say so)."""

    balance_usdc: Usdc | None = None


# The digest of the facts a decision was made on (`core/shown_facts.py`): the broker refuses the
# decision once the request's facts give another. Optional: a script may decide by id alone.
Seen = Annotated[str, Field(pattern=DIGEST.pattern)]


class Several(Params):
    """A decision on several requests: the digest each was shown with, by request id."""

    request_ids: list[str] = Field(min_length=1, max_length=500)
    seen: dict[str, Seen] | None = None

    @model_validator(mode="after")
    def _seen_of_these(self) -> "Several":
        if not set(self.seen or ()) <= set(self.request_ids):
            raise ValueError("seen names a request that request_ids does not")
        return self


class ApproveParams(RequestParams, Credentials):
    seen: Seen | None = None
    confirm_amount: Usdc | None = None
    note: str | None = Field(None, max_length=500)
    # For a while: also approve this agent's calls to the same endpoint, each at most this
    # approval's amount, up to `grant_total` in all, for `grant_for` (15m, 1h, session).
    grant_for: str | None = Field(None, max_length=20)
    grant_total: Usdc | None = None


class DenyParams(RequestParams, Credentials):
    seen: Seen | None = None
    reason: str = Field(min_length=1, max_length=500)
    grant_for: str | None = Field(None, max_length=20)  # also deny calls like it for a while


class ApproveManyParams(Several, Credentials):
    """Several pending requests approved at once: each gets its own decision; the typed
    confirmation, when the total needs one, is the total."""

    confirm_total: Usdc | None = None
    note: str | None = Field(None, max_length=500)


class DenyManyParams(Several, Credentials):
    reason: str = Field(min_length=1, max_length=500)


class GrantParams(Params):
    grant_id: int = Field(ge=1)


class GrantListParams(Params):
    all: bool = False
    limit: int = Field(100, ge=1, le=1000)


class ListParams(Params):
    view: Literal["pending", "history"] = "pending"
    limit: int = Field(100, ge=1, le=1000)


class QueryParams(Params):
    """A `RequestQuery` as the socket takes it: which requests, in what order."""

    states: tuple[State, ...] = Field(min_length=1, max_length=len(State))
    order: Literal["created", "updated", "amount", "expires", "agent"] = "created"
    descending: bool = False
    text: str = Field("", max_length=500)
    verdict: Literal["ask", "deny", "auto_approve"] | None = None
    risk: Literal["high", "warn", "none"] | None = None


class WindowRead(Params):
    read: Literal["window"]
    query: QueryParams
    offset: int = Field(0, ge=0)
    limit: int = Field(50, ge=1, le=500)


class CountRead(Params):
    read: Literal["count"]
    query: QueryParams


class PositionRead(Params):
    read: Literal["position"]
    query: QueryParams
    request_id: str = Field(min_length=1, max_length=100)


class GetRead(Params):
    read: Literal["get"]
    request_id: str = Field(min_length=1, max_length=100)


# `approvals.read`: one of the reads the approvals screen makes of the ledger.
QueueRead = Annotated[WindowRead | CountRead | PositionRead | GetRead, Field(discriminator="read")]
