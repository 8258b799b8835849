"""The service's usage history as typed records, what finance filters it by, and how one charge is
reconciled with the ledger's decisions.

`GET /api/agent/usage` lists the charges the service made: one `UsageCharge` per charge, a page at a
time (`UsagePage`). The console keeps them in its ledger and matches each one, by idempotency key,
with the execution and the decision that allowed it. Pure: no SQL, no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import Literal

from pydantic import Field, field_serializer, field_validator

from svc_console.core.models import Wire
from svc_console.core.money import Usdc

DAY_S = 86_400


def parse_instant(value: object) -> float:
    """Seconds since the epoch from a number or an ISO-8601 string (no zone means UTC)."""
    if isinstance(value, bool):
        raise ValueError("must be a time")
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        text = value.strip()
        if text.endswith(("Z", "z")):
            text = text[:-1] + "+00:00"
        try:
            moment = datetime.fromisoformat(text)
        except ValueError:
            raise ValueError(f"is not an ISO-8601 time: {value[:40]!r}") from None
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        return moment.timestamp()
    raise ValueError("must be a time")


def iso_instant(at: float) -> str:
    """`2026-01-02T03:04:05Z`, with microseconds only when there are any."""
    moment = datetime.fromtimestamp(at, UTC)
    spec = "seconds" if moment.microsecond == 0 else "microseconds"
    return moment.isoformat(timespec=spec).replace("+00:00", "Z")


def day_of(at: float) -> int:
    """Days since 1970-01-01 (UTC): the unit of spend per day."""
    return int(at // DAY_S)


def day_label(day: int) -> str:
    return datetime.fromtimestamp(day * DAY_S, UTC).date().isoformat()


class UsageCharge(Wire):
    """One charge of `GET /api/agent/usage`, as the service reports it (untrusted data).

    `resource` is what was bought: an endpoint id, a dataset id or a tool name (`kind` says which).
    `agent`, `provider` and `domainType` are optional: the service knows the account, the console's
    ledger knows which of its agents asked, so a matched request fills what the service left out.
    """

    id: str = Field(min_length=1, max_length=200, description="the charge id, unique per service")
    at: float = Field(alias="createdAt", description="when it was charged (ISO-8601 on the wire)")
    agent: str | None = None
    kind: str = "market_call"
    resource: str = Field(alias="resourceId")
    provider: str | None = None
    domain_type: str | None = Field(None, alias="domainType")
    chain: str
    protocol: Literal["x402", "mpp"]
    amount_usdc: Usdc = Field(alias="amountUsdc")
    idempotency_key: str | None = Field(None, alias="idempotencyKey")
    receipt: str | None = Field(None, description="the settlement's transaction reference")

    @field_validator("at", mode="before")
    @classmethod
    def _instant(cls, value: object) -> float:
        return parse_instant(value)

    @field_serializer("at")
    def _iso(self, at: float) -> str:
        return iso_instant(at)


class UsagePage(Wire):
    """`GET /api/agent/usage`: oldest first; `next_cursor` is None on the last page.
    `service_id`: the identity the service gives itself, when it gives one (the sandbox gives
    each run its own), which names its charges better than its address does."""

    charges: list[UsageCharge]
    next_cursor: str | None = Field(None, alias="nextCursor")
    service_id: str | None = Field(None, alias="serviceId", pattern=r"^[!-~]{1,120}$")


def service_identity(base_url: str, given: str | None) -> str:
    """What a service's charges are kept under: the identity it gives itself, else its base
    URL (scheme and host in lower case, no trailing slash). Never holds a space."""
    if given:
        return given
    scheme, _, rest = base_url.strip().rstrip("/").partition("://")
    host, slash, path = rest.partition("/")
    return f"{scheme.lower()}://{host.lower()}{slash}{path}".replace(" ", "%20")


# -- reconciliation -------------------------------------------------------------------------------


class Reconciled(StrEnum):
    """How a charge stands against the ledger: covered by an approval, or flagged."""

    ok = "ok"
    uncovered = "uncovered"  # no approval in the ledger covers it
    over = "over"  # covered, but charged more than the approved ceiling
    conflict = "conflict"  # a second version of a charge already held, kept beside the first


# Why a charge is flagged, one word each (stored beside the state, worded by `flag_text`).
FLAG_TEXT = {
    "no_request": "no request in the ledger has this idempotency key",
    "no_key": "the service reported no idempotency key",
    "not_approved": "the request was never approved",
    "duplicate": "another charge already used this approval",
    "no_ceiling": "approved without a ceiling",
    "above_ceiling": "charged more than the approved ceiling",
    "conflict": "the service reported this charge before with other facts; both are kept",
}


@dataclass(frozen=True)
class LedgerMatch:
    """What the ledger says about a charge's idempotency key (atomic USDC for the ceiling)."""

    request_id: str
    agent: str
    provider: str | None
    domain_type: str | None
    approved: bool | None  # None: the execution has no decision the ledger can find
    decided_by: str | None
    ceiling: int | None
    first_charge: bool = True  # False when an earlier charge already matched this execution


def reconcile(
    amount: int, match: LedgerMatch | None, *, has_key: bool = True
) -> tuple[Reconciled, str | None]:
    """The state of one charge of `amount` atomic USDC and, when flagged, the word for why."""
    if match is None:
        return Reconciled.uncovered, "no_request" if has_key else "no_key"
    if not match.approved:
        return Reconciled.uncovered, "not_approved"
    if not match.first_charge:
        return Reconciled.uncovered, "duplicate"
    if match.ceiling is None:
        return Reconciled.over, "no_ceiling"
    if amount > match.ceiling:
        return Reconciled.over, "above_ceiling"
    return Reconciled.ok, None


# -- what finance filters by ----------------------------------------------------------------------

STATE_FILTERS = ("flagged", "ok", "uncovered", "over", "conflict")


@dataclass(frozen=True)
class UsageFilter:
    """A view of the usage history. Times are epoch seconds: `since` inclusive, `until` exclusive.

    `state` is one of `STATE_FILTERS` ("flagged" is any but ok) or None for all."""

    since: float | None = None
    until: float | None = None
    agent: str | None = None
    provider: str | None = None
    chain: str | None = None
    domain_type: str | None = None
    state: str | None = None

    def __post_init__(self) -> None:
        if self.state is not None and self.state not in STATE_FILTERS:
            raise ValueError(f"state must be one of {', '.join(STATE_FILTERS)}")
        if self.since is not None and self.until is not None and self.until <= self.since:
            raise ValueError("the end of the range must come after its start")

    @property
    def is_default(self) -> bool:
        return self == UsageFilter()
