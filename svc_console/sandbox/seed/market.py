"""Names, prices and settlement weights the market catalogue's providers are drawn from.

The catalogue is generated in two waves. The first (publisher-heavy) wave draws only from the
original vocabularies (`SUFFIXES`, `BLURBS`): changing their length or order would change every
record of that wave, and the demo and tests name some of them (`ep_frameify_generate`). The second
wave, providers synced from public registries, draws from the wider lists.
"""

from decimal import Decimal

SUFFIXES = (
    "ly", "io", "ify", "Labs", "Hub", "Works", "Stack", "Base", "Flow", "AI", "Cloud", "Data",
    "API", "Forge", "Point", "Grid", "Nest", "Pilot", "Bridge", "Wise", "Sense", "Scope", "Kit",
    "Dock", "Feed",
)  # fmt: skip
MORE_SUFFIXES = (
    *SUFFIXES,
    "Mesh", "Loop", "Relay", "Signal", "Vault", "Lane", "Port", "Yard", "Spring", "Atlas",
    "Harbor", "Engine", "Metrics", "Systems", "Network", "Direct", "Express", "Central", "Prime",
    "Shift", "Beam", "Node", "Rail", "Wave", "Well",
)  # fmt: skip
LOWER_SUFFIXES = frozenset({"ly", "io", "ify"})

# Realistic per-call price points: amounts are drawn from these so the catalogue reads like a
# market.
PRICE_POINTS = tuple(
    Decimal(p)
    for p in (
        "0.001", "0.002", "0.003", "0.005", "0.008", "0.01", "0.015", "0.02", "0.025", "0.03",
        "0.04", "0.05", "0.075", "0.1", "0.15", "0.2", "0.25", "0.3", "0.4", "0.5", "0.75", "1",
        "1.5", "2",
    )
)  # fmt: skip

X402_CHAINS = ("base", "solana", "ethereum", "stellar")
X402_WEIGHTS = (55, 25, 10, 10)

BLURBS = (
    "Built for agent workloads.",
    "Low-latency edge network.",
    "Answers are cached for up to 60 seconds.",
    "Backed by a 99.9% uptime target.",
    "Rate limited to 10 calls per second per wallet.",
    "Community maintained.",
    "Regional endpoints in the US and EU.",
    "",
    "",
)
MORE_BLURBS = (
    *BLURBS,
    "Open source; hosted by the maintainers.",
    "Answers in under 300 ms at the median.",
    "Batch-friendly: send up to 100 items per call.",
    "Operated from a single region.",
    "Beta: the schema may still change.",
)
# Said of every provider the registry sync found rather than a publisher registered.
REGISTRY_NOTE = "Listed from a public registry; re-synced daily."
