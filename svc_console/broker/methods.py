"""The socket's methods: a table from each method's name to its handler, and who may call it.

Agent methods (`console.hello`, `spend.*`) are open to every connection; operator methods
(`approvals.*`) only to a connection that presented the operator token in `console.hello`. The
handlers validate their params (pydantic) and speak to the Broker; the transport, the framing and
the token itself stay in `socket_server` and `jsonrpc`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

from svc_console import __version__
from svc_console.broker import errors, jsonrpc
from svc_console.broker.limits import Limits
from svc_console.broker.params import (
    ApproveParams,
    DenyParams,
    HelloParams,
    ListParams,
    RequestParams,
    SubmitParams,
    WaitParams,
)
from svc_console.broker.secret_refusal import refuse_secrets
from svc_console.broker.service import Broker

PROTOCOL_VERSION = 1


class Caller(Protocol):
    """The connection a call came in on, as the methods see it."""

    operator: bool  # presented the operator token
    waits: int  # spend.wait calls under way

    def present_token(self, token: str) -> None:
        """Make the connection an operator's, or raise NotAuthorised."""


@dataclass
class Methods:
    broker: Broker
    limits: Limits

    async def call(self, caller: Caller, method: str, params: dict[str, Any]) -> Any:
        entry = TABLE.get(method)
        if entry is None:
            raise jsonrpc.rpc_error(
                jsonrpc.METHOD_NOT_FOUND, "unknown_method", f"no method {method[:60]!r}"
            )
        if entry.operator and not caller.operator:
            raise errors.NotAuthorised(
                f"{method} is for operators: say console.hello with the operator token"
            )
        return await entry.handler(self, caller, params)

    async def hello(self, caller: Caller, params: dict[str, Any]) -> Any:
        hello = HelloParams.model_validate(params)
        if hello.token is not None:
            caller.present_token(hello.token)
        market = self.broker.market
        return {
            "server": "svc-console",
            "version": __version__,
            "protocol": PROTOCOL_VERSION,
            "methods": list(AGENT_METHODS + (OPERATOR_METHODS if caller.operator else ())),
            "operator": caller.operator,
            "limits": self.limits.describe(),
            "service": {
                "base_url": market.base_url,
                "wallet_api_base": market.wallet_api_base,
                "sandbox": market.sandbox,
            },
        }

    async def submit(self, caller: Caller, params: dict[str, Any]) -> Any:
        submission = SubmitParams.model_validate(params)
        # Before the broker records anything.
        refuse_secrets(submission, [self.broker.market.payer_key or ""])
        request = await self.broker.submit(submission)
        return {"request_id": request.id, "state": request.state}

    async def get(self, caller: Caller, params: dict[str, Any]) -> Any:
        return public(self.broker.get(RequestParams.model_validate(params).request_id))

    async def wait(self, caller: Caller, params: dict[str, Any]) -> Any:
        wait = WaitParams.model_validate(params)
        most = self.limits.max_waits_per_connection
        if caller.waits >= most:
            raise errors.Busy(f"at most {most} waits per connection")
        caller.waits += 1
        try:
            return public(await self.broker.wait(wait.request_id, wait.timeout_s))
        finally:
            caller.waits -= 1

    async def cancel(self, caller: Caller, params: dict[str, Any]) -> Any:
        request = await self.broker.cancel(RequestParams.model_validate(params).request_id)
        return {"request_id": request.id, "state": request.state}

    async def list_approvals(self, caller: Caller, params: dict[str, Any]) -> Any:
        listing = ListParams.model_validate(params)
        chosen = self.broker.pending if listing.view == "pending" else self.broker.history
        return [public(r) for r in chosen(listing.limit)]

    async def approve(self, caller: Caller, params: dict[str, Any]) -> Any:
        return public(await self.broker.approve(ApproveParams.model_validate(params), by="cli"))

    async def deny(self, caller: Caller, params: dict[str, Any]) -> Any:
        return public(await self.broker.deny(DenyParams.model_validate(params), by="cli"))


Handler = Callable[[Methods, Caller, dict[str, Any]], Awaitable[Any]]


@dataclass(frozen=True)
class Entry:
    handler: Handler
    operator: bool = False  # only on a connection that presented the operator token


TABLE: dict[str, Entry] = {
    "console.hello": Entry(Methods.hello),
    "spend.submit": Entry(Methods.submit),
    "spend.wait": Entry(Methods.wait),
    "spend.get": Entry(Methods.get),
    "spend.cancel": Entry(Methods.cancel),
    "approvals.list": Entry(Methods.list_approvals, operator=True),
    "approvals.approve": Entry(Methods.approve, operator=True),
    "approvals.deny": Entry(Methods.deny, operator=True),
}
AGENT_METHODS = tuple(name for name, entry in TABLE.items() if not entry.operator)
OPERATOR_METHODS = tuple(name for name, entry in TABLE.items() if entry.operator)


def public(request: Any) -> dict[str, Any]:
    # skill.md is for the operator's screen; agents fetch it themselves if they want it. Which
    # process submitted is the console's evidence, not the agent's business.
    return request.model_dump(mode="json", exclude={"skill", "submitter"})
