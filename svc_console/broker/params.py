"""The parameters of each socket method, validated before anything is recorded."""

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from svc_console.core.models import Kind
from svc_console.core.money import Usdc

# \Z, not $: "$" also matches before a final newline, which would let "bot\n" through.
AGENT_NAME = re.compile(r"\A[A-Za-z0-9][A-Za-z0-9._\-]{0,63}\Z")
MAX_PURPOSE = 2000
MAX_WAIT_S = 3600.0


class Params(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class HelloParams(Params):
    agent: str | None = None
    token: str | None = Field(None, repr=False)


class SubmitParams(Params):
    agent: str
    kind: Kind
    endpoint_id: str | None = Field(None, min_length=1, max_length=200)
    dataset_id: str | None = Field(None, min_length=1, max_length=200)
    inputs: dict[str, Any]
    purpose: str = Field(min_length=1, max_length=MAX_PURPOSE)
    max_usdc: Usdc | None = None
    idempotency_key: str | None = Field(None, min_length=1, max_length=200)

    @field_validator("agent")
    @classmethod
    def _agent_name(cls, value: str) -> str:
        if not AGENT_NAME.match(value):
            raise ValueError("must be 1-64 letters, digits, '.', '_' or '-', starting with one")
        return value

    @model_validator(mode="after")
    def _target(self) -> "SubmitParams":
        if self.kind == Kind.market_call and not self.endpoint_id:
            raise ValueError("a market_call needs endpoint_id")
        if self.kind == Kind.dataset and not self.dataset_id:
            raise ValueError("a dataset purchase needs dataset_id")
        return self


class RequestParams(Params):
    request_id: str = Field(min_length=1, max_length=100)


class WaitParams(RequestParams):
    timeout_s: float = Field(30.0, ge=0, le=MAX_WAIT_S)


class ApproveParams(RequestParams):
    confirm_amount: Usdc | None = None
    note: str | None = Field(None, max_length=500)


class DenyParams(RequestParams):
    reason: str = Field(min_length=1, max_length=500)


class ListParams(Params):
    view: Literal["pending", "history"] = "pending"
    limit: int = Field(100, ge=1, le=1000)
