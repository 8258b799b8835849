"""The x402 package's EVM client (its `exact` scheme, which signs EIP-3009 authorizations) without
the package's `[evm]` extra.

`x402.mechanisms.evm/__init__.py` imports web3 for its facilitator signers, which svc-console does
not depend on (it never broadcasts a transaction). The client scheme itself needs only eth-abi and
eth-account. When web3 is missing, the EVM package is registered without running its `__init__`,
and its client modules import as they are; when web3 is installed, the normal import is used.

`AccountSigner` is the package's `ClientEvmSigner` protocol over an eth-account `LocalAccount`: the
extension point the package documents for plugging in a wallet.
"""

from __future__ import annotations

import importlib
import os
import sys
import types
from functools import lru_cache
from typing import Any

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
def _load() -> None:
    try:
        importlib.import_module(f"{_EVM}.exact")
    except ImportError:
        # Only the package initialisers pull in web3; the modules below do not.
        # A failed import leaves no entry for the package itself, only for its finished modules.
        for name in (_EVM, f"{_EVM}.exact"):
            if name not in sys.modules:
                _register_bare_package(name)


def exact_evm_scheme(signer: Any) -> Any:
    """The x402 package's `ExactEvmScheme` client for `signer` (an `AccountSigner`)."""
    _load()
    from x402.mechanisms.evm.exact.client import ExactEvmScheme

    return ExactEvmScheme(signer)


class AccountSigner:
    """x402's `ClientEvmSigner` over an eth-account `LocalAccount`. The key stays inside the account
    object; nothing here prints or stores it."""

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
                field if isinstance(field, dict) else {"name": field.name, "type": field.type}
                for field in fields
            ]
            for name, fields in types.items()
            if name != "EIP712Domain"
        }
        signed = self._account.sign_typed_data(
            domain_data=domain_data, message_types=message_types, message_data=message
        )
        return bytes(signed.signature)
