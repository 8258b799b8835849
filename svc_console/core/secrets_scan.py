"""Patterns of values that must not leave the machine unnoticed: keys, tokens, personal data.

Used to refuse a submission holding a secret before it is recorded (the broker's socket), to flag
personal data and mask planned inputs (requests recorded before that refusal existed); policies
(SKILLS.md) build their input rules on the same names.
"""

import hashlib
import re
from collections.abc import Collection, Iterator
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
# The kind of a string holding one of the console's own secrets (its API key, wallet token or
# wallet keys; an agent's token): not a pattern, a known value.
OWN_KEY = "own_secret"
# A wallet key is known by its digest (`key_digest`): only the signer holds the key itself.
KEY_DIGEST = "sha256:"


def key_digest(key: str) -> str:
    """How an EVM key is recognised without being held: the sha256 of its 64 hex digits, lower
    case, without 0x, marked `sha256:`."""
    core = key.strip().lower().removeprefix("0x")
    return KEY_DIGEST + hashlib.sha256(core.encode()).hexdigest()


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


# Secret kinds in a fixed order (a frozenset's order changes from run to run), so a string that
# matches two (a bearer token that is an sk_live_ key) is always reported as the same kind.
_SECRET_ORDER = tuple(kind for kind in PATTERNS if kind in SECRET_KINDS)
# A key shown as `.key` in a path; any other key is quoted with repr (escapes controls, bidi).
_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_\-]{0,39}\Z")
_MAX_KEY_SHOWN = 40


def first_secret(
    value: Any,
    path: str,
    kinds: Collection[str] = SECRET_KINDS,
    known: Collection[str] = (),
) -> tuple[str, str] | None:
    """Where the first string of one of the secret `kinds`, or holding one of the `known` EVM
    keys (hex, lower case, no 0x; or a key's `key_digest`: kind `OWN_KEY`), is in a JSON value,
    and its kind; None if there is none.

    Keys are searched too (a secret in a key leaves all the same). `where` names a field path
    below `path` (`inputs.items[2].token`) and never quotes the secret: a secret in a key is
    reported as `a key in <path of its object>`. Other keys are shown cut to 40 characters,
    quoted when they are not plain names."""

    plain = [key for key in known if not key.startswith(KEY_DIGEST)]
    digests = {key for key in known if key.startswith(KEY_DIGEST)}

    def kind_of(text: str) -> str | None:
        kind = secret_kind(text, kinds)
        if kind is None and plain:
            lowered = text.lower()
            if any(key in lowered for key in plain):
                kind = OWN_KEY
        if kind is None and digests:
            hexes = PATTERNS["evm_private_key"][0].finditer(text)
            if any(key_digest(found.group()) in digests for found in hexes):
                kind = OWN_KEY
        return kind

    stack: list[tuple[Any, str]] = [(value, path)]
    while stack:  # depth first, in document order, without recursion
        item, where = stack.pop()
        if isinstance(item, str):
            kind = kind_of(item)
            if kind is not None:
                return where, kind
        elif isinstance(item, dict):
            children = []
            for key, child in item.items():
                kind = kind_of(key)
                if kind is not None:
                    return f"a key in {where}", kind
                children.append((child, f"{where}{_show_key(key)}"))
            stack.extend(reversed(children))
        elif isinstance(item, list):
            stack.extend(reversed([(child, f"{where}[{i}]") for i, child in enumerate(item)]))
    return None


def describe(kind: str) -> str:
    """What a string of `kind` looks like, for a message ("looks like a bearer token")."""
    return "holds one of this console's own secrets" if kind == OWN_KEY else PATTERNS[kind][1]


def secret_kind(text: str, kinds: Collection[str] = SECRET_KINDS) -> str | None:
    """The first of the secret `kinds` `text` holds, or None (e-mail addresses are not
    secrets)."""
    for kind in _SECRET_ORDER:
        if kind in kinds and PATTERNS[kind][0].search(text):
            return kind
    return None


def _show_key(key: str) -> str:
    if _PLAIN_KEY.match(key):
        return f".{key}"
    shown = key if len(key) <= _MAX_KEY_SHOWN else key[:_MAX_KEY_SHOWN] + "…"
    return f"[{shown!r}]"


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
