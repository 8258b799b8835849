"""The sockets' methods: a table from each method's name to its handler and the socket it is
served on, and who a caller is.

The agents' socket serves `console.hello` and `spend.*`; the operator socket serves
`console.hello`, `approvals.*` (`approvals.follow`: the queue's changes pushed, `broker.follow`;
`approvals.read`: its pages, for a console that cannot read the ledger, `queue_pages`),
`wallet.fund_*` (funding a request that waits for funds, through
to its single retry: `broker.funding`), `agents.sync` and the paused agents (`agents.paused`,
`agents.resume`) and grants (`grants.list`, `grants.revoke`). Every method that changes money or
permissions (the decisions, `agents.resume`, `grants.revoke`, `wallet.fund_*`) asks
`operator_proof` who acts: an account's name and token once accounts exist, else the passphrase,
and where agents of the owner's own user are accepted, never nothing; what it records names who
acted. `agents.sync` does not: it only cancels what the agents' registry already revoked, as
every start does. A method asked of the wrong socket is refused, never served: an agent cannot
reach an operator method whatever it says. On the agents' socket every call speaks for the
identity the connection is bound to (`agent_access`), and requests, idempotency keys, waits and
cancels are that identity's alone: another agent's request is `unknown_request`. The handlers
validate their params (pydantic) and speak to the Broker; the transport and the framing stay in
`socket_server` and `jsonrpc`.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Protocol

from svc_console import __version__
from svc_console.broker import errors, jsonrpc, queue_pages
from svc_console.broker.agent_access import AgentAccess, Identity
from svc_console.broker.deciders import (
    Decider,
    Peer,
    RetryRecorded,
    credentials_of,
    record_act,
    submitter_of,
)
from svc_console.broker.follow import Subscription, threshold_text
from svc_console.broker.funding import Funding
from svc_console.broker.limits import Limits
from svc_console.broker.operator_additions import AddParams, OperatorAdditions
from svc_console.broker.operator_proof import OperatorProof, Operators, Passphrase
from svc_console.broker.params import (
    AgentParams,
    ApproveManyParams,
    ApproveParams,
    Credentials,
    DenyManyParams,
    DenyParams,
    FundWaitParams,
    GrantListParams,
    GrantParams,
    HelloParams,
    ListParams,
    ReadParams,
    RequestParams,
    SubmitParams,
    WaitParams,
)
from svc_console.broker.reads import Reads
from svc_console.broker.secret_refusal import refuse_secrets
from svc_console.broker.service import Broker
from svc_console.broker.shown_requests import listed, public
from svc_console.core.models import SpendRequest, Submitter

PROTOCOL_VERSION = 2
# What the console's own clients (the CLI, the MCP bridge) say in hello: they act for the agent
# that ran them, so that agent, not the client, is the request's submitter.
CONSOLE_CLIENT = "svc-console"


class Role(StrEnum):
    agents = "agents"
    operator = "operator"


class Caller(Protocol):
    """The connection a call came in on, as the methods see it."""

    peer: Peer | None  # as the kernel reported it
    identity: Identity | None  # on the agents' socket, once bound
    client: str | None  # what the client said it is, in hello (a hint, never a credential)
    waits: int  # spend.wait calls under way
    subscription: Subscription | None  # on the operator socket, once following the queue
    # The process behind the connection, read at its first submission (by whether it came
    # through the console's own client): `Methods._submitter`.
    submitters: dict[bool, Submitter | None]

    async def push(self, message: dict[str, Any]) -> None: ...  # a notification, unasked
    def cut_off(self) -> None: ...  # end the connection now (a follower fallen too far behind)


@dataclass
class Methods:
    broker: Broker
    limits: Limits
    role: Role
    access: AgentAccess | None = None  # the agents' socket's
    passphrase: Passphrase | None = None  # the operator socket's, when one may be set
    operators: Operators | None = None  # the operator socket's accounts, when any may exist
    # The operator socket admits other uids (`[operator] uids`): their agents reach it too.
    shared: bool = False

    def __post_init__(self) -> None:
        self.reads = Reads(self.broker)
        self.proof = OperatorProof(self.broker, self.passphrase, self.operators, self._same_user)

    def _same_user(self) -> bool:
        """Whether agents of a user the operator socket admits may be running (no rules: as if
        so): the console owner's own, accepted on the agents' socket, or another operator's."""
        return self.shared or self.access is None or self.access.same_user_accepted

    async def call(self, caller: Caller, method: str, params: dict[str, Any]) -> Any:
        entry = TABLE.get(method)
        if entry is None:
            raise jsonrpc.rpc_error(
                jsonrpc.METHOD_NOT_FOUND, "unknown_method", f"no method {method[:60]!r}"
            )
        if self.role not in entry.roles:
            where = "the operator socket" if Role.operator in entry.roles else "the agents' socket"
            raise errors.NotAuthorised(f"{method} is served only on {where}")
        return await entry.handler(self, caller, params)

    async def hello(self, caller: Caller, params: dict[str, Any]) -> Any:
        hello = HelloParams.model_validate(params)
        caller.client = hello.client
        if self.role == Role.agents:
            # A hello that names no one leaves the connection as it was bound.
            bound = self._access().bind(caller.peer, hello.agent, hello.token)
            caller.identity = bound or caller.identity
        market = self.broker.market
        answer = {
            "server": "svc-console",
            "version": __version__,
            "protocol": PROTOCOL_VERSION,
            "socket": str(self.role),
            "methods": [name for name, entry in TABLE.items() if self.role in entry.roles],
            "limits": self.limits.describe(),
            "service": {
                "base_url": market.base_url,
                "wallet_api_base": market.wallet_api_base,
                "sandbox": market.sandbox,
            },
        }
        if self.role == Role.agents:
            identity = caller.identity
            answer["agent"] = (
                {"name": identity.name, "verified": identity.verified} if identity else None
            )
            answer["enrolment"] = self._access().enrolment
        else:
            answer.update(self.proof.describe())
        status = getattr(self.broker.policy, "status", None)
        if status is not None:
            # A broken policy fails closed; whoever speaks to the console hears so at once.
            answer["policy"] = {"state": status.state, "message": status.message}
        return answer

    # -- agents -------------------------------------------------------------------------------

    async def submit(self, caller: Caller, params: dict[str, Any]) -> Any:
        submission = SubmitParams.model_validate(params)
        identity = self._identity(caller, submission.agent)
        # Before the broker records anything.
        market = self.broker.market
        refuse_secrets(submission, market.secrets, market.signer.key_forms)
        request = await self.broker.submit(
            submission.model_copy(update={"agent": identity.name}),
            verified=identity.verified,
            submitter=self._submitter(caller),
        )
        return {"request_id": request.id, "state": request.state}

    @staticmethod
    def _submitter(caller: Caller) -> Submitter | None:
        """The process that submits on this connection, read from /proc once a connection: the
        peer is who connected, as the kernel recorded it then, for as long as it lives (a pid
        freed and taken again meanwhile would name another process)."""
        via_console_client = caller.client == CONSOLE_CLIENT
        if via_console_client not in caller.submitters:
            caller.submitters[via_console_client] = submitter_of(
                caller.peer, via_console_client=via_console_client
            )
        return caller.submitters[via_console_client]

    async def get(self, caller: Caller, params: dict[str, Any]) -> Any:
        request_id = RequestParams.model_validate(params).request_id
        return public(self._own(caller, request_id))

    async def wait(self, caller: Caller, params: dict[str, Any]) -> Any:
        wait = WaitParams.model_validate(params)
        self._own(caller, wait.request_id)
        with self._waiting(caller):
            changes = wait.until == "change"
            request = await self.broker.wait(
                wait.request_id, wait.timeout_s, any_change=changes, seen=wait.seen
            )
            return public(request)

    @contextlib.contextmanager
    def _waiting(self, caller: Caller) -> Iterator[None]:
        """A call that may take long (a wait), within the connection's limit of them."""
        most = self.limits.max_waits_per_connection
        if caller.waits >= most:
            raise errors.Busy(f"at most {most} waits per connection")
        caller.waits += 1
        try:
            yield
        finally:
            caller.waits -= 1

    async def tools(self, caller: Caller, params: dict[str, Any]) -> Any:
        """The service's free and paid tools with their input schemas (`reads`)."""
        self._identity(caller, None)
        return {"tools": await self.reads.tools()}

    async def read(self, caller: Caller, params: dict[str, Any]) -> Any:
        """One of the service's free tools, answered through the console and recorded."""
        read = ReadParams.model_validate(params)
        identity = self._identity(caller, None)
        return await self.reads.read(identity.name, read.tool, read.arguments)

    async def job(self, caller: Caller, params: dict[str, Any]) -> Any:
        """The status of the compute job one of the caller's own requests started."""
        request_id = RequestParams.model_validate(params).request_id
        request = self._own(caller, request_id)
        return await self.reads.job(request.agent, request)

    async def cancel(self, caller: Caller, params: dict[str, Any]) -> Any:
        request_id = RequestParams.model_validate(params).request_id
        self._own(caller, request_id)
        request = await self.broker.cancel(request_id)
        return {"request_id": request.id, "state": request.state}

    def _access(self) -> AgentAccess:
        assert self.access is not None, "the agents' socket is built with its access rules"
        return self.access

    def _identity(self, caller: Caller, named: str | None) -> Identity:
        """Who the caller speaks for: its bound identity (a different name is refused), else the
        name it gives now, bound as `console.hello` would have."""
        identity = caller.identity
        if identity is None:
            identity = caller.identity = self._access().bind(caller.peer, named, None)
            if identity is None:
                raise errors.NotAuthorised("name the agent: console.hello {agent, token}")
        elif named is not None and named != identity.name:
            raise errors.NotAuthorised(
                f"this connection speaks for agent {identity.name}, not {named[:64]}"
            )
        if not self._access().still_valid(identity):
            caller.identity = None
            raise errors.NotAuthorised(
                f"agent {identity.name}'s registration changed: say console.hello again"
            )
        return identity

    def _own(self, caller: Caller, request_id: str) -> SpendRequest:
        """The caller's own request; any other, like one that does not exist, is unknown (a
        connection that named no agent yet has none)."""
        if caller.identity is None:
            raise errors.UnknownRequest(f"no request {request_id[:100]}")
        identity = self._identity(caller, None)
        try:
            request = self.broker.get(request_id)
        except errors.UnknownRequest:
            request = None
        if (
            request is None
            or request.agent != identity.name
            or request.agent_verified != identity.verified
        ):
            raise errors.UnknownRequest(f"no request {request_id[:100]}")
        return request

    # -- operators ----------------------------------------------------------------------------

    async def list_approvals(self, caller: Caller, params: dict[str, Any]) -> Any:
        listing = ListParams.model_validate(params)
        # Each with the digest of the facts listed, for a decision bound to them (`seen`).
        if listing.view == "history":
            return [listed(r) for r in self.broker.history(listing.limit)]
        # Under the two-person rule, who approved a pending request so far.
        approvals = self.broker.decisions.operator_approvals
        return [
            {**listed(r), "approved_by": approvals(r)} for r in self.broker.pending(listing.limit)
        ]

    async def read_queue(self, caller: Caller, params: dict[str, Any]) -> Any:
        """A page, count, position or request of the queue (`queue_pages`)."""
        return queue_pages.read(self.broker, params)

    async def follow(self, caller: Caller, params: dict[str, Any]) -> Any:
        """From now on, a notification for every change to a request (`broker.follow`); what
        an attached console needs to decide as the broker would ask it to."""
        if caller.subscription is None:
            caller.subscription = Subscription(
                self.broker, caller.push, caller.cut_off, buffer=self.limits.follow_buffer
            )
            caller.subscription.start()
        return {
            "following": True,
            "buffer": self.limits.follow_buffer,
            "confirm_above_usdc": threshold_text(self.broker),
            # As hello says them: what to ask for (accounts, once any exist, replace the
            # passphrase), and why nothing would do.
            **self.proof.describe(),
        }

    async def facts(self, caller: Caller, params: dict[str, Any]) -> Any:
        """What the TUI's detail shows of a pending request beyond its row: the budgets it draws
        on, now and after approving it, and the two-person rule's line when it applies."""
        request = self.broker.get(RequestParams.model_validate(params).request_id)
        lines = self.broker.budgets_for(request)
        return {
            "budgets": [dataclasses.asdict(line) for line in lines],
            "two_person": self.broker.decisions.two_person_status(request),
        }

    async def approve(self, caller: Caller, params: dict[str, Any]) -> Any:
        approval = ApproveParams.model_validate(params)
        decider = await self._decider(caller, approval.request_id, approval)
        return public(await self.broker.approve(approval, decider))

    async def deny(self, caller: Caller, params: dict[str, Any]) -> Any:
        denial = DenyParams.model_validate(params)
        decider = await self._decider(caller, denial.request_id, denial)
        return public(await self.broker.deny(denial, decider))

    async def approve_many(self, caller: Caller, params: dict[str, Any]) -> Any:
        """Several requests approved at once, each its own decision; by request, its state."""
        approval = ApproveManyParams.model_validate(params)
        decider = await self._decider(caller, approval.request_ids[0], approval)
        return await self.broker.approve_many(
            approval.request_ids,
            confirm_total=approval.confirm_total,
            note=approval.note,
            decider=decider,
            seen=approval.seen,
        )

    async def deny_many(self, caller: Caller, params: dict[str, Any]) -> Any:
        denial = DenyManyParams.model_validate(params)
        decider = await self._decider(caller, denial.request_ids[0], denial)
        return await self.broker.deny_many(
            denial.request_ids, denial.reason, decider, seen=denial.seen
        )

    async def fund_start(self, caller: Caller, params: dict[str, Any]) -> Any:
        """A funding checkout for what the wallet lacks of what the request needs."""
        given, params = credentials_of(params)
        request_id = RequestParams.model_validate(params).request_id
        decider = await self._decider(caller, request_id, given, passphrase=False)
        started = await Funding(self.broker).start(request_id)
        if started["checkout"] is not None:  # a balance that covers it opens none
            record_act(self.broker, request_id, "funding_checkout", decider)
        return started

    async def fund_wait(self, caller: Caller, params: dict[str, Any]) -> Any:
        """Until the balance covers the request, changes, or the request stops waiting."""
        given, params = credentials_of(params)
        wait = FundWaitParams.model_validate(params)
        await self._decider(caller, wait.request_id, given, passphrase=False)
        with self._waiting(caller):
            return await Funding(self.broker).wait(
                wait.request_id, wait.timeout_s, wait.balance_usdc
            )

    async def fund_retry(self, caller: Caller, params: dict[str, Any]) -> Any:
        """The single retry, once the balance covers the request; the request when it ends."""
        given, params = credentials_of(params)
        wait = WaitParams.model_validate(params)
        decider = await self._decider(caller, wait.request_id, given, passphrase=False)
        with self._waiting(caller):
            funding = Funding(RetryRecorded(self.broker, decider))  # type: ignore[arg-type]
            return public(await funding.retry(wait.request_id, wait.timeout_s))

    async def sync_agents(self, caller: Caller, params: dict[str, Any]) -> Any:
        """After `svc-console agents revoke`: cancel what revoked agents left undecided."""
        revoked = self._access().registry.revoked()
        return {"cancelled": await self.broker.cancel_agents(revoked)}

    async def paused_agents(self, caller: Caller, params: dict[str, Any]) -> Any:
        """The agents the circuit breaker paused, and why."""
        return [pause.__dict__ for pause in self.broker.pauses.paused()]

    async def resume_agent(self, caller: Caller, params: dict[str, Any]) -> Any:
        """Resume a paused agent: its rules apply to its requests again."""
        resume = AgentParams.model_validate(params)
        decider = await self._decider(caller, None, resume)
        return self.broker.pauses.resume(resume.agent, decider).__dict__

    async def list_grants(self, caller: Caller, params: dict[str, Any]) -> Any:
        """The grants in force; with `all`, the latest ones, ended too."""
        listing = GrantListParams.model_validate(params)
        grants = self.broker.grants
        rows = grants.recent(listing.limit) if listing.all else grants.in_force()
        return [row.__dict__ for row in rows]

    async def revoke_grant(self, caller: Caller, params: dict[str, Any]) -> Any:
        given, params = credentials_of(params)
        revoke = GrantParams.model_validate(params)
        decider = await self._decider(caller, None, given, passphrase=False)
        return self.broker.grants.revoke(revoke.grant_id, decider).__dict__

    async def add_operator(self, caller: Caller, params: dict[str, Any]) -> Any:
        """An operator account added, or under a two-person rule proposed, by an operator who
        proved it (`operator_additions`); the new token in the answer, shown once."""
        asked = AddParams.model_validate(params)
        if self.operators is None or not self.operators.any():
            raise errors.OperatorRequired(
                "the first operator account is added with svc-console operators add NAME, the"
                " passphrase typed; nothing changed"
            )
        decider = await self._decider(caller, None, asked)
        live = self.operators.live  # type: ignore[attr-defined]
        return OperatorAdditions(self.broker, live, self.broker.clock).add(asked.name, decider)

    async def check(self, caller: Caller, params: dict[str, Any]) -> Any:
        """Whether credentials would let the caller act, checked as every act checks them (the
        wait after wrong ones included): an attached console's sign-in or unlock asks here."""
        given = Credentials.model_validate(params)
        decider = await self.proof.decider(caller.peer, None, given)
        return {"operator": decider.operator}

    async def _decider(
        self,
        caller: Caller,
        request_id: str | None,
        given: Credentials,
        *,
        passphrase: bool = True,
    ) -> Decider:
        """Who acts over this socket, proved (`operator_proof`); `passphrase=False`: an act that
        is not a decision (revoking a grant, funding)."""
        return await self.proof.decider(caller.peer, request_id, given, decision=passphrase)


Handler = Callable[[Methods, Caller, dict[str, Any]], Awaitable[Any]]


@dataclass(frozen=True)
class Entry:
    handler: Handler
    roles: tuple[Role, ...]


AGENTS, OPERATOR, BOTH = (Role.agents,), (Role.operator,), (Role.agents, Role.operator)
TABLE: dict[str, Entry] = {
    "console.hello": Entry(Methods.hello, BOTH),
    "spend.submit": Entry(Methods.submit, AGENTS),
    "spend.wait": Entry(Methods.wait, AGENTS),
    "spend.get": Entry(Methods.get, AGENTS),
    "spend.cancel": Entry(Methods.cancel, AGENTS),
    "market.tools": Entry(Methods.tools, AGENTS),
    "market.read": Entry(Methods.read, AGENTS),
    "market.job": Entry(Methods.job, AGENTS),
    "approvals.list": Entry(Methods.list_approvals, OPERATOR),
    "approvals.read": Entry(Methods.read_queue, OPERATOR),
    "approvals.follow": Entry(Methods.follow, OPERATOR),
    "approvals.facts": Entry(Methods.facts, OPERATOR),
    "approvals.approve": Entry(Methods.approve, OPERATOR),
    "approvals.deny": Entry(Methods.deny, OPERATOR),
    "approvals.approve_many": Entry(Methods.approve_many, OPERATOR),
    "approvals.deny_many": Entry(Methods.deny_many, OPERATOR),
    "wallet.fund_start": Entry(Methods.fund_start, OPERATOR),
    "wallet.fund_wait": Entry(Methods.fund_wait, OPERATOR),
    "wallet.fund_retry": Entry(Methods.fund_retry, OPERATOR),
    "agents.sync": Entry(Methods.sync_agents, OPERATOR),
    "agents.paused": Entry(Methods.paused_agents, OPERATOR),
    "agents.resume": Entry(Methods.resume_agent, OPERATOR),
    "grants.list": Entry(Methods.list_grants, OPERATOR),
    "grants.revoke": Entry(Methods.revoke_grant, OPERATOR),
    "operators.check": Entry(Methods.check, OPERATOR),
    "operators.add": Entry(Methods.add_operator, OPERATOR),
}
