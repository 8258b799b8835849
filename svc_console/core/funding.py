"""The funding of one request that waits for funds, as the operator follows it on the wallet screen
or from `svc-console wallet fund`: checkout started → waiting for funds → funded → retrying once →
outcome.

A `FundingFlow` is an immutable record of where that path stands; the wallet screen replaces it
as the worker's messages and the broker's news arrive, and the funding panel draws it; the CLI
replaces it as the operator socket answers and prints each step. Nothing here does I/O or knows
of widgets or terminals, so each step can be checked on its own, and both say the same words.

What a request needs is its approved ceiling: the retry may spend up to that and never more, so a
balance that covers the ceiling is sure to cover the retry (the runtime price may be lower).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from decimal import Decimal
from enum import IntEnum
from urllib.parse import urlsplit

from svc_console.core.models import FundingCheckout, SpendRequest
from svc_console.core.money import format_usdc
from svc_console.core.sanitize import inert_line
from svc_console.core.states import State


class Stage(IntEnum):
    """Where a flow is; the value is the step (1-5) the operator sees in progress."""

    checkout = 1
    waiting = 2
    funded = 3
    retrying = 4
    done = 5


STEP_TITLES = {
    Stage.checkout: "checkout started",
    Stage.waiting: "waiting for funds",
    Stage.funded: "funded",
    Stage.retrying: "retrying once",
    Stage.done: "outcome",
}
# How a request ended after its retry, as a tone of `colors.Palette`.
_OUTCOME_TONES = {State.succeeded: "good", State.pending: "warn"}


def required(request: SpendRequest) -> Decimal | None:
    """What the wallet must hold for the retry: the approved ceiling (else the estimate)."""
    if request.decision is not None and request.decision.ceiling_usdc is not None:
        return request.decision.ceiling_usdc
    return request.estimate.ceiling if request.estimate is not None else None


def shortfall(request: SpendRequest, balance: Decimal | None) -> Decimal | None:
    """How much is missing (0 when the balance covers it); None when either side is unknown."""
    needed = required(request)
    if needed is None or balance is None:
        return None
    return max(Decimal(0), needed - balance)


def safe_link(url: str | None) -> str | None:
    """The URL itself when it may become a terminal link: http(s), a host, printable ASCII only
    (nothing that could end the link's escape sequence or disguise where it goes)."""
    if not url or len(url) > 2000:
        return None
    if not all(33 <= ord(char) < 127 for char in url):
        return None
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    return url


@dataclass(frozen=True)
class FundingFlow:
    request_id: str
    required: Decimal
    stage: Stage = Stage.checkout
    # The checkout the service started (None until it answers, or when none was needed).
    checkout: FundingCheckout | None = None
    checkout_skipped: bool = False
    balance: Decimal | None = None
    # A passing problem the flow survives (a balance check that failed, to be tried again).
    note: str | None = None
    # Why the flow stopped at `stage` (a refusal, the service unreachable, the operator).
    problem: str | None = None
    stopped: bool = False
    outcome: str | None = None
    outcome_tone: str = ""

    @property
    def running(self) -> bool:
        """Still working: the operator may stop it, and no other flow may start."""
        return self.problem is None and not self.stopped and self.stage < Stage.done

    @property
    def amount(self) -> Decimal | None:
        """What the checkout asks for."""
        if self.checkout is not None and self.checkout.amount_usdc is not None:
            return self.checkout.amount_usdc
        return None

    @property
    def link(self) -> str | None:
        """The checkout's address, when it is safe to link (and to encode as a QR code)."""
        if self.checkout is None:
            return None
        return safe_link(self.checkout.checkout_url)

    def seen_balance(self, balance: Decimal) -> FundingFlow:
        return dataclasses.replace(self, balance=balance, note=None)

    def checkout_started(self, checkout: FundingCheckout) -> FundingFlow:
        balance = checkout.balance_usdc if checkout.balance_usdc is not None else self.balance
        return dataclasses.replace(self, stage=Stage.waiting, checkout=checkout, balance=balance)

    def covered_already(self, balance: Decimal) -> FundingFlow:
        return dataclasses.replace(
            self, stage=Stage.funded, checkout_skipped=True, balance=balance, note=None
        )

    def funded(self, balance: Decimal) -> FundingFlow:
        return dataclasses.replace(self, stage=Stage.funded, balance=balance, note=None)

    def retrying(self) -> FundingFlow:
        return dataclasses.replace(self, stage=Stage.retrying)

    def noted(self, note: str) -> FundingFlow:
        return dataclasses.replace(self, note=note)

    def failed(self, problem: str) -> FundingFlow:
        return dataclasses.replace(self, problem=problem, note=None)

    def stop(self) -> FundingFlow:
        return dataclasses.replace(self, stopped=True, note=None)

    def settled(self, request: SpendRequest) -> FundingFlow:
        """The request after its retry: how it ended, in one line."""
        state = request.state
        if state == State.succeeded and request.outcome is not None:
            text = (
                f"succeeded: charged {format_usdc(request.outcome.charged_usdc)} USDC"
                f" on {inert_line(request.outcome.chain, 20)}"
            )
        elif state == State.pending:
            text = "re-priced: back in the approvals queue for a new decision"
        else:
            text = f"{state}: {inert_line(request.reason or 'no reason given', 160)}"
        return dataclasses.replace(
            self,
            stage=Stage.done,
            outcome=text,
            outcome_tone=_OUTCOME_TONES.get(state, "high"),
            note=None,
        )


def _usdc(amount: object) -> str:
    return f"{format_usdc(amount)} USDC"  # type: ignore[arg-type]


def step_line(flow: FundingFlow, stage: Stage) -> tuple[str, str]:
    """What a step says now, with the tone of its mark (a tone of the TUI's palette)."""
    if stage == Stage.checkout:
        if flow.checkout_skipped:
            return "no checkout needed: the balance already covers the request", "good"
        if flow.checkout is not None:
            amount = flow.amount
            return (f"checkout started for {_usdc(amount)}" if amount else "checkout started"), ""
        return f"starting a checkout for what {flow.request_id} lacks…", ""
    if stage == Stage.waiting:
        if flow.balance is not None and flow.stage <= Stage.waiting:
            return (
                f"waiting for funds: the wallet holds {_usdc(flow.balance)}"
                f" of the {_usdc(flow.required)} needed",
                "",
            )
        return "waiting for funds", ""
    if stage == Stage.funded:
        if flow.stage >= Stage.funded and flow.balance is not None:
            return (
                f"funded: {_usdc(flow.balance)} covers the {_usdc(flow.required)} needed",
                "",
            )
        return "funded", ""
    if stage == Stage.retrying:
        if flow.stage >= Stage.retrying:
            return "retried once, within the same approval", ""
        return STEP_TITLES[stage], ""
    if flow.outcome is not None:
        return flow.outcome, flow.outcome_tone
    return STEP_TITLES[stage], ""
