"""Labels of the marketplace's domain types (A1-A22) and product classes (B1-B6).

SPEC.md names A7 (web search), A8 (scraping), B1 (pay-per-call APIs) and B2 (data products); the
rest follow the categories the spec lists.
"""

DOMAIN_TYPES: dict[str, str] = {
    "A1": "image generation",
    "A2": "video generation",
    "A3": "audio and speech",
    "A4": "text inference",
    "A5": "embeddings",
    "A6": "translation",
    "A7": "web search",
    "A8": "scraping",
    "A9": "social data",
    "A10": "crypto market data",
    "A11": "finance feeds",
    "A12": "email",
    "A13": "maps and geodata",
    "A14": "weather",
    "A15": "news",
    "A16": "e-commerce data",
    "A17": "code execution",
    "A18": "document parsing",
    "A19": "identity and KYC",
    "A20": "blockchain analytics",
    "A21": "storage and files",
    "A22": "other",
}

PRODUCT_CLASSES: dict[str, str] = {
    "B1": "pay-per-call API",
    "B2": "data product",
    "B3": "compute job",
    "B4": "model inference",
    "B5": "streaming feed",
    "B6": "agent service",
}

CHAINS = ("base", "solana", "stellar", "ethereum", "tempo")
PROTOCOLS = ("x402", "mpp")


def domain_label(code: str) -> str:
    return DOMAIN_TYPES.get(code, "unknown domain type")
