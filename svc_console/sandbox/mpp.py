"""MPP (the Machine Payments Protocol) in the sandbox, served with the `pympp` package.

A paid call without a credential answers 402 with a `WWW-Authenticate: Payment` challenge
(`id`, `realm`, `method="evm"`, `intent="charge"`, `request` = base64url JSON of the amount in
atomic units, the USDC contract, the recipient and `methodDetails.chainId`, `expires` five minutes
ahead). The client answers on the same route with `Authorization: Payment <credential>`: the
challenge echoed and an EIP-3009 authorization signed for it (its nonce is the challenge's hash,
so one credential pays one challenge). pympp checks the challenge's HMAC binding (the sandbox's
`payment_secret`), route, expiry, amount, recipient, validity window and signature; the sandbox's
settle hook then refuses a nonce already settled anywhere in this sandbox, debits the balance and
records a `Charge`. Success carries a `Payment-Receipt` header (pympp's receipt: status,
timestamp, reference).

MPP providers settle on Tempo. The sandbox uses pympp's `evm/charge` method on Tempo's chain
(4217) with Tempo's USDC: pympp's native Tempo method signs Tempo transactions and needs a Tempo
client library svc-console does not carry, and nothing settles on a chain here anyway. pympp's
x402 side of `evm/charge` is switched off: x402 payments go through `sandbox.x402`.

Refusals: a credential that fails verification gets a fresh 402 challenge and the reason; a
credential already used gets 403 (paying again cannot help); a balance too low raises
`InsufficientFunds` out of `charge()` after pympp released the credential, so the same credential
pays once the wallet is funded (while its challenge lasts).
"""

from __future__ import annotations

import contextvars
import dataclasses
import json
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from mpp import MemoryStore
from mpp.errors import CredentialReplayedError, VerificationFailedError
from mpp.methods.evm import server as evm_server
from mpp.server import Mpp
from mpp.server import Request as MppRequest

from svc_console.core.money import format_usdc, from_atomic
from svc_console.core.networks import NETWORKS, USDC_ASSETS, USDC_DOMAINS, evm_chain_id
from svc_console.sandbox.eip3009 import fake_transaction, nonce_key
from svc_console.sandbox.state import InsufficientFunds
from svc_console.sandbox.x402 import SANDBOX_PAY_TO

if TYPE_CHECKING:
    from svc_console.sandbox.state import Charge, SandboxState

REALM = "svc-console-sandbox"
NETWORK = NETWORKS["tempo"]
CHAIN_ID: int = evm_chain_id(NETWORK)  # type: ignore[assignment]
CURRENCY = USDC_ASSETS[NETWORK]
DECIMALS = 6
METHOD = "evm"


@dataclass(frozen=True)
class MppChallenge:
    """The answer to send when nothing was paid: 402 with `WWW-Authenticate` challenges (or 403
    for a credential already used), pympp's problem details, and why a credential was refused."""

    status: int
    www_authenticate: list[str]
    problem: dict[str, Any]
    reason: str | None = None


@dataclass(frozen=True)
class MppPayment:
    """A settled MPP payment."""

    payer: str
    amount_usdc: Decimal
    network: str
    reference: str
    receipt_header: str
    charge_id: str | None


@dataclass
class _Call:
    charge_for: str
    charge: Charge | None = None
    short: InsufficientFunds | None = None


_current: contextvars.ContextVar[_Call | None] = contextvars.ContextVar(
    "svc_sandbox_mpp_call", default=None
)


class MppGate:
    """Challenges and settles MPP payments against one sandbox's balance."""

    def __init__(self, state: SandboxState, *, realm: str = REALM):
        self.state = state
        domain = USDC_DOMAINS[NETWORK]
        method = evm_server.charge(
            currency=CURRENCY,
            chain_id=CHAIN_ID,
            decimals=DECIMALS,
            authorization={"name": domain.name, "version": domain.version},
            recipient=SANDBOX_PAY_TO,
            settle=self._settle,
            store=MemoryStore(),
        )
        # x402 payments are sandbox.x402's: this method speaks only native MPP.
        method = dataclasses.replace(method, x402=None)
        self.server = Mpp(methods=method, realm=realm, secret_key=state.payment_secret)

    async def charge(
        self,
        *,
        method: str,
        url: str,
        headers: Iterable[tuple[str, str]],
        body: bytes | None,
        amount_usdc: Decimal,
        description: str,
        pay_to: str = SANDBOX_PAY_TO,
        charge_for: str,
    ) -> MppChallenge | MppPayment:
        """Verify the request's `Authorization: Payment` credential for `amount_usdc` to
        `pay_to`, or say what to pay. Raises InsufficientFunds when the balance is short."""
        handler = self.server.charge(
            amount=format_usdc(amount_usdc), recipient=pay_to, description=description
        )
        call = _Call(charge_for=charge_for)
        token = _current.set(call)
        try:
            result = await handler(MppRequest(method, url, headers=list(headers), body=body))
        finally:
            _current.reset(token)
        if call.short is not None:
            raise call.short
        if result.status == 200:
            receipt = result.receipt  # type: ignore[union-attr]
            return MppPayment(
                payer=receipt.payer or "",
                amount_usdc=amount_usdc,
                network=NETWORK,
                reference=receipt.reference,
                receipt_header=receipt.to_payment_receipt(),
                charge_id=call.charge.id if call.charge is not None else None,
            )
        response = result.challenge  # type: ignore[union-attr]
        problem = _json(response.body)
        reason = None
        if "payment-required" not in str(problem.get("type", "")):
            reason = str(problem.get("type", "")).rsplit("/", 1)[-1] or "refused"
        return MppChallenge(
            status=response.status,
            www_authenticate=response.headers.get_list("www-authenticate"),
            problem=problem,
            reason=reason,
        )

    def _settle(self, authorization: Any) -> str:
        """pympp's settle hook: the authorization is verified; debit the sandbox once."""
        call = _current.get()
        payload, request = authorization.payload, authorization.request
        amount = from_atomic(int(request["amount"]))
        key = nonce_key(NETWORK, request["currency"], payload["from"], payload["nonce"])
        state = self.state
        with state.lock:
            if key in state.payment_nonces:
                raise CredentialReplayedError("this authorization was already settled")
            try:
                charge = state.charge(
                    endpoint_id=call.charge_for if call is not None else "mpp",
                    protocol="mpp",
                    price_usdc=amount,
                    chain="tempo",
                    idempotency_key=f"mpp:{payload['nonce'].lower()}",
                )
            except InsufficientFunds as exc:
                if call is not None:
                    call.short = exc
                # A verification failure makes pympp release the credential for a later retry.
                raise VerificationFailedError("the wallet balance is too low") from None
            state.payment_nonces.add(key)
        if call is not None:
            call.charge = charge
        return fake_transaction(key, charge.id)


def _json(body: bytes | None) -> dict[str, Any]:
    try:
        value = json.loads(body or b"{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}
