"""A first risk assessment of a spend request: where the data comes from and what could go wrong.

Each flag has a severity and a one-line reason the operator can act on. Pure: everything it needs is
passed in, so the same facts always give the same flags.
"""

import unicodedata
from typing import Any

from svc_console.core import secrets_scan
from svc_console.core.models import EndpointRecord, Estimate, RiskFlag, Severity
from svc_console.core.money import format_usdc
from svc_console.core.taxonomy import domain_label

# Domain types whose data or output carries risks of its own, whoever the provider is.
_DOMAIN_RISKS: dict[str, tuple[Severity, str]] = {
    "A8": (Severity.warn, "scraping: may collect personal data and breach the target's terms"),
    "A9": (Severity.warn, "social data: personal data; platform terms of service apply"),
    "A10": (Severity.info, "crypto market data: check accuracy and staleness before acting on it"),
    "A11": (Severity.info, "finance feed: check accuracy and staleness before acting on it"),
    "A1": (Severity.info, "image generation: rights to generated content vary by provider"),
    "A2": (Severity.info, "video generation: rights to generated content vary by provider"),
    "A3": (Severity.info, "audio generation: voice and content rights vary by provider"),
    "A12": (Severity.warn, "e-mail: messages reach real people and cannot be recalled"),
    "A19": (Severity.warn, "identity and KYC: handles personal data"),
}

# How many lookalike characters a flag names before it counts the rest.
_SHOWN_LOOKALIKES = 4
LOW_QUALITY = 0.7
LOW_RELIABILITY = 0.9


def assess(
    endpoint: EndpointRecord,
    estimate: Estimate,
    inputs: dict[str, Any],
    *,
    first_use_of_provider: bool,
    agent_max_usdc: Any = None,
    balance_usdc: Any = None,
) -> list[RiskFlag]:
    flags: list[RiskFlag] = []

    def flag(code: str, severity: Severity, reason: str) -> None:
        flags.append(RiskFlag(code=code, severity=severity, reason=reason))

    if not endpoint.verified:
        flag("unverified", Severity.warn, "provider not verified by the service")
    if endpoint.origin == "registry":
        flag(
            "ingested",
            Severity.info,
            "ingested from a public registry, not registered by its publisher",
        )
    if endpoint.quality_score < LOW_QUALITY:
        flag("low_quality", Severity.warn, f"qualityScore {endpoint.quality_score:.2f} is low")
    if endpoint.reliability < LOW_RELIABILITY:
        flag("unreliable", Severity.warn, f"reliability {endpoint.reliability:.2f} is low")
    if endpoint.domain_type in _DOMAIN_RISKS:
        severity, reason = _DOMAIN_RISKS[endpoint.domain_type]
        flag(f"domain_{endpoint.domain_type}", severity, reason)
    if estimate.dynamic:
        flag(
            "dynamic_price",
            Severity.warn,
            f"dynamic pricing: {format_usdc(estimate.min_usdc)}-{format_usdc(estimate.max_usdc)}"
            " USDC; the runtime challenge sets the price",
        )
    names = lookalike_letters(endpoint.provider_name) + lookalike_letters(endpoint.provider)
    lookalikes = list(dict.fromkeys(names))
    if lookalikes:
        more = len(lookalikes) - _SHOWN_LOOKALIKES
        flag(
            "lookalike_name",
            Severity.warn,
            "provider name has letters outside ASCII, which may imitate a known name: "
            + ", ".join(lookalikes[:_SHOWN_LOOKALIKES])
            + (f" and {more} more" if more > 0 else ""),
        )
    if first_use_of_provider:
        flag("first_use", Severity.info, f"first use of {endpoint.provider_name}")
    if agent_max_usdc is not None and estimate.ceiling > agent_max_usdc:
        flag(
            "above_agent_max",
            Severity.high,
            f"may cost {format_usdc(estimate.ceiling)} USDC, above the agent's own"
            f" max of {format_usdc(agent_max_usdc)}",
        )
    if balance_usdc is not None and balance_usdc < estimate.ceiling:
        flag(
            "low_balance",
            Severity.warn,
            f"wallet holds {format_usdc(balance_usdc)} USDC, less than this call may cost",
        )
    for path, kind, reason in secrets_scan.find(inputs):
        severity = Severity.high if kind in secrets_scan.SECRET_KINDS else Severity.warn
        flag(f"input_{kind}", severity, f"input {path} {reason}")
    return flags


def lookalike_letters(name: str) -> list[str]:
    """Each letter or digit of `name` outside ASCII, as `U+0430 CYRILLIC SMALL LETTER A`.

    The rule is deliberately blunt: a provider's name in another script, fullwidth or in
    mathematical letters can pass for a well-known ASCII name (OpenAI spelt with U+041E, a
    Cyrillic O), so any such character is named by its code point and Unicode name for the
    operator to judge; an all-ASCII name is never flagged."""
    found = []
    for char in name:
        if ord(char) > 0x7F and unicodedata.category(char)[0] in "LN":
            found.append(f"U+{ord(char):04X} {unicodedata.name(char, 'UNNAMED')}")
    return found


def describe_domain(endpoint: EndpointRecord) -> str:
    return f"{endpoint.domain_type} {domain_label(endpoint.domain_type)}"
