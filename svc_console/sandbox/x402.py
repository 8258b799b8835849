"""x402 v2 in the sandbox: payment challenges, and their signed answers verified offline.

A paid resource without payment answers 402 with a `PAYMENT-REQUIRED` header: the base64 JSON of
an x402 v2 `PaymentRequired` (`x402Version: 2`, `resource`, `accepts` with scheme `exact`, a
CAIP-2 network, the amount in USDC atomic units, the USDC contract, `payTo`,
`maxTimeoutSeconds`, and `extra` with the token's EIP-712 domain name and version). The client
answers with `PAYMENT-SIGNATURE`: a base64 x402 `PaymentPayload` whose `payload` is an EIP-3009
`TransferWithAuthorization` and its EIP-712 signature, as the x402 package's own client makes it.

`X402Gate.settle` checks that payload the way USDC's `transferWithAuthorization` and a careful
facilitator would, without a chain: the scheme and network are offered, the asset is that
network's USDC, the recipient is `payTo`, the value is exactly the amount asked, the validity
window holds (`validAfter < now < validBefore`), the signature recovers (eth-account) to `from`,
and the nonce was never settled for that payer and token. Only then is the sandbox balance
debited and a `Charge` recorded; any refusal leaves the balance and the nonce untouched, so a
payment refused for want of funds can be sent again once the wallet is funded.

Legacy inputs (SPEC.md, Versioning):

- `x_payment`: a v1 `X-PAYMENT` value (base64 JSON `{x402Version: 1, scheme, network, payload}`
  with a v1 network name such as `base`), verified exactly as a v2 payment against the same
  requirements.
- `payment_proof`: a settlement this sandbox already made, as the `PAYMENT-RESPONSE` (or v1
  `X-PAYMENT-RESPONSE`) value it returned, or the bare transaction hash. It is accepted for the
  same resource URL and the same amount, charges nothing again, and returns the original
  settlement with `proof=True`: it re-delivers what that payment bought (a route whose result is
  not idempotent, such as a compute job, should answer with what the original payment started,
  keyed by `transaction`).

Only EVM networks (`eip155:*`) settle here; a challenge may list others, but their payments are
refused as `wrong_network`. Nothing ever touches a chain: transaction hashes are made up.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError
from x402.http.utils import encode_payment_required_header, encode_payment_response_header
from x402.schemas import (
    PaymentPayload,
    PaymentPayloadV1,
    PaymentRequired,
    PaymentRequirements,
    ResourceInfo,
    SettleResponse,
)

from svc_console.core.money import format_usdc, from_atomic, parse_usdc, to_atomic
from svc_console.core.networks import (
    NETWORKS,
    USDC_ASSETS,
    USDC_DOMAINS,
    caip2,
    chain_name,
    evm_chain_id,
    same_address,
)
from svc_console.sandbox import pricing
from svc_console.sandbox.eip3009 import (
    Authorization,
    MalformedAuthorization,
    fake_transaction,
    nonce_key,
    parse_authorization,
    recover_payer,
)
from svc_console.sandbox.faults import repriced_chain
from svc_console.sandbox.state import InsufficientFunds

if TYPE_CHECKING:
    from svc_console.sandbox.state import SandboxState

__all__ = [
    "SANDBOX_PAY_TO",
    "PaymentInvalid",
    "Settlement",
    "X402Gate",
    "decode_header_json",
]

# Where the sandbox's own paid resources (datasets, compute jobs) are paid to: an address no key
# is known for, so no real transfer could ever reach anyone.
SANDBOX_PAY_TO = "0x5A9dB0C5a9dB0c5a9db0C5a9dB0C5A9db0C5A9D0"
DEFAULT_TIMEOUT_S = 300
SCHEME = "exact"
PAYMENT_REQUIRED_MESSAGE = "PAYMENT-SIGNATURE header is required"

_TX = re.compile(r"^0x[0-9a-fA-F]{64}$")
_MAX_HEADER = 16 * 1024


class PaymentInvalid(Exception):
    """A payment the sandbox refuses. `reason` is one word: malformed, wrong_scheme,
    wrong_network, wrong_asset, wrong_recipient, wrong_amount, expired, not_yet_valid,
    invalid_signature, nonce_reused, insufficient_funds, unknown_proof, wrong_resource."""

    def __init__(
        self,
        reason: str,
        message: str,
        *,
        balance_usdc: Decimal | None = None,
        required_usdc: Decimal | None = None,
    ):
        super().__init__(message)
        self.reason, self.message = reason, message
        # Set for insufficient_funds, so a caller can answer WALLET_UNFUNDED with the figures.
        self.balance_usdc, self.required_usdc = balance_usdc, required_usdc


@dataclass(frozen=True)
class Settlement:
    """A verified payment the sandbox debited (or, with `proof`, one re-presented)."""

    payer: str
    amount_usdc: Decimal
    network: str
    transaction: str
    nonce: str
    resource: str = ""
    x402_version: int = 2
    charge_id: str | None = None
    proof: bool = False

    def settle_response(self) -> SettleResponse:
        return SettleResponse(
            success=True,
            transaction=self.transaction,
            network=self.network,
            payer=self.payer,
            amount=str(to_atomic(self.amount_usdc)),
            extra={"sandbox": True},
        )

    def response_header(self) -> str:
        """Base64 JSON for the `PAYMENT-RESPONSE` (v1: `X-PAYMENT-RESPONSE`) header."""
        return encode_payment_response_header(self.settle_response())

    def as_json(self) -> dict[str, Any]:
        return {
            **self.settle_response().model_dump(mode="json", by_alias=True, exclude_none=True),
            "amountUsdc": format_usdc(self.amount_usdc),
            "nonce": self.nonce,
            "proof": self.proof,
            "sandbox": True,
        }


def decode_header_json(value: str) -> Any:
    """The JSON inside a base64 header value; raises PaymentInvalid("malformed")."""
    if not isinstance(value, str) or not value.strip() or len(value) > _MAX_HEADER:
        raise PaymentInvalid("malformed", "the payment is empty or too large")
    text = value.strip()
    try:
        raw = base64.b64decode(text + "=" * (-len(text) % 4), validate=True)
    except (binascii.Error, ValueError):
        try:
            raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
        except (binascii.Error, ValueError):
            raise PaymentInvalid("malformed", "the payment is not base64") from None
    try:
        return json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise PaymentInvalid("malformed", "the payment is not base64 JSON") from None


class X402Gate:
    """Issues x402 v2 challenges and settles their payments against one sandbox's balance.

    Every gate of one `SandboxState` shares its memory (settled nonces, settlements), so a payment
    made at one route can never be replayed at another. `clock` gives Unix seconds (tests move it).
    """

    def __init__(self, state: SandboxState, *, clock: Callable[[], float] = time.time):
        self.state = state
        self.clock = clock

    # --- challenges -------------------------------------------------------------------------

    def requirement(
        self,
        amount_usdc: Decimal,
        network: str = "eip155:8453",
        *,
        pay_to: str = SANDBOX_PAY_TO,
        max_timeout_seconds: int = DEFAULT_TIMEOUT_S,
    ) -> dict[str, Any]:
        """One `accepts` entry: exact `amount_usdc` of USDC on `network`, paid to `pay_to`."""
        network = caip2(network)
        asset = USDC_ASSETS.get(network)
        if asset is None:
            raise ValueError(f"no USDC asset is known on {network}")
        extra: dict[str, Any] = {}
        domain = USDC_DOMAINS.get(network)
        if domain is not None:
            extra = {"name": domain.name, "version": domain.version}
        requirement = PaymentRequirements(
            scheme=SCHEME,
            network=network,
            asset=asset,
            amount=str(to_atomic(parse_usdc(amount_usdc))),
            pay_to=pay_to,
            max_timeout_seconds=max_timeout_seconds,
            extra=extra,
        )
        return requirement.model_dump(mode="json", by_alias=True, exclude_none=True)

    def required(
        self,
        resource_url: str,
        amount_usdc: Decimal,
        description: str,
        network: str = "eip155:8453",
        *,
        networks: Sequence[str] | None = None,
        pay_to: str = SANDBOX_PAY_TO,
        mime_type: str = "application/json",
        error: str | None = PAYMENT_REQUIRED_MESSAGE,
        max_timeout_seconds: int = DEFAULT_TIMEOUT_S,
    ) -> dict[str, Any]:
        """The `PaymentRequired` object, JSON-ready. `networks` offers several (in that order)
        instead of the one `network`. A firing `reprice` fault with a chain moves the challenge
        to that chain."""
        moved = repriced_chain()
        if moved is not None:
            network, networks = NETWORKS[moved], None
        accepts = [
            self.requirement(
                amount_usdc, each, pay_to=pay_to, max_timeout_seconds=max_timeout_seconds
            )
            for each in (networks or [network])
        ]
        required = PaymentRequired(
            x402_version=2,
            error=error,
            resource=ResourceInfo(url=resource_url, description=description, mime_type=mime_type),
            accepts=[PaymentRequirements.model_validate(entry) for entry in accepts],
        )
        return required.model_dump(mode="json", by_alias=True, exclude_none=True)

    def runtime_amount(self, listed_usdc: Decimal) -> Decimal:
        """What a challenge asks for a listed price: the listing times the state's reprice factor
        (and a firing `reprice` fault's), so a charged tool can ask more than it was quoted."""
        return pricing.times(listed_usdc, self.state.reprice_factor)

    @staticmethod
    def encode(required: dict[str, Any]) -> str:
        """Base64 for the `PAYMENT-REQUIRED` header."""
        return encode_payment_required_header(PaymentRequired.model_validate(required))

    # --- settlement -------------------------------------------------------------------------

    def settle(
        self,
        required: dict[str, Any],
        *,
        payment_signature: str | None = None,
        payment_proof: str | None = None,
        x_payment: str | None = None,
        charge_for: str | None = None,
    ) -> Settlement:
        """Verify a payment for `required` and debit it. The v2 `payment_signature` is used when
        several are given, then `x_payment`, then `payment_proof`. `charge_for` names what the
        recorded charge was for (default: the resource URL). Raises PaymentInvalid."""
        offer = _parse_required(required)
        if payment_signature:
            return self._settle_v2(offer, payment_signature, charge_for)
        if x_payment:
            return self._settle_v1(offer, x_payment, charge_for)
        if payment_proof:
            return self._redeem(offer, payment_proof)
        raise PaymentInvalid("malformed", "no payment was given")

    def _settle_v2(self, offer: PaymentRequired, header: str, charge_for: str | None) -> Settlement:
        data = decode_header_json(header)
        if not isinstance(data, dict) or data.get("x402Version") != 2:
            raise PaymentInvalid(
                "malformed",
                "payment_signature must be an x402 v2 payload (x402Version 2); v1 X-PAYMENT"
                " values go in x_payment",
            )
        try:
            payment = PaymentPayload.model_validate(data)
        except ValidationError:
            raise PaymentInvalid("malformed", "the payment is not an x402 PaymentPayload") from None
        accepted = payment.accepted
        requirement = _offered(offer, accepted.scheme, accepted.network)
        if not same_address(accepted.asset, requirement.asset):
            raise PaymentInvalid(
                "wrong_asset",
                f"the payment is in {accepted.asset[:64]}, not USDC ({requirement.asset})",
            )
        if not same_address(accepted.pay_to, requirement.pay_to):
            raise PaymentInvalid("wrong_recipient", f"the payment must go to {requirement.pay_to}")
        if accepted.amount != requirement.amount:
            raise PaymentInvalid(
                "wrong_amount",
                f"the payment accepts {accepted.amount[:80]} atomic units; the challenge asks"
                f" exactly {requirement.amount}",
            )
        return self._settle(offer, requirement, payment.payload, 2, charge_for)

    def _settle_v1(self, offer: PaymentRequired, header: str, charge_for: str | None) -> Settlement:
        data = decode_header_json(header)
        if not isinstance(data, dict) or data.get("x402Version") != 1:
            raise PaymentInvalid("malformed", "x_payment must be an x402 v1 X-PAYMENT value")
        try:
            payment = PaymentPayloadV1.model_validate(data)
        except ValidationError:
            raise PaymentInvalid("malformed", "x_payment is not an x402 v1 payment") from None
        requirement = _offered(offer, payment.scheme, caip2(payment.network))
        return self._settle(offer, requirement, payment.payload, 1, charge_for)

    def _settle(
        self,
        offer: PaymentRequired,
        requirement: PaymentRequirements,
        payload: Mapping[str, Any],
        version: int,
        charge_for: str | None,
    ) -> Settlement:
        authorization = self._verified(requirement, payload)
        return self._debit(offer, requirement, authorization, version, charge_for)

    def _verified(
        self, requirement: PaymentRequirements, payload: Mapping[str, Any]
    ) -> Authorization:
        """The payload's authorization, once it pays this requirement, now, signed by its payer;
        raises PaymentInvalid naming what is wrong. Touches no balance and no nonce."""
        try:
            authorization = parse_authorization(payload)
        except MalformedAuthorization as exc:
            raise PaymentInvalid("malformed", str(exc)) from None
        if not same_address(authorization.to, requirement.pay_to):
            raise PaymentInvalid(
                "wrong_recipient",
                f"the authorization pays {authorization.to}, not {requirement.pay_to}",
            )
        if str(authorization.value) != requirement.amount:
            raise PaymentInvalid(
                "wrong_amount",
                f"the authorization is for {authorization.value} atomic units; the challenge"
                f" asks exactly {requirement.amount}",
            )
        now = int(self.clock())
        if now <= authorization.valid_after:
            raise PaymentInvalid(
                "not_yet_valid",
                f"the authorization is valid only after {authorization.valid_after}",
            )
        if now >= authorization.valid_before:
            raise PaymentInvalid(
                "expired", f"the authorization expired at {authorization.valid_before}"
            )
        domain = requirement.extra or {}
        name, version_text = domain.get("name"), domain.get("version")
        if not isinstance(name, str) or not isinstance(version_text, str):
            raise PaymentInvalid("malformed", "the challenge carries no EIP-712 domain")
        try:
            signer = recover_payer(
                payload["authorization"],
                authorization.signature,
                network=requirement.network,
                asset=requirement.asset,
                name=name,
                version=version_text,
            )
        except Exception:
            signer = None
        if not same_address(signer, authorization.payer):
            raise PaymentInvalid(
                "invalid_signature", "the signature does not recover to authorization.from"
            )
        return authorization

    def _debit(
        self,
        offer: PaymentRequired,
        requirement: PaymentRequirements,
        authorization: Authorization,
        version: int,
        charge_for: str | None,
    ) -> Settlement:
        """Charges a verified authorization once: its nonce is spent only with the debit, under
        the state's lock, so a payment refused for want of funds can be sent again."""
        amount = from_atomic(authorization.value)
        key = nonce_key(
            requirement.network, requirement.asset, authorization.payer, authorization.nonce
        )
        resource = offer.resource.url if offer.resource is not None else ""
        state = self.state
        with state.lock:
            if key in state.payment_nonces:
                raise PaymentInvalid(
                    "nonce_reused", "this authorization's nonce was already settled"
                )
            try:
                charge = state.charge(
                    endpoint_id=charge_for or resource,
                    protocol="x402",
                    price_usdc=amount,
                    chain=chain_name(requirement.network),
                    idempotency_key=f"x402:{authorization.nonce}",
                )
            except InsufficientFunds as exc:
                raise PaymentInvalid(
                    "insufficient_funds",
                    f"the wallet holds {format_usdc(exc.balance)} USDC; this payment is"
                    f" {format_usdc(amount)} USDC",
                    balance_usdc=exc.balance,
                    required_usdc=amount,
                ) from None
            state.payment_nonces.add(key)
            settlement = Settlement(
                payer=authorization.payer,
                amount_usdc=amount,
                network=requirement.network,
                transaction=fake_transaction(key, charge.id),
                nonce=authorization.nonce,
                resource=resource,
                x402_version=version,
                charge_id=charge.id,
            )
            state.settlements[settlement.transaction] = settlement
        return settlement

    def _redeem(self, offer: PaymentRequired, proof: str) -> Settlement:
        transaction = proof.strip()
        if not _TX.match(transaction):
            data = decode_header_json(proof)
            transaction = data.get("transaction") if isinstance(data, dict) else None
            if not isinstance(transaction, str):
                raise PaymentInvalid("malformed", "payment_proof names no transaction")
        with self.state.lock:
            settlement = self.state.settlements.get(transaction.lower())
        if not isinstance(settlement, Settlement):
            raise PaymentInvalid(
                "unknown_proof", "payment_proof names no settlement of this sandbox"
            )
        resource = offer.resource.url if offer.resource is not None else ""
        if settlement.resource != resource:
            raise PaymentInvalid("wrong_resource", "payment_proof paid for another resource")
        amount = str(to_atomic(settlement.amount_usdc))
        matching = [a for a in offer.accepts if a.network == settlement.network]
        if not matching:
            raise PaymentInvalid("wrong_network", f"payment_proof settled on {settlement.network}")
        if all(a.amount != amount for a in matching):
            raise PaymentInvalid(
                "wrong_amount",
                f"payment_proof paid {amount} atomic units; the challenge asks"
                f" {matching[0].amount}",
            )
        return replace(settlement, proof=True)


def _parse_required(required: Mapping[str, Any]) -> PaymentRequired:
    try:
        offer = PaymentRequired.model_validate(required)
    except ValidationError as exc:
        raise ValueError(f"not a PaymentRequired object: {exc}") from None
    if offer.x402_version != 2 or not offer.accepts:
        raise ValueError("a PaymentRequired needs x402Version 2 and at least one accepts entry")
    return offer


def _offered(offer: PaymentRequired, scheme: str, network: str) -> PaymentRequirements:
    if scheme != SCHEME:
        raise PaymentInvalid("wrong_scheme", f"only the {SCHEME} scheme is accepted")
    for requirement in offer.accepts:
        if requirement.scheme == SCHEME and requirement.network == network:
            if evm_chain_id(network) is None:
                break
            return requirement
    offered = ", ".join(a.network for a in offer.accepts if evm_chain_id(a.network) is not None)
    raise PaymentInvalid(
        "wrong_network",
        f"the payment is on {network[:80]}; this challenge settles on"
        f" {offered or 'no EVM network'}",
    )
