"""Signing payments, but only what the operator approved.

The marketplace's runtime challenge is authoritative for price and chain, so it can ask for more
than was approved, on another chain, in another token, or to someone else. Before anything is
signed, the challenge is checked against the `Approval`: the amount is at most the approved
ceiling (exactly the fixed price for `svc_breed_agent`, 10 USDC, and `merge_models`, 15 USDC),
the asset is USDC on the approved network, and the recipient is the expected `payTo` when one is
known. Otherwise `ChallengeRejected` is raised with the reason and the challenge's own figures,
so the request can go back to the operator as `repriced`; nothing is signed.

- x402 v2: `PaymentSigner.sign` picks the `accepts` entry that fits the approval and signs it with
  the x402 package's own client (`x402ClientSync` and its `exact` EVM scheme, capped by spend
  controls at the approved amount), giving the base64 `PAYMENT-SIGNATURE` value.
- MPP: `PaymentSigner.mpp_credential` signs a `WWW-Authenticate: Payment` `evm/charge` challenge
  with pympp's client method, giving the `Authorization: Payment ...` value.
- Receipts: `receipt_from_payment_response` decodes a `PAYMENT-RESPONSE` (x402 settlement), and
  `receipt_from_mpp` a `Payment-Receipt`, into the ledger's `Receipt`.

The wallet key lives only inside the eth-account object; no message, repr or error carries it.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from pydantic import ValidationError
from x402 import x402ClientSync
from x402.http.utils import encode_payment_signature_header
from x402.schemas import PaymentRequired, PaymentRequirements, SettleResponse

from svc_console.core.models import Kind, Receipt
from svc_console.core.money import format_usdc, from_atomic, to_atomic
from svc_console.core.networks import (
    USDC_ASSETS,
    USDC_DOMAINS,
    caip2,
    evm_chain_id,
    same_address,
)
from svc_console.market.x402_compat import AccountSigner, exact_evm_scheme

# The compute tools' prices (SPEC.md, Limits): a payment must cover exactly these.
FIXED_PRICES_USDC: dict[Kind, Decimal] = {
    Kind.breed_agent: Decimal(10),
    Kind.merge_models: Decimal(15),
}

# Why a challenge was refused.
ABOVE_CEILING = "above_ceiling"
NOT_FIXED_PRICE = "not_fixed_price"
WRONG_ASSET = "wrong_asset"
WRONG_NETWORK = "wrong_network"
WRONG_RECIPIENT = "wrong_recipient"
UNSUPPORTED = "unsupported"
MALFORMED = "malformed"


class ChallengeRejected(Exception):
    """The challenge does not fit the approval; nothing was signed. The figures are the
    challenge's own (those the operator would be asked to approve again)."""

    def __init__(
        self,
        reason: str,
        message: str,
        *,
        amount_usdc: Decimal | None = None,
        network: str | None = None,
        pay_to: str | None = None,
        asset: str | None = None,
    ):
        super().__init__(message)
        self.reason, self.message = reason, message
        self.amount_usdc, self.network, self.pay_to, self.asset = (
            amount_usdc,
            network,
            pay_to,
            asset,
        )


@dataclass(frozen=True)
class Approval:
    """What the operator approved: at most `ceiling_usdc` (exactly, when `exact`) of USDC on
    `chain` (a marketplace chain name or a CAIP-2 network), to `pay_to` when it is known."""

    ceiling_usdc: Decimal
    chain: str
    exact: bool = False
    pay_to: str | None = None

    @property
    def network(self) -> str:
        return caip2(self.chain)

    @classmethod
    def fixed_price(cls, kind: Kind, chain: str = "base", pay_to: str | None = None) -> Approval:
        """The approval of a compute tool: its fixed price, exactly."""
        return cls(FIXED_PRICES_USDC[kind], chain, exact=True, pay_to=pay_to)


@dataclass(frozen=True)
class SignedPayment:
    """A signed x402 payment: `header` is the `PAYMENT-SIGNATURE` value (also the MCP tools'
    `payment_signature` argument)."""

    header: str
    amount_usdc: Decimal
    network: str
    asset: str
    pay_to: str
    payer: str
    nonce: str


@dataclass(frozen=True)
class MppCredential:
    """A signed MPP credential: `header` is the `Authorization` value (`Payment ...`)."""

    header: str
    amount_usdc: Decimal
    network: str
    pay_to: str
    payer: str


# --- reading challenges ----------------------------------------------------------------------


def _b64_json(value: str) -> Any:
    text = value.strip()
    try:
        raw = base64.b64decode(text + "=" * (-len(text) % 4))
        return json.loads(raw.decode("utf-8"))
    except (binascii.Error, ValueError, UnicodeDecodeError):
        raise ChallengeRejected(MALFORMED, "the challenge is not base64 JSON") from None


def decode_payment_required(
    challenge: str | Mapping[str, Any] | PaymentRequired,
) -> PaymentRequired:
    """A `PAYMENT-REQUIRED` header value, or the object itself (as MCP tools return it)."""
    if isinstance(challenge, PaymentRequired):
        return challenge
    data = _b64_json(challenge) if isinstance(challenge, str) else challenge
    if not isinstance(data, Mapping) or data.get("x402Version") != 2:
        raise ChallengeRejected(UNSUPPORTED, "only x402 v2 challenges are signed")
    try:
        return PaymentRequired.model_validate(data)
    except ValidationError:
        raise ChallengeRejected(MALFORMED, "the challenge is not an x402 PaymentRequired") from None


def _amount(requirement: PaymentRequirements) -> Decimal | None:
    return from_atomic(int(requirement.amount)) if requirement.amount.isdigit() else None


def _refusal(reason: str, message: str, requirement: PaymentRequirements) -> ChallengeRejected:
    return ChallengeRejected(
        reason,
        message,
        amount_usdc=_amount(requirement),
        network=requirement.network,
        pay_to=requirement.pay_to,
        asset=requirement.asset,
    )


def _judge(requirement: PaymentRequirements, approval: Approval) -> ChallengeRejected | None:
    """Why this one payment option does not fit the approval, or None when it does."""
    network = approval.network
    if requirement.scheme != "exact":
        return _refusal(
            UNSUPPORTED, f"the {requirement.scheme[:40]} scheme is not signed", requirement
        )
    if requirement.network != network or evm_chain_id(network) is None:
        return _refusal(
            WRONG_NETWORK,
            f"the challenge settles on {requirement.network[:80]}; {network} was approved",
            requirement,
        )
    usdc = USDC_ASSETS.get(network)
    if usdc is None or not same_address(requirement.asset, usdc):
        return _refusal(
            WRONG_ASSET,
            f"the challenge asks for {requirement.asset[:80]}, which is not USDC on {network}",
            requirement,
        )
    if approval.pay_to is not None and not same_address(requirement.pay_to, approval.pay_to):
        return _refusal(
            WRONG_RECIPIENT,
            f"the challenge pays {requirement.pay_to[:80]}, not {approval.pay_to}",
            requirement,
        )
    amount = _amount(requirement)
    if amount is None or amount <= 0:
        return _refusal(MALFORMED, "the challenge's amount is not a positive integer", requirement)
    if approval.exact and amount != approval.ceiling_usdc:
        return _refusal(
            NOT_FIXED_PRICE,
            f"the challenge asks {format_usdc(amount)} USDC; the price is exactly"
            f" {format_usdc(approval.ceiling_usdc)} USDC",
            requirement,
        )
    if amount > approval.ceiling_usdc:
        return _refusal(
            ABOVE_CEILING,
            f"the challenge asks {format_usdc(amount)} USDC, above the approved"
            f" {format_usdc(approval.ceiling_usdc)} USDC",
            requirement,
        )
    return None


# A refusal about the amount says more than one about the chain, which says more than one about
# the token: when no option fits, the most telling reason is reported.
_PRECEDENCE = (
    ABOVE_CEILING,
    NOT_FIXED_PRICE,
    WRONG_RECIPIENT,
    MALFORMED,
    WRONG_ASSET,
    WRONG_NETWORK,
    UNSUPPORTED,
)


def check_challenge(
    challenge: str | Mapping[str, Any] | PaymentRequired, approval: Approval
) -> PaymentRequirements:
    """The challenge's payment option that fits the approval; raises ChallengeRejected."""
    required = decode_payment_required(challenge)
    refusals = []
    for requirement in required.accepts:
        refusal = _judge(requirement, approval)
        if refusal is None:
            return requirement
        refusals.append(refusal)
    if not refusals:
        raise ChallengeRejected(MALFORMED, "the challenge offers no way to pay")
    refusals.sort(key=lambda r: _PRECEDENCE.index(r.reason))
    raise refusals[0]


# --- signing ---------------------------------------------------------------------------------


class PaymentSigner:
    """Signs payments with the account wallet's EVM key, within an approval."""

    def __init__(self, private_key: str):
        from eth_account import Account

        try:
            self._account = Account.from_key(private_key)
        except Exception:
            raise ValueError("the wallet key is not a valid EVM private key") from None

    def __repr__(self) -> str:
        return f"PaymentSigner({self.address})"

    @property
    def address(self) -> str:
        return self._account.address

    def sign(
        self, challenge: str | Mapping[str, Any] | PaymentRequired, approval: Approval
    ) -> SignedPayment:
        """The `PAYMENT-SIGNATURE` for the option of `challenge` that fits `approval`."""
        required = decode_payment_required(challenge)
        requirement = check_challenge(required, approval)
        client = x402ClientSync()
        client.register(requirement.network, exact_evm_scheme(AccountSigner(self._account)))
        # The package's own spend control, set to what was approved: a second lock on the door.
        client.set_spend_controls(
            {
                "allowed_assets": [
                    {
                        "network": requirement.network,
                        "asset": requirement.asset,
                        "max_amount_per_payment": str(to_atomic(approval.ceiling_usdc)),
                    }
                ]
            }
        )
        only = PaymentRequired(
            x402_version=2,
            resource=required.resource,
            accepts=[requirement],
            extensions=required.extensions,
        )
        payload = client.create_payment_payload(only)
        authorization = payload.payload["authorization"]
        return SignedPayment(
            header=encode_payment_signature_header(payload),
            amount_usdc=from_atomic(int(requirement.amount)),
            network=requirement.network,
            asset=requirement.asset,
            pay_to=requirement.pay_to,
            payer=self.address,
            nonce=authorization["nonce"],
        )

    async def mpp_credential(
        self, www_authenticate: str | Iterable[str], approval: Approval
    ) -> MppCredential:
        """The `Authorization: Payment` credential for the `evm/charge` challenge among
        `www_authenticate` (one header value or several) that fits `approval`."""
        from mpp import Challenge
        from mpp.methods.evm import client as evm_client
        from mpp.runtime import CredentialParams

        values = [www_authenticate] if isinstance(www_authenticate, str) else list(www_authenticate)
        refusals: list[ChallengeRejected] = []
        for value in values:
            try:
                challenge = Challenge.from_www_authenticate(value)
            except Exception:
                refusals.append(
                    ChallengeRejected(MALFORMED, "a WWW-Authenticate value is not an MPP challenge")
                )
                continue
            refusal = _judge_mpp(challenge, approval)
            if refusal is not None:
                refusals.append(refusal)
                continue
            request = challenge.request
            network = approval.network
            domain = USDC_DOMAINS[network]
            method = evm_client.charge(
                currency=request["currency"],
                account=self._account,
                chain_id=evm_chain_id(network),
                decimals=6,
                authorization={"name": domain.name, "version": domain.version},
                max_amount=format_usdc(approval.ceiling_usdc),
            )
            header = await method.create_credential(CredentialParams(challenge=challenge))
            return MppCredential(
                header=header,
                amount_usdc=from_atomic(int(request["amount"])),
                network=network,
                pay_to=request["recipient"],
                payer=self.address,
            )
        if not refusals:
            raise ChallengeRejected(MALFORMED, "no MPP challenge was given")
        refusals.sort(key=lambda r: _PRECEDENCE.index(r.reason))
        raise refusals[0]


def _judge_mpp(challenge: Any, approval: Approval) -> ChallengeRejected | None:
    request = challenge.request if isinstance(challenge.request, Mapping) else {}
    details = (
        request.get("methodDetails") if isinstance(request.get("methodDetails"), Mapping) else {}
    )
    chain_id = details.get("chainId")
    network = f"eip155:{chain_id}" if isinstance(chain_id, int) else None
    amount_text = request.get("amount")
    amount = (
        from_atomic(int(amount_text))
        if isinstance(amount_text, str) and amount_text.isdigit()
        else None
    )
    figures = {
        "amount_usdc": amount,
        "network": network,
        "pay_to": request.get("recipient") if isinstance(request.get("recipient"), str) else None,
        "asset": request.get("currency") if isinstance(request.get("currency"), str) else None,
    }
    if (challenge.method, challenge.intent) != ("evm", "charge"):
        return ChallengeRejected(
            UNSUPPORTED,
            f"the {challenge.method[:40]}/{challenge.intent[:40]} method is not signed",
            **figures,
        )
    # Reuse the x402 judgement: the same rules, the same reasons.
    as_requirement = PaymentRequirements(
        scheme="exact",
        network=network or "unknown:0",
        asset=figures["asset"] or "",
        amount=amount_text if isinstance(amount_text, str) else "",
        pay_to=figures["pay_to"] or "",
        max_timeout_seconds=0,
    )
    refusal = _judge(as_requirement, approval)
    if refusal is not None:
        refusal.amount_usdc, refusal.network = amount, network
    return refusal


# --- receipts --------------------------------------------------------------------------------


def receipt_from_payment_response(header: str, idempotency_key: str) -> Receipt:
    """The ledger's receipt from an x402 `PAYMENT-RESPONSE` (or v1 `X-PAYMENT-RESPONSE`)."""
    data = _b64_json(header)
    try:
        settled = SettleResponse.model_validate(data)
    except ValidationError:
        raise ChallengeRejected(MALFORMED, "PAYMENT-RESPONSE is not an x402 settlement") from None
    if not settled.success or not settled.transaction:
        raise ChallengeRejected(MALFORMED, "PAYMENT-RESPONSE reports no successful settlement")
    return Receipt(
        protocol="x402",
        network=settled.network,
        transaction=settled.transaction,
        idempotency_key=idempotency_key,
    )


def receipt_from_mpp(header: str, idempotency_key: str, network: str) -> Receipt:
    """The ledger's receipt from an MPP `Payment-Receipt` (pympp's format)."""
    from mpp import Receipt as MppReceipt

    try:
        receipt = MppReceipt.from_payment_receipt(header)
    except Exception:
        raise ChallengeRejected(MALFORMED, "Payment-Receipt is not an MPP receipt") from None
    if receipt.status != "success" or not receipt.reference:
        raise ChallengeRejected(MALFORMED, "Payment-Receipt reports no successful payment")
    return Receipt(
        protocol="mpp",
        network=caip2(network),
        transaction=receipt.reference,
        idempotency_key=idempotency_key,
    )
