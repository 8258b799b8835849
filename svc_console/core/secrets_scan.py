"""Patterns of values that must not leave the machine unnoticed: keys, tokens, personal data.

Used to flag and mask planned inputs; policies (SKILLS.md) build their input rules on the same
names.
"""

import re
from collections.abc import Iterator
from typing import Any

PATTERNS: dict[str, tuple[re.Pattern[str], str]] = {
    "evm_private_key": (
        re.compile(r"(?<![0-9a-fA-F])(?:0x)?[0-9a-fA-F]{64}(?![0-9a-fA-F])"),
        "looks like an EVM private key",
    ),
    "solana_private_key": (
        re.compile(r"(?<![1-9A-HJ-NP-Za-km-z])[1-9A-HJ-NP-Za-km-z]{86,88}(?![1-9A-HJ-NP-Za-km-z])"),
        "looks like a Solana private key",
    ),
    "api_key": (re.compile(r"sk_live_[A-Za-z0-9_\-]{8,}"), "looks like an sk_live_ API key"),
    "bearer_token": (
        re.compile(r"(?i)bearer\s+[A-Za-z0-9._~+/\-]{16,}=*"),
        "looks like a bearer token",
    ),
    "email": (
        re.compile(r"[A-Za-z0-9._%+\-]+@[A-Za-z0-9.\-]+\.[A-Za-z]{2,}"),
        "contains an e-mail address (personal data)",
    ),
}
SECRET_KINDS = frozenset({"evm_private_key", "solana_private_key", "api_key", "bearer_token"})


def walk_strings(value: Any, path: str = "") -> Iterator[tuple[str, str]]:
    """Every string inside a JSON value, with its path (`query`, `items[2].name`)."""
    if isinstance(value, str):
        yield path or "(value)", value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from walk_strings(item, f"{path}.{key}" if path else str(key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from walk_strings(item, f"{path}[{index}]")


def find(value: Any) -> list[tuple[str, str, str]]:
    """(field path, kind, reason) for each sensitive-looking string in a JSON value."""
    hits = []
    for path, text in walk_strings(value):
        for kind, (pattern, reason) in PATTERNS.items():
            if pattern.search(text):
                hits.append((path, kind, reason))
    return hits


def _masker(kind: str):  # type: ignore[no-untyped-def]
    return lambda match: f"{match.group()[:4]}…[masked {kind}]"


def mask(value: Any) -> Any:
    """A copy of a JSON value with secret-looking substrings replaced (e-mails are left visible:
    the operator must see what personal data is about to leave)."""
    if isinstance(value, str):
        for kind in SECRET_KINDS:
            value = PATTERNS[kind][0].sub(_masker(kind), value)
        return value
    if isinstance(value, dict):
        return {key: mask(item) for key, item in value.items()}
    if isinstance(value, list):
        return [mask(item) for item in value]
    return value
