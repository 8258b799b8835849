"""The one signer: the only code that signs a payment (an x402 v2 `PAYMENT-SIGNATURE`, an MPP
`Authorization: Payment` credential) or tells the wallet proxy to pay (`approved: true`), and only
within a mandate (core/mandate.py).

Each way in takes a mandate and what the market asks now: an x402 challenge, MPP challenges, or
(for the proxy, which signs itself) the endpoint's record read again just before paying. Before
anything is signed, what is asked is compared with the mandate (core/mandate_check.py): recipient,
asset, network, scheme and EIP-712 domain, amount, validity, and for the proxy the provider, chain
and price. Any difference raises `OutsideMandate` with it in words, and nothing is signed.

The wallet key reaches this module alone: read here at start (config/wallet_key.py, which only
this module may import), it lives in the account object and nowhere else; the broker's secret
check gets its digest, never the key. The signing libraries (eth_account, x402, pympp) are
imported here and nowhere else in the console (the import-linter contracts in pyproject.toml).
"""

from __future__ import annotations

import importlib
import os
import sys
import types
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from functools import lru_cache
from typing import Any

from svc_console.config.paths import Paths
from svc_console.core.mandate import PROXY_SCHEMES, Mandate, inputs_digest
from svc_console.core.mandate_check import Offer, closest, differences
from svc_console.core.models import EndpointRecord
from svc_console.core.money import format_usdc, from_atomic, to_atomic
from svc_console.core.networks import USDC_DOMAINS, evm_chain_id
from svc_console.core.secrets_scan import SecretForms, own_secret_forms
from svc_console.market import challenges
from svc_console.market.errors import OutsideMandate

# secp256k1's group order: a private key is a number above zero and below it.
SECP256K1_ORDER = 0xFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364141
MPP_VALIDITY_S = 300  # pympp's own, for a challenge that sets no expiry


@dataclass(frozen=True)
class SignedPayment:
    """A signed x402 payment: `header` is the `PAYMENT-SIGNATURE` value (the MCP tools'
    `payment_signature` argument)."""

    header: str
    amount_usdc: Decimal
    network: str
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


@dataclass(frozen=True)
class ApprovedBody:
    """A wallet proxy request that pays (`approved: true`), within a mandate's ceiling and
    chain: made by `Signer.proxy_body` only."""

    protocol: str
    body: dict[str, Any] = field(repr=False)
    idempotency_key: str


class _Account:
    """The eth-account object of a key, made when first needed: importing eth-account takes about
    a second (its keyfile and BLS modules), which the console's start does not wait for. Until
    then the key is held here alone; after, in the object alone. A malformed key is refused at
    once, by the rule eth-account applies (32 bytes, above zero and below the curve's order)."""

    def __init__(self, key: str):
        digits = key.removeprefix("0x").removeprefix("0X")
        try:
            value = int(digits, 16) if len(digits) == 64 else 0
        except ValueError:
            value = 0
        if not 0 < value < SECP256K1_ORDER:
            raise ValueError("the wallet key is not a valid EVM private key")
        self._key: str | None = key
        self._made: Any = None

    def made(self) -> Any:
        if self._made is None:
            from eth_account import Account

            self._made = Account.from_key(self._key)
            self._key = None
        return self._made


class Signer:
    """Signs payments with the account wallet's key, within mandates, on the console's clock
    (the one mandates are dated by)."""

    def __init__(
        self, account: _Account | None, clock: Callable[[], float], key: str | None = None
    ):
        self._account = account
        self._clock = clock
        # What the secret refusal searches submissions for: the key in every common spelling,
        # as pieces no one of which holds it whole.
        self.key_forms: SecretForms | None = own_secret_forms([key], marks=()) if key else None

    def __repr__(self) -> str:
        return f"Signer({self.address or 'no key'})"

    @classmethod
    def with_key(cls, key: str, clock: Callable[[], float]) -> Signer:
        return cls(_Account(key), clock, key)

    @classmethod
    def throwaway(cls, clock: Callable[[], float]) -> Signer:
        """A key of its own, made now and never saved: what the sandbox is paid with."""
        return cls.with_key("0x" + os.urandom(32).hex(), clock)

    @classmethod
    def account_wallet(cls, paths: Paths, clock: Callable[[], float]) -> Signer:
        """With the key the first login saved; without one, a signer that can still tell the
        proxy to pay (the proxy signs) but signs nothing itself."""
        from svc_console.config.wallet_key import account_wallet_key

        key = account_wallet_key(paths)
        return cls.with_key(key, clock) if key else cls(None, clock)

    @property
    def address(self) -> str | None:
        return self._account.made().address if self._account is not None else None

    @property
    def can_sign(self) -> bool:
        return self._account is not None

    def _check(self, mandate: Mandate, offers: list[Offer], scheme: str) -> Offer:
        """The offer that fits the mandate, else OutsideMandate with the closest one's
        differences: final where no approval could cover it. A mandate not for this kind of
        signature (the proxy's, one with no recipient) signs nothing."""
        if not self.can_sign:
            raise OutsideMandate(["no account wallet key to pay with: run svc-console login"])
        now = self._clock()
        pinned = Offer(
            amount_usdc=mandate.max_usdc,
            recipient=mandate.recipient,
            asset=mandate.asset,
            network=mandate.network,
            scheme=mandate.scheme,
        )
        if mandate.signed_by != "console" or not challenges.signable(pinned, scheme, now):
            raise OutsideMandate([f"the mandate of {mandate.request_id} allows no {scheme}"])
        offer, words = closest(mandate, offers, now)
        if words:
            final = not challenges.signable(offer, scheme, now) or (
                mandate.exact and offer.amount_usdc != mandate.max_usdc
            )
            raise OutsideMandate(words, offer, final=final)
        return offer

    # -- x402 ---------------------------------------------------------------------------------

    def x402(self, mandate: Mandate, challenge: str | Mapping[str, Any]) -> SignedPayment:
        """The `PAYMENT-SIGNATURE` for the option of `challenge` that `mandate` covers."""
        required = challenges.decode(challenge)
        now = self._clock()
        options = challenges.options(required)
        offers = [challenges.offer_of(option, now) for option in options]
        option = options[offers.index(self._check(mandate, offers, "exact"))]
        return self._sign_x402(mandate, required, option)

    def _sign_x402(
        self, mandate: Mandate, required: dict[str, Any], option: dict[str, Any]
    ) -> SignedPayment:
        from x402 import x402ClientSync
        from x402.http.utils import encode_payment_signature_header
        from x402.schemas import PaymentRequired, PaymentRequirements

        domain = USDC_DOMAINS[mandate.network]
        # What is signed is the mandate's own terms (the option agreed with them): nothing of
        # the challenge's beyond what was compared reaches the signature.
        pinned = {
            **option,
            "scheme": "exact",
            "network": mandate.network,
            "asset": mandate.asset,
            "payTo": mandate.recipient,
            "extra": {"name": domain.name, "version": domain.version},
        }
        requirement = PaymentRequirements.model_validate(pinned)
        client = x402ClientSync()
        client.register(mandate.network, exact_evm_scheme(AccountSigner(self._account.made())))
        # The package's own spend control, at the mandate's most: a second lock on the door.
        client.set_spend_controls(
            {
                "allowed_assets": [
                    {
                        "network": mandate.network,
                        "asset": mandate.asset,
                        "max_amount_per_payment": str(to_atomic(mandate.max_usdc)),
                    }
                ]
            }
        )
        only = PaymentRequired(
            x402_version=2, resource=required.get("resource"), accepts=[requirement]
        )
        payload = client.create_payment_payload(only)
        return SignedPayment(
            header=encode_payment_signature_header(payload),
            amount_usdc=from_atomic(int(requirement.amount)),
            network=mandate.network,
            pay_to=requirement.pay_to,
            payer=self._account.made().address,
            nonce=payload.payload["authorization"]["nonce"],
        )

    # -- MPP ----------------------------------------------------------------------------------

    async def mpp(self, mandate: Mandate, www_authenticate: str | Iterable[str]) -> MppCredential:
        """The `Authorization: Payment` credential for the `evm/charge` challenge among
        `www_authenticate` (one header value or several) that `mandate` covers."""
        from mpp import Challenge
        from mpp.methods.evm import client as evm_client
        from mpp.runtime import CredentialParams

        values = [www_authenticate] if isinstance(www_authenticate, str) else list(www_authenticate)
        parsed = []
        for value in values:
            try:
                parsed.append(Challenge.from_www_authenticate(value))
            except Exception:
                continue
        if not parsed:
            raise challenges.unreadable("no MPP challenge")
        offers = [_mpp_offer(challenge, self._clock()) for challenge in parsed]
        offer = self._check(mandate, offers, "evm/charge")
        challenge = parsed[offers.index(offer)]
        domain = USDC_DOMAINS[mandate.network]
        method = evm_client.charge(
            currency=mandate.asset,
            account=self._account.made(),
            chain_id=evm_chain_id(mandate.network),
            decimals=6,
            authorization={"name": domain.name, "version": domain.version},
            max_amount=format_usdc(mandate.max_usdc),
        )
        header = await method.create_credential(CredentialParams(challenge=challenge))
        return MppCredential(
            header=header,
            amount_usdc=offer.amount_usdc or Decimal(0),
            network=mandate.network,
            pay_to=str(offer.recipient),
            payer=self._account.made().address,
        )

    # -- the wallet proxy ---------------------------------------------------------------------

    def proxy_body(
        self,
        mandate: Mandate,
        record: EndpointRecord,
        inputs: dict[str, Any],
        idempotency_key: str,
    ) -> ApprovedBody:
        """The body that tells the wallet proxy to pay, with the mandate's ceiling and chain,
        for the endpoint as its `record` reads now: refused (OutsideMandate) when the provider,
        the chain, the protocol or the price moved since the quote, or the mandate has expired."""
        protocol = next((p for p, s in PROXY_SCHEMES.items() if s == mandate.scheme), None)
        if mandate.signed_by != "wallet_proxy" or protocol is None:
            raise OutsideMandate([f"the mandate of {mandate.request_id} is not the proxy's"])
        if inputs_digest(inputs) != mandate.inputs_sha256 or record.id != mandate.endpoint_id:
            raise OutsideMandate(["the call is not the one approved: other inputs or endpoint"])
        offered = protocol if protocol in record.protocols else record.protocols[0]
        pricing = record.pricing
        offer = Offer(
            scheme=PROXY_SCHEMES[offered],
            provider=record.provider,
            provider_name=record.provider_name,
            chains=tuple(record.chains),
            least_usdc=pricing.amount_usdc if pricing.model == "fixed" else pricing.min_usdc,
            most_usdc=pricing.ceiling,
        )
        words = differences(mandate, offer, self._clock())
        if words:
            raise OutsideMandate(words, offer, endpoint=record)
        body = {
            "endpointId": mandate.endpoint_id,
            "inputs": inputs,
            "dryRun": False,
            "approved": True,
            "maxUsdc": format_usdc(mandate.max_usdc),
            "chain": mandate.chain,
            "idempotencyKey": idempotency_key,
        }
        return ApprovedBody(protocol, body, idempotency_key)


def _mpp_offer(challenge: Any, now: float) -> Offer:
    request = challenge.request if isinstance(challenge.request, Mapping) else {}
    details = request.get("methodDetails")
    chain_id = details.get("chainId") if isinstance(details, Mapping) else None
    amount = request.get("amount")
    expires = None
    if challenge.expires:
        from datetime import datetime

        try:
            expires = datetime.fromisoformat(challenge.expires.replace("Z", "+00:00")).timestamp()
        except ValueError:
            expires = float("inf")
    return Offer(
        amount_usdc=challenges.amount_of(amount),
        recipient=str(request.get("recipient") or ""),
        asset=str(request.get("currency") or ""),
        network=f"eip155:{chain_id}" if isinstance(chain_id, int) else "",
        scheme=f"{challenge.method}/{challenge.intent}",
        valid_until=expires if expires is not None else now + MPP_VALIDITY_S,
    )


# -- the x402 package's EVM client, without its web3 extra ---------------------------------------
# `x402.mechanisms.evm/__init__.py` imports web3 for its facilitator signers, which the console does
# not depend on (it never broadcasts a transaction); the client scheme needs only eth-abi and
# eth-account. When web3 is missing the EVM package is registered without running its `__init__`.

_EVM = "x402.mechanisms.evm"


def _register_bare_package(name: str) -> None:
    parent_name, _, leaf = name.rpartition(".")
    parent = importlib.import_module(parent_name)
    module = types.ModuleType(name)
    module.__path__ = [os.path.join(path, leaf) for path in parent.__path__]
    module.__package__ = name
    sys.modules[name] = module
    setattr(parent, leaf, module)


@lru_cache(maxsize=1)
def _load_evm() -> None:
    try:
        importlib.import_module(f"{_EVM}.exact")
    except ImportError:
        # Only the package initialisers pull in web3; a failed import leaves no entry for the
        # package itself, only for its finished modules.
        for name in (_EVM, f"{_EVM}.exact"):
            if name not in sys.modules:
                _register_bare_package(name)


def exact_evm_scheme(signer: Any) -> Any:
    """The x402 package's `ExactEvmScheme` client over `signer` (an `AccountSigner`)."""
    _load_evm()
    from x402.mechanisms.evm.exact.client import ExactEvmScheme

    return ExactEvmScheme(signer)


class AccountSigner:
    """x402's `ClientEvmSigner` (the extension point the package documents for a wallet) over
    an eth-account object that holds a key; nothing here prints or stores it."""

    def __init__(self, account: Any):
        self._account = account

    def __repr__(self) -> str:
        return f"AccountSigner({self.address})"

    @property
    def address(self) -> str:
        return self._account.address

    def sign_typed_data(
        self, domain: Any, types: dict[str, list[Any]], primary_type: str, message: dict[str, Any]
    ) -> bytes:
        domain_data = {
            "name": domain.name,
            "version": domain.version,
            "chainId": domain.chain_id,
            "verifyingContract": domain.verifying_contract,
        }
        message_types = {
            name: [
                item if isinstance(item, dict) else {"name": item.name, "type": item.type}
                for item in fields
            ]
            for name, fields in types.items()
            if name != "EIP712Domain"
        }
        signed = self._account.sign_typed_data(
            domain_data=domain_data, message_types=message_types, message_data=message
        )
        return bytes(signed.signature)
