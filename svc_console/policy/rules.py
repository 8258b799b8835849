"""The rule vocabulary of SKILLS.md policy blocks, as pydantic models.

Every model forbids unknown keys: a misspelt limit is an error, never a limit silently dropped.
Validators say what they expected in words (`must be a number of USDC`); `errors.py` adds the file,
line, column and what was found. `policies/README.md` documents every key with an example.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from decimal import Decimal
from typing import Annotated, Any, Literal, get_args, get_origin
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    ValidationInfo,
    field_validator,
    model_validator,
)

from svc_console.core import names
from svc_console.core.money import format_usdc, parse_usdc
from svc_console.core.taxonomy import CHAINS, DOMAIN_TYPES, PRODUCT_CLASSES, PROTOCOLS
from svc_console.policy import hours, linear_regex

TIERS = ("free", "standard", "premium", "enterprise")
FORMATS = ("csv", "tsv", "json", "jsonl", "parquet", "txt", "md", "pdf")
KINDS = ("market_call", "dataset", "breed_agent", "merge_models")
COMPUTE_TOOLS = {"svc_breed_agent": "breed_agent", "merge_models": "merge_models"}
# never_send names and the secrets_scan patterns they stand for.
SECRET_NAMES = {
    "evm_private_keys": "evm_private_key",
    "solana_private_keys": "solana_private_key",
    "sk_live_keys": "api_key",
    "bearer_tokens": "bearer_token",
    "emails": "email",
}
WINDOWS = {"hour": 3600, "day": 86_400, "week": 7 * 86_400, "month": 30 * 86_400}
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|m|h|d)\s*$")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86_400}
_GLOB_CHARS = frozenset("*?[")


def _one_of(name: str, allowed: Sequence[str], *, upper: bool = False):  # type: ignore[no-untyped-def]
    def check(value: Any) -> str:
        text = str(value).strip() if isinstance(value, str | int) else None
        if text is not None:
            text = text.upper() if upper else text.lower()
            if text in allowed:
                return text
        shown = ", ".join(allowed) if len(allowed) <= 10 else f"{allowed[0]} to {allowed[-1]}"
        raise ValueError(f"must be {name} ({shown})")

    return BeforeValidator(check, json_schema_input_type=Literal[tuple(allowed)])


def _usdc(value: Any) -> Decimal:
    if isinstance(value, bool) or not isinstance(value, int | str | Decimal):
        raise ValueError("must be a number of USDC")
    try:
        return parse_usdc(value)
    except ValueError as exc:
        # parse_usdc quotes what it got; errors.py says that itself, with the YAML spelling.
        raise ValueError(str(exc).split(", got")[0]) from None


def _share(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | Decimal):
        raise ValueError("must be a number from 0 to 1")
    number = float(value)
    if not 0 <= number <= 1:
        raise ValueError("must be a number from 0 to 1")
    return number


def _glob(value: Any) -> str:
    if not isinstance(value, str) or not value.strip() or len(value) > 200:
        raise ValueError("must be a name or a glob pattern such as prov_exa* (text)")
    return value.strip()


def _agent_glob(value: Any) -> str:
    """An agent name or glob in the form names are compared in (`core/names.py`), once, at load;
    a name that is no agent's could never match, so it is an error, not a rule that never
    applies."""
    text = names.fold(_glob(value))
    if (
        text != names.UNVERIFIED
        and _GLOB_CHARS.isdisjoint(text)
        and not names.AGENT_NAME.match(text)
    ):
        raise ValueError(
            f"must be an agent name, a glob such as research-*, or {names.UNVERIFIED}"
            f" (every agent that did not prove its name): an agent name {names.AGENT_NAME_RULE}"
        )
    return text


def _agent_globs(values: list[str] | None) -> list[str] | None:
    return None if values is None else [_agent_glob(value) for value in values]


def _category(value: Any) -> str:
    if not isinstance(value, str) or not re.fullmatch(r"[a-z0-9][a-z0-9_\-/]{0,63}", value.lower()):
        raise ValueError("must be a category slug such as finance or web-data")
    return value.lower()


def parse_duration(value: Any) -> int:
    """Seconds of a duration such as 90s, 15m, 2h or 1d (10s to 7d); ValueError."""
    if isinstance(value, int) and not isinstance(value, bool):
        seconds = float(value)
    else:
        match = _DURATION.match(str(value)) if isinstance(value, str) else None
        if match is None:
            raise ValueError("must be a duration such as 90s, 15m, 2h or 1d")
        seconds = float(match[1]) * _UNITS[match[2]]
    if not 10 <= seconds <= 7 * 86_400:
        raise ValueError("must be between 10s and 7d")
    return int(seconds)


def _whole(most: int):  # type: ignore[no-untyped-def]
    def check(value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= most:
            raise ValueError(f"must be a whole number from 1 to {most:,}")
        return value

    return BeforeValidator(check, json_schema_input_type=int)


def _factor(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 1 < value <= 1000:
        raise ValueError("must be a number above 1 and at most 1000")
    return float(value)


def _window(value: Any) -> str:
    if not isinstance(value, str):
        raise ValueError(f"must be {hours.FORMAT_HINT}")
    return hours.normal(value)


def _timezone(value: Any) -> str:
    try:
        ZoneInfo(str(value))
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError("must be a time zone such as UTC or Europe/Paris") from None
    return str(value)


def _regex(value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError("must be a regular expression (text)")
    try:
        linear_regex.compile(value)
    except ValueError as exc:
        raise ValueError(
            f"is not a valid regular expression ({exc}); patterns run on RE2, "
            "which has no backreferences or lookaround"
        ) from None
    return value


def _compute(value: Any) -> list[str]:
    if isinstance(value, bool):
        return sorted(COMPUTE_TOOLS) if value else []
    if isinstance(value, list):
        tools = []
        for item in value:
            name = {"breed_agent": "svc_breed_agent"}.get(str(item), str(item))
            if name not in COMPUTE_TOOLS:
                raise ValueError("must be true, false or a list of svc_breed_agent, merge_models")
            tools.append(name)
        return sorted(set(tools))
    raise ValueError("must be true, false or a list of svc_breed_agent, merge_models")


Usdc = Annotated[
    Decimal,
    BeforeValidator(_usdc, json_schema_input_type=str | float | int),
    PlainSerializer(format_usdc, return_type=str),
]
Share = Annotated[float, BeforeValidator(_share, json_schema_input_type=float)]
Glob = Annotated[str, BeforeValidator(_glob, json_schema_input_type=str)]
AgentGlob = Annotated[str, BeforeValidator(_agent_glob, json_schema_input_type=str)]
DomainType = Annotated[str, _one_of("a domain type", tuple(DOMAIN_TYPES), upper=True)]
ProductClass = Annotated[str, _one_of("a product class", tuple(PRODUCT_CLASSES), upper=True)]
Chain = Annotated[str, _one_of("a chain", CHAINS)]
Protocol = Annotated[str, _one_of("a protocol", PROTOCOLS)]
Tier = Annotated[str, _one_of("a dataset tier", TIERS)]
Format = Annotated[str, _one_of("a dataset format", FORMATS)]
Kind = Annotated[str, _one_of("a request kind", KINDS)]
Category = Annotated[str, BeforeValidator(_category, json_schema_input_type=str)]
Secret = Annotated[str, _one_of("a kind of secret", tuple(SECRET_NAMES))]
Duration = Annotated[int, BeforeValidator(parse_duration, json_schema_input_type=str | int)]
TimeWindow = Annotated[str, BeforeValidator(_window, json_schema_input_type=str)]
TimeZone = Annotated[str, BeforeValidator(_timezone, json_schema_input_type=str)]
Regex = Annotated[str, BeforeValidator(_regex, json_schema_input_type=str)]
Then = Annotated[str, _one_of("what happens then", ("deny", "ask"))]
Factor = Annotated[float, BeforeValidator(_factor, json_schema_input_type=float)]
ComputeTools = Annotated[
    list[str], BeforeValidator(_compute, json_schema_input_type=bool | list[str])
]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class Lists(Strict):
    """Names and codes a request is matched against (allow, deny, and auto-approve's `when`)."""

    agents: list[AgentGlob] | None = Field(
        None,
        description=f"agent names (globs); {names.UNVERIFIED}: agents that did not prove theirs",
    )
    providers: list[Glob] | None = Field(None, description="provider ids or names (globs)")
    endpoints: list[Glob] | None = Field(None, description="endpoint ids (globs)")
    kinds: list[Kind] | None = Field(None, description="request kinds")
    domain_types: list[DomainType] | None = Field(None, description="A1 to A22")
    product_classes: list[ProductClass] | None = Field(None, description="B1 to B6")
    chains: list[Chain] | None = Field(None, description="settlement chains")
    protocols: list[Protocol] | None = Field(None, description="payment protocols")
    tiers: list[Tier] | None = Field(None, description="dataset tiers")
    categories: list[Category] | None = Field(None, description="dataset categories")
    formats: list[Format] | None = Field(None, description="dataset formats")


LIST_KEYS = tuple(Lists.model_fields)


class Require(Strict):
    """What every provider of a market call must be."""

    verified: bool | None = Field(None, description="only providers the service verified")
    min_quality: Share | None = Field(None, description="lowest qualityScore, 0 to 1")
    min_reliability: Share | None = Field(None, description="lowest reliability, 0 to 1")
    authenticated_agent: bool | None = Field(
        None, description="only agents that proved their name (a token or a registered uid)"
    )


class Budget(Strict):
    """A rolling budget: spend reserved and settled in the last hour/day/week/month."""

    name: str | None = Field(None, max_length=80, description="shown in verdicts")
    per: Literal["agent", "provider", "domain_type", "overall"] = Field(
        "overall", description="one budget for each agent, provider, domain type, or one overall"
    )
    for_: list[Glob] | None = Field(
        None, alias="for", description="only these agents, providers or domain types (globs)"
    )
    window: Literal["hour", "day", "week", "month"]
    warn_usdc: Usdc | None = Field(None, description="warn once spend would pass this")
    max_usdc: Usdc | None = Field(None, description="hard stop: deny what would pass this")

    @field_validator("for_")
    @classmethod
    def _agents_named(cls, values: list[str] | None, info: ValidationInfo) -> list[str] | None:
        # `per: agent` counts every unverified agent as (unverified): `for` names them so too.
        return _agent_globs(values) if info.data.get("per") == "agent" else values

    @model_validator(mode="after")
    def _sane(self) -> Budget:
        if self.warn_usdc is None and self.max_usdc is None:
            raise ValueError("needs max_usdc (a hard stop), warn_usdc, or both")
        warn, most = self.warn_usdc, self.max_usdc
        if warn is not None and most is not None and warn > most:
            raise ValueError("has warn_usdc above max_usdc: the warning would never show")
        if self.per == "overall" and self.for_ is not None:
            raise ValueError('has "for", which applies to per: agent, provider or domain_type')
        return self


class RateLimit(Strict):
    """At most `max_requests` requests in a rolling window, per agent, provider, endpoint or
    overall; the one past it is denied, or asks the operator."""

    name: str | None = Field(None, max_length=80, description="shown in verdicts")
    per: Literal["agent", "provider", "endpoint", "overall"] = Field(
        "agent", description="one count for each agent, provider or endpoint, or one overall"
    )
    window: Duration
    max_requests: Annotated[int, _whole(1_000_000)]
    then: Then = Field("deny", description="deny, or ask the operator")


class Repeats(Strict):
    """The same agent asking for the same thing (endpoint, dataset or tool) with the same inputs
    more than `max_same` times in a window."""

    max_same: Annotated[int, _whole(10_000)]
    window: Duration
    then: Then = Field("ask", description="ask the operator, or deny")


class CircuitBreaker(Strict):
    """`failures` failed, unknown, rejected or denied outcomes of one agent in a row, within the
    window, pause the agent: its requests wait for the operator until it is resumed."""

    failures: Annotated[int, _whole(1000)]
    window: Duration
    then: Literal["pause_agent"] = Field("pause_agent", description="pause_agent")


class Velocity(Strict):
    """Ask the operator when spend in the window passes `factor` times the usual (the median
    hourly spend of the past week, over the hours that had any)."""

    per: Literal["agent", "provider", "domain_type", "overall"] = "agent"
    factor: Factor
    window: Duration = Field(3600, description="at most 1d")

    @model_validator(mode="after")
    def _within_a_day(self) -> Velocity:
        if self.window > 86_400:
            raise ValueError("has a window above 1d: spend is compared hour by hour, up to a day")
        return self


class When(Lists):
    """The conditions of an auto-approve rule: all must hold."""

    authenticated_agent: bool | None = Field(
        None, description="true: only agents that proved their name"
    )
    verified: bool | None = None
    min_quality: Share | None = None
    min_reliability: Share | None = None
    max_usdc: Usdc | None = Field(None, description="the most one call may cost")
    fixed_price: bool | None = Field(None, description="true: only fixed-price endpoints")
    hours: list[TimeWindow] | None = None


class TwoPerson(Strict):
    """Above an amount, two different operators approve a request, neither of them the one who
    registered the agent asking; no auto-approve rule or grant approves it."""

    above_usdc: Usdc = Field(description="above this approval ceiling two operators approve")


class AutoApprove(Strict):
    """An explicit rule approving matching requests without the operator."""

    name: str = Field(min_length=1, max_length=80)
    when: When
    budgets: list[Budget] = Field(default_factory=list, description="what this rule may approve")

    @model_validator(mode="after")
    def _bounded(self) -> AutoApprove:
        if not self.when.model_fields_set:
            raise ValueError("needs at least one condition under when")
        return self


class Rules(Strict):
    """One policy block, or the merged rules of every block of the active files."""

    per_call_max_usdc: Usdc | None = Field(None, description="deny any call that may cost more")
    budgets: list[Budget] = Field(default_factory=list)
    allow: Lists | None = Field(
        None, description="only these (for requests that have the property)"
    )
    deny: Lists | None = None
    require: Require | None = None
    never_send: list[Secret] | None = Field(None, description="secrets that must never leave")
    never_send_patterns: dict[str, Regex] | None = Field(
        None, description="named regular expressions that must never appear in inputs"
    )
    hours: list[TimeWindow] | None = Field(None, description="when requests may be made at all")
    timezone: TimeZone | None = Field(None, description="of hours (default UTC)")
    compute_tools: ComputeTools | None = Field(
        None, description="svc_breed_agent and merge_models: true, false or the allowed ones"
    )
    dynamic_pricing: bool | None = Field(None, description="false: deny dynamically priced calls")
    auto_approve: list[AutoApprove] = Field(default_factory=list)

    @field_validator("auto_approve")
    @classmethod
    def _named_once(cls, rules: list[AutoApprove]) -> list[AutoApprove]:
        # A rule's own budgets and the decisions it makes go by its name: two of one name
        # would share a budget and be told apart by no one.
        seen: set[str] = set()
        for rule in rules:
            if rule.name in seen:
                raise ValueError(
                    f"has two rules named {rule.name!r}: rules are cited and budgeted by name"
                )
            seen.add(rule.name)
        return rules

    confirm_above_usdc: Usdc | None = Field(
        None, description="above this the operator types the amount to approve"
    )
    two_person: TwoPerson | None = Field(
        None, description="above an amount, two different operators approve"
    )
    pending_lifetime: Duration | None = Field(
        None, description="how long a request waits for the operator (90s, 15m, 2h)"
    )
    rate_limits: list[RateLimit] = Field(default_factory=list)
    repeats: Repeats | None = Field(None, description="the same call again and again")
    circuit_breaker: CircuitBreaker | None = Field(
        None, description="pause an agent whose calls keep failing"
    )
    velocity: Velocity | None = Field(None, description="spend far above the usual")


def known_keys(model: type[BaseModel] = Rules, path: tuple[str, ...] = ()) -> dict:
    """Which keys each mapping accepts, by path with list indices folded to `[]` (for
    did-you-mean hints)."""
    found: dict[tuple[str, ...], list[str]] = {path: []}
    for name, info in model.model_fields.items():
        key = info.alias or name
        found[path].append(key)
        for inner, folded in _models_in(info.annotation, (*path, key)):
            found.update(known_keys(inner, folded))
    return found


def _models_in(annotation: Any, path: tuple[str, ...]) -> list[tuple[type[BaseModel], tuple]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [(annotation, path)]
    found = []
    origin = get_origin(annotation)
    for arg in get_args(annotation):
        inner_path = (*path, "[]") if origin is list else path
        found += _models_in(arg, inner_path)
    return found
