"""The mutable side of the sandbox: credentials, the fake wallet balance, the allowlisted registry,
the charges made and the idempotency replay store.

The server answers from its own thread while tests (or the demo) change the state from another, so
every read-modify-write goes through one re-entrant lock: two executions can never both pass the
balance check on the same funds, and a replayed idempotency key can never be charged twice.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from urllib.parse import quote

from svc_console.core.home import home_folder
from svc_console.core.money import parse_usdc
from svc_console.sandbox import pricing
from svc_console.sandbox.accounts import Accounts
from svc_console.sandbox.compute import JobBoard
from svc_console.sandbox.faults import Faults
from svc_console.sandbox.faults import reprice_factor as fault_reprice_factor
from svc_console.sandbox.outbox import Outbox

DEFAULT_BALANCE = Decimal(25)
DEFAULT_USERNAME = "sandbox-operator"


@dataclass(frozen=True)
class Charge:
    """One paid execution: what the fake wallet was debited, for which call."""

    id: str
    endpoint_id: str
    protocol: str
    price_usdc: Decimal
    chain: str
    idempotency_key: str
    at: float
    billed_usdc: Decimal  # what the usage history says: the price, unless an overbill fault fired


@dataclass(frozen=True)
class Replay:
    """The stored answer of an executed idempotency key, returned byte for byte on a retry."""

    fingerprint: str
    body: bytes


class InsufficientFunds(Exception):
    def __init__(self, balance: Decimal, required: Decimal):
        super().__init__(f"balance {balance} USDC is below the {required} USDC required")
        self.balance, self.required = balance, required


def default_outbox() -> Path:
    """`$SVC_CONSOLE_HOME/sandbox/outbox`: where the sandbox delivers its e-mail by default."""
    return home_folder()[0] / "sandbox" / "outbox"


class SandboxState:
    """Everything the sandbox remembers between requests. Credentials are fresh per instance."""

    def __init__(
        self,
        *,
        username: str = DEFAULT_USERNAME,
        balance: Decimal = DEFAULT_BALANCE,
        registry: Iterable[str] | None = None,
        outbox: Path | None = None,
    ):
        self.lock = threading.RLock()
        # Each sandbox is a service of its own: its charges are numbered from ch_000001 again,
        # and the console keeps them under this identity (`GET /api/agent/usage`'s serviceId),
        # so a restarted sandbox adds charges beside the last one's instead of meeting them.
        self.service_id = "sandbox-" + secrets.token_hex(8)
        self.api_key = "sk_live_" + secrets.token_urlsafe(24)
        self.username = username
        self.api_token = secrets.token_urlsafe(32)
        # Guards the funding form against posts from pages the operator did not open.
        self.funding_token = secrets.token_urlsafe(16)
        self.base_url: str | None = None
        self._balance = parse_usdc(balance)
        # The least the funding page offers to add (None: what the checkout asked): the demo
        # sets it so one checkout pays for the rest of its tour, not only the request waiting.
        self.top_up: Decimal | None = None
        if registry is None:
            from svc_console.sandbox.catalog import catalog

            registry = (record.id for record in catalog().endpoints)
        self._registry: set[str] = set(registry)
        self._charges: list[Charge] = []
        self._replays: dict[str, Replay] = {}
        self._reprice_factor = Decimal(1)
        # Accounts, one-time codes (delivered to the outbox folder, default
        # $SVC_CONSOLE_HOME/sandbox/outbox, as config's Paths.sandbox_outbox also says) and
        # compute jobs: see sandbox.accounts, .compute.
        self.outbox_dir = Path(outbox) if outbox is not None else default_outbox()
        self.accounts = Accounts(self, Outbox(self.outbox_dir))
        self.jobs = JobBoard()
        # Payments (sandbox.x402, sandbox.mpp): every EIP-3009 nonce settled (replay memory
        # shared by all routes), settlements by transaction (legacy payment_proof), and the
        # secret that binds MPP challenges to this sandbox.
        self.payment_nonces: set[str] = set()
        self.settlements: dict[str, object] = {}
        self.payment_secret = secrets.token_urlsafe(32)
        # The fault switch (sandbox.faults); clearing it puts delisted endpoints back.
        self.faults = Faults(restore=self.add_to_registry)

    # --- addresses and credentials ---------------------------------------------------------

    @property
    def wallet_api_base(self) -> str | None:
        """The wallet proxy is served by the same server as the REST surface."""
        return self.base_url

    def funding_url(self, base_url: str | None = None) -> str:
        base = (base_url or self.base_url or "").rstrip("/")
        return f"{base}/fund/{quote(self.username, safe='')}"

    def credentials(self) -> dict[str, object]:
        """What a client needs to talk to this sandbox (secrets included: write it owner-only)."""
        return {
            "base_url": self.base_url,
            "wallet_api_base": self.wallet_api_base,
            "api_key": self.api_key,
            "username": self.username,
            "api_token": self.api_token,
            "sandbox": True,
        }

    # --- balance ----------------------------------------------------------------------------

    @property
    def balance(self) -> Decimal:
        with self.lock:
            return self._balance

    def set_balance(self, amount: Decimal | str | int) -> None:
        value = parse_usdc(amount)
        with self.lock:
            self._balance = value

    def credit(self, amount: Decimal) -> Decimal:
        """Adds funds (the funding page); returns the new balance."""
        value = parse_usdc(amount)
        with self.lock:
            self._balance += value
            return self._balance

    # --- the allowlisted registry -----------------------------------------------------------

    def in_registry(self, endpoint_id: str) -> bool:
        with self.lock:
            return endpoint_id in self._registry

    def remove_from_registry(self, endpoint_id: str) -> None:
        """The proxy stops dispatching to this endpoint; the catalogue still lists it."""
        with self.lock:
            self._registry.discard(endpoint_id)

    def add_to_registry(self, endpoint_id: str) -> None:
        with self.lock:
            self._registry.add(endpoint_id)

    # --- runtime pricing switch -------------------------------------------------------------

    @property
    def reprice_factor(self) -> Decimal:
        # Times the factor of a `reprice` fault firing on the request being handled, if any.
        with self.lock:
            return self._reprice_factor * fault_reprice_factor()

    @reprice_factor.setter
    def reprice_factor(self, factor: Decimal | str | int | float) -> None:
        # Multiplies every runtime price, so a test can make the challenge ask for more than the
        # catalogue and the dry run said.
        value = Decimal(str(factor))
        if not value.is_finite() or value <= 0:
            raise ValueError("reprice_factor must be a positive number")
        with self.lock:
            self._reprice_factor = value

    # --- charges and idempotency ------------------------------------------------------------

    def charge(
        self,
        *,
        endpoint_id: str,
        protocol: str,
        price_usdc: Decimal,
        chain: str,
        idempotency_key: str,
    ) -> Charge:
        """Debits the balance and records the charge; raises InsufficientFunds, spending nothing,
        when the balance is short."""
        billed = pricing.times(price_usdc, self.faults.bill_factor())
        with self.lock:
            if self._balance < billed:
                raise InsufficientFunds(self._balance, billed)
            self._balance -= billed
            charge = Charge(
                id=f"ch_{len(self._charges) + 1:06d}",
                endpoint_id=endpoint_id,
                protocol=protocol,
                price_usdc=price_usdc,
                chain=chain,
                idempotency_key=idempotency_key,
                at=time.time(),
                billed_usdc=billed,
            )
            self._charges.append(charge)
            return charge

    def replay(self, idempotency_key: str) -> Replay | None:
        with self.lock:
            return self._replays.get(idempotency_key)

    def remember(self, idempotency_key: str, fingerprint: str, body: bytes) -> None:
        with self.lock:
            self._replays[idempotency_key] = Replay(fingerprint, body)

    @property
    def charges(self) -> list[Charge]:
        """A copy of the charges made so far, oldest first."""
        with self.lock:
            return list(self._charges)

    def charges_for(self, idempotency_key: str) -> list[Charge]:
        with self.lock:
            return [c for c in self._charges if c.idempotency_key == idempotency_key]

    def executions_count(self) -> int:
        with self.lock:
            return len(self._charges)

    def total_charged(self) -> Decimal:
        with self.lock:
            return sum((c.billed_usdc for c in self._charges), Decimal(0))
