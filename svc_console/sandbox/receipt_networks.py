"""The network a sandbox receipt names for each chain, as a CAIP-2 identifier.

Read by the wallet proxy's receipts (`sandbox.wallet_proxy`) and the account's charge history
(`sandbox.account_routes`), so both name a chain alike. Tempo keeps the name the wallet proxy
has always answered (`tempo:mainnet`), not the EVM chain id `core.networks` gives the x402 and
MPP gates.
"""

NETWORKS = {
    "base": "eip155:8453",
    "ethereum": "eip155:1",
    "solana": "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp",
    "stellar": "stellar:pubnet",
    "tempo": "tempo:mainnet",
}
