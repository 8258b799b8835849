"""Settlement networks and the USDC contract on each: the one table both the console (checking a
challenge before it signs) and the sandbox (issuing and verifying challenges) read, so the two can
never disagree on which asset is USDC.

Networks are named as CAIP-2 identifiers on the wire (`eip155:8453`), chains by the marketplace's
names (`base`). EIP-3009 payments (x402 `exact`, MPP `evm/charge`) are signed over an EIP-712
domain made of the token's name and version, the chain id and the token's address.
"""

from __future__ import annotations

from dataclasses import dataclass

# The marketplace's chain names and the CAIP-2 network each settles on. Tempo is an EVM chain
# (chain id 4217); base-sepolia is not a marketplace chain, but the x402 specification's published
# examples are signed there.
NETWORKS: dict[str, str] = {
    "base": "eip155:8453",
    "ethereum": "eip155:1",
    "tempo": "eip155:4217",
    "solana": "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp",
    "stellar": "stellar:pubnet",
    "base-sepolia": "eip155:84532",
}
CHAIN_OF: dict[str, str] = {network: chain for chain, network in NETWORKS.items()}

# USDC on each network (on Tempo, the TIP-20 USDC pympp's Tempo method names).
USDC_ASSETS: dict[str, str] = {
    "eip155:8453": "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
    "eip155:1": "0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48",
    "eip155:4217": "0x20C000000000000000000000b9537d11c60E8b50",
    "eip155:84532": "0x036CbD53842c5426634e7929541eC2318f3dCF7e",
    "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp": "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v",
    "stellar:pubnet": "CCW67TSZV3SSS2HXMBQ5JFGCKJNXKZM7UQUWUZPUTHXSTZLEO7SJMI75",
}


@dataclass(frozen=True)
class Eip712Domain:
    """The name and version a token signs EIP-3009 authorizations with."""

    name: str
    version: str


# The USDC contracts' own EIP-712 names (as the x402 package's default assets list them). Tempo's
# is the sandbox's choice: nothing settles on Tempo here.
USDC_DOMAINS: dict[str, Eip712Domain] = {
    "eip155:8453": Eip712Domain("USD Coin", "2"),
    "eip155:1": Eip712Domain("USD Coin", "2"),
    "eip155:4217": Eip712Domain("USD Coin", "2"),
    "eip155:84532": Eip712Domain("USDC", "2"),
}


def caip2(chain_or_network: str) -> str:
    """`base` or `eip155:8453` -> `eip155:8453`; anything unknown is returned unchanged."""
    return NETWORKS.get(chain_or_network, chain_or_network)


def chain_name(network: str) -> str:
    """`eip155:8453` -> `base`; anything unknown is returned unchanged."""
    return CHAIN_OF.get(network, network)


def evm_chain_id(network: str) -> int | None:
    """The chain id of an `eip155:` network, or None for any other kind."""
    namespace, _, reference = network.partition(":")
    if namespace != "eip155" or not reference.isdigit():
        return None
    return int(reference)


def same_address(left: str | None, right: str | None) -> bool:
    """EVM addresses compare without their EIP-55 checksum casing."""
    return isinstance(left, str) and isinstance(right, str) and left.lower() == right.lower()
