"""The keys of an account wallet of the sandbox: a real EVM key (eth-account) and a real Solana key
(ed25519, base58) per account, made at its first login and shown exactly once. Only the money is
made up; the keys are real so a client can sign with them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

# The chains a wallet is provisioned on and the key that serves each.
WALLET_CHAINS: dict[str, Literal["evm", "solana"]] = {
    "base": "evm",
    "solana": "solana",
    "ethereum": "evm",
    "tempo": "evm",
}


@dataclass(frozen=True)
class WalletKeys:
    """An account wallet: the addresses always, the private keys until they were shown once."""

    evm_address: str
    solana_address: str
    evm_private_key: str | None = field(default=None, repr=False)
    solana_private_key: str | None = field(default=None, repr=False)

    @classmethod
    def create(cls) -> WalletKeys:
        import base58
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
        from eth_account import Account

        evm = Account.create()
        ed = Ed25519PrivateKey.generate()
        seed = ed.private_bytes(
            serialization.Encoding.Raw,
            serialization.PrivateFormat.Raw,
            serialization.NoEncryption(),
        )
        public = ed.public_key().public_bytes(
            serialization.Encoding.Raw, serialization.PublicFormat.Raw
        )
        return cls(
            evm_address=evm.address,
            solana_address=base58.b58encode(public).decode("ascii"),
            evm_private_key="0x" + bytes(evm.key).hex(),
            # Solana's usual export: the 32-byte seed then the 32-byte public key, base58.
            solana_private_key=base58.b58encode(seed + public).decode("ascii"),
        )

    def addresses(self) -> dict[str, str]:
        return {
            chain: self.evm_address if kind == "evm" else self.solana_address
            for chain, kind in WALLET_CHAINS.items()
        }

    def config(self) -> dict[str, Any]:
        """`walletConfig` as the first login returns it (private keys included)."""
        return {
            "evm": {"address": self.evm_address, "privateKey": self.evm_private_key},
            "solana": {"address": self.solana_address, "privateKey": self.solana_private_key},
            "chains": {chain: kind for chain, kind in WALLET_CHAINS.items()},
        }

    def forget_private_keys(self) -> WalletKeys:
        return WalletKeys(evm_address=self.evm_address, solana_address=self.solana_address)
