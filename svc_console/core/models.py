"""Pydantic models of the domain: endpoints as the marketplace describes them, spend requests as an
agent submits them, and what the console learns and decides about each.

Field names on the wire follow SPEC.md (`qualityScore`, `domain_type`); Python names are snake_case.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Literal

from pydantic import (
    AliasGenerator,
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    model_serializer,
    model_validator,
)
from pydantic.alias_generators import to_camel

from svc_console.core.money import Usdc
from svc_console.core.states import State


class Wire(BaseModel):
    """The marketplace's own records: accept both spellings, emit the marketplace's."""

    model_config = ConfigDict(populate_by_name=True, serialize_by_alias=True, frozen=True)


class Model(BaseModel):
    """The console's records (the socket speaks snake_case); camelCase accepted from the market."""

    model_config = ConfigDict(
        alias_generator=AliasGenerator(validation_alias=to_camel),
        populate_by_name=True,
        frozen=True,
    )


class Pricing(Wire):
    """The catalogue's price: an estimate only; the runtime 402/MPP challenge is authoritative."""

    model: Literal["fixed", "dynamic"]
    amount_usdc: Usdc | None = Field(None, alias="amountUsdc")
    min_usdc: Usdc | None = Field(None, alias="minUsdc")
    max_usdc: Usdc | None = Field(None, alias="maxUsdc")

    @model_validator(mode="after")
    def _complete(self) -> Pricing:
        if self.model == "fixed" and self.amount_usdc is None:
            raise ValueError("fixed pricing needs amountUsdc")
        if self.model == "dynamic" and (self.min_usdc is None or self.max_usdc is None):
            raise ValueError("dynamic pricing needs minUsdc and maxUsdc")
        return self

    @property
    def ceiling(self) -> Usdc:
        """The most one call can cost according to the catalogue."""
        return self.amount_usdc if self.model == "fixed" else self.max_usdc  # type: ignore[return-value]


class EndpointRecord(Wire):
    """`GET /api/endpoints/{id}`: one callable endpoint of a market provider."""

    id: str
    name: str
    description: str = ""
    provider: str
    provider_name: str = Field(alias="providerName")
    origin: Literal["publisher", "registry"]
    domain_type: str
    product_class: str
    chains: list[str]
    protocols: list[Literal["x402", "mpp"]]
    pricing: Pricing
    verified: bool
    quality_score: float = Field(alias="qualityScore", ge=0, le=1)
    reliability: float = Field(ge=0, le=1)
    inputs: dict[str, Any] = Field(default_factory=dict, description="JSON Schema of the inputs")
    tags: list[str] = Field(default_factory=list)


class DryRun(Wire):
    """What the wallet proxy answers to `dryRun: true`: validated, priced, nothing spent."""

    endpoint_id: str = Field(alias="endpointId")
    protocol: Literal["x402", "mpp"]
    chain: str
    estimated_usdc: Usdc = Field(alias="estimatedUsdc")
    min_usdc: Usdc | None = Field(None, alias="minUsdc")
    max_usdc: Usdc | None = Field(None, alias="maxUsdc")
    required_fields: list[str] = Field(default_factory=list, alias="requiredFields")
    policy: dict[str, Any] = Field(default_factory=dict)
    balance_usdc: Usdc | None = Field(None, alias="balanceUsdc")

    @property
    def ceiling(self) -> Usdc:
        return self.max_usdc if self.max_usdc is not None else self.estimated_usdc


class Receipt(Model):
    protocol: Literal["x402", "mpp"]
    network: str
    transaction: str
    idempotency_key: str


class Outcome(Model):
    """A successful paid call. `body` is untrusted upstream data, kept verbatim."""

    status: int
    content_type: str
    body: str
    body_encoding: Literal["utf-8", "base64"] = "utf-8"
    charged_usdc: Usdc
    chain: str
    receipt: Receipt


class FundingCheckout(Wire):
    """`POST /api/funding/checkout`: where the operator tops the wallet up with USDC."""

    checkout_url: str = Field(alias="checkoutUrl")
    funding_url: str | None = Field(None, alias="fundingUrl")
    username: str | None = None
    amount_usdc: Usdc | None = Field(None, alias="amountUsdc")
    balance_usdc: Usdc | None = Field(None, alias="balanceUsdc")


class Kind(StrEnum):
    market_call = "market_call"
    dataset = "dataset"
    breed_agent = "breed_agent"
    merge_models = "merge_models"


class Severity(StrEnum):
    info = "info"
    warn = "warn"
    high = "high"


class RiskFlag(Model):
    code: str
    severity: Severity
    reason: str


class Estimate(Model):
    """The price the operator is asked to approve, from the dry run or the tool's challenge.
    A challenge also pins where the money goes: the recipient (`pay_to`), the asset, the CAIP-2
    network and the scheme; a dry run pins none of them (the wallet proxy signs)."""

    amount_usdc: Usdc
    min_usdc: Usdc | None = None
    max_usdc: Usdc | None = None
    chain: str
    protocol: Literal["x402", "mpp"]
    pay_to: str | None = None
    asset: str | None = None
    network: str | None = None
    scheme: str | None = None

    @property
    def dynamic(self) -> bool:
        return self.max_usdc is not None and self.max_usdc != self.min_usdc

    @property
    def ceiling(self) -> Usdc:
        return self.max_usdc if self.max_usdc is not None else self.amount_usdc


class RuleCitation(Model):
    """One policy rule that decided or warned about a request, and where it is written."""

    effect: Literal["deny", "auto_approve", "ask", "warn", "note"]
    rule: str
    reason: str
    file: str | None = None
    line: int | None = None


class BudgetImpact(Model):
    """A budget's spend (reserved and settled) before and after this request, in its window."""

    budget: str
    before_usdc: Usdc
    after_usdc: Usdc
    warn_usdc: Usdc | None = None
    max_usdc: Usdc | None = None
    file: str | None = None
    line: int | None = None


class Verdict(Model):
    """What policy said before the operator saw the request. `rules` names the deciding rules
    (the first one is recorded as the decider of an automatic approval); `citations` lists every
    rule that decided or warned, with its file and line; `budgets` the budget figures."""

    outcome: Literal["deny", "auto_approve", "ask"]
    summary: str
    rules: list[str] = Field(default_factory=list)
    citations: list[RuleCitation] = Field(default_factory=list)
    budgets: list[BudgetImpact] = Field(default_factory=list)
    policy_sha256: str | None = None
    # What writes the words of a verdict made by `later`, until they are first read.
    _write: Callable[[], dict[str, Any]] | None = PrivateAttr(None)

    @classmethod
    def later(
        cls, outcome: str, policy_sha256: str | None, write: Callable[[], dict[str, Any]]
    ) -> Verdict:
        """A verdict whose words (summary, rules, citations, budgets) are written by `write`
        when first read or serialised: judging a request costs its outcome, not its prose.
        `write` returns values of the fields' own types, made by the console."""
        verdict = cls.__new__(cls)
        object.__setattr__(
            verdict, "__dict__", {"outcome": outcome, "policy_sha256": policy_sha256}
        )
        object.__setattr__(verdict, "__pydantic_fields_set__", set(_ORDER))
        object.__setattr__(verdict, "__pydantic_extra__", None)
        object.__setattr__(verdict, "__pydantic_private__", {"_write": write})
        return verdict

    def _written(self) -> None:
        private = self.__pydantic_private__
        write = private.get("_write") if private else None
        if write is not None:
            private["_write"] = None
            # In the fields' order, as any verdict serialises; a copy's update wins.
            words, given = write(), self.__dict__
            whole = {name: given[name] if name in given else words[name] for name in _ORDER}
            object.__setattr__(self, "__dict__", whole)

    if not TYPE_CHECKING:

        def __getattr__(self, name: str) -> Any:
            if name in _WORDS:
                self._written()
                if name in self.__dict__:
                    return self.__dict__[name]
            return super().__getattr__(name)

    @model_serializer(mode="wrap")
    def _serialised_whole(self, handler: Any) -> Any:
        self._written()
        return handler(self)

    def __eq__(self, other: object) -> bool:
        self._written()
        if isinstance(other, Verdict):
            other._written()
        return super().__eq__(other)

    def __repr_args__(self) -> Any:
        self._written()
        return super().__repr_args__()

    def __iter__(self) -> Any:
        self._written()
        return super().__iter__()

    def __getstate__(self) -> dict[Any, Any]:
        self._written()
        return super().__getstate__()


_WORDS = frozenset({"summary", "rules", "citations", "budgets"})
_ORDER = tuple(Verdict.model_fields)


class Evidence(Model):
    """Who made a decision, as the console itself observed it (never as the caller said): the
    channel, and the deciding process's uid, pid and name as the kernel reported them; for a
    policy rule, the rule and the policy version in force; from Slack, the Slack user whose
    button press Slack delivered over the app's own connection."""

    channel: Literal["tui", "cli", "policy", "grant", "slack"]
    uid: int | None = None
    pid: int | None = None
    process: str | None = None
    rule: str | None = None
    policy_version: str | None = None  # the sha256 of the policy in force
    operator: str | None = None  # the operator account whose token proved it (or the TUI's)
    slack_user: str | None = None  # the Slack user id linked to that operator account

    def summary(self, *, pid: bool = True) -> str:
        """One line for history and exports: "cli · uid 1000 · pid 4242 (svc-console)"; without
        the pid, "cli · uid 1000 (svc-console)"; with an operator, "operator alice · cli · ...";
        from Slack, "operator alice · slack · user U012AB3CD"."""
        if self.channel == "policy":
            version = f" · policy {self.policy_version[:12]}" if self.policy_version else ""
            return f"policy rule {self.rule or '?'}{version}"
        parts = [f"operator {self.operator}", self.channel] if self.operator else [self.channel]
        if self.slack_user is not None:
            parts.append(f"user {self.slack_user}")
        if self.uid is not None:
            parts.append(f"uid {self.uid}")
        process = f" ({self.process})" if self.process else ""
        if pid and self.pid is not None:
            parts.append(f"pid {self.pid}{process}")
            process = ""
        return " · ".join(parts) + process


class Submitter(Model):
    """The process that submitted a request, as the agents' socket saw it: its peer credentials,
    and the agent process the request is traced back to (the submitting process itself, or the
    parent of the console's own client that it ran). `start` is the process's start time in clock
    ticks since boot, so a pid reused later is not mistaken for it."""

    uid: int
    pid: int
    start: int | None = None
    process: str | None = None


class Decision(Model):
    approved: bool
    by: str
    at: float
    ceiling_usdc: Usdc | None = None
    note: str | None = None
    evidence: Evidence | None = None


class SpendRequest(Model):
    """A request as the ledger holds it and `spend.get` returns it."""

    id: str
    agent: str
    # True when the connection proved the name (its token, or a peer uid registered for it); an
    # unverified name is only what an agent said, in open enrolment.
    agent_verified: bool = False
    kind: Kind
    endpoint_id: str | None = None
    dataset_id: str | None = None
    inputs: dict[str, Any]
    purpose: str
    max_usdc: Usdc | None = None
    idempotency_key: str | None = None
    state: State
    reason: str | None = None
    created_at: float
    updated_at: float
    expires_at: float | None = None
    endpoint: EndpointRecord | None = None
    estimate: Estimate | None = None
    risk: list[RiskFlag] = Field(default_factory=list)
    verdict: Verdict | None = None
    decision: Decision | None = None
    outcome: Outcome | None = None
    skill: str | None = Field(None, description="the endpoint's skill.md, untrusted text")
    funding_url: str | None = None
    submitter: Submitter | None = None  # the console's own record; `spend.get` leaves it out
