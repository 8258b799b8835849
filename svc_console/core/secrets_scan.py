"""Patterns of values that must not leave the machine unnoticed: keys, tokens, personal data.

Used to refuse a submission holding a secret before it is recorded (the broker's socket), to flag
personal data and mask planned inputs (requests recorded before that refusal existed); policies
(SKILLS.md) build their input rules on the same names.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Collection, Iterable, Iterator
from dataclasses import dataclass
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


A_KEY_IN = "a key in "  # how a key is named where it is found: never by its own text


def every_string(value: Any, path: str) -> Iterator[tuple[str, str]]:
    """Every string of a JSON value, keys included, in document order, with where it is: a path
    below `path` for a value, `a key in <path of its object>` for a key (a key's own text is
    never part of a path: it may be what is looked for)."""
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield f"{A_KEY_IN}{path}", key
            yield from every_string(item, f"{path}{_show_key(key)}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from every_string(item, f"{path}[{index}]")


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
    keys (hex, lower case, no 0x: kind `OWN_KEY`), is in a JSON value, and its kind; None if
    there is none.

    Keys are searched too (a secret in a key leaves all the same). `where` names a field path
    below `path` (`inputs.items[2].token`) and never quotes the secret: a secret in a key is
    reported as `a key in <path of its object>`. Other keys are shown cut to 40 characters,
    quoted when they are not plain names."""

    def kind_of(text: str) -> str | None:
        kind = secret_kind(text, kinds)
        if kind is None and known:
            lowered = text.lower()
            if any(key in lowered for key in known):
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


# The marks every token the console issues begins with (agents', operators', the web console's):
# only their hashes are kept, so a token is known by its mark.
TOKEN_MARKS = ("svcagent_", "svcop_", "svcweb_")
# A secret shorter than this is not looked for: it would match by chance.
MIN_OWN_SECRET = 16
# A piece of a secret shorter than this is not looked for alone, for the same reason.
MIN_PIECE = 10
_HEX_KEY = re.compile(r"(?:0x)?([0-9a-fA-F]{64})\Z")
_BASE58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
_SOLANA_KEY = re.compile(rf"[{_BASE58}]{{86,88}}\Z")
_URLSAFE = str.maketrans("+/", "-_")


@dataclass(frozen=True)
class SecretForms:
    """What a text holding one of the console's own secrets holds, in any common spelling: the
    secret plain, in hex, base64 or base64url (at each of the three alignments a base64 text may
    give it), its key's bytes so encoded, or a token's mark. A secret is known by pieces of each
    spelling: any stretch of half a spelling holds one, so a secret split in two is found by
    its larger half. URL encoding is undone on the text before it is searched, not spelt here."""

    folded: frozenset[str]  # found whatever their case: plain text, hex, decimal bytes
    exact: frozenset[str]  # found as written: base64 and base64url

    def __or__(self, other: SecretForms) -> SecretForms:
        return SecretForms(self.folded | other.folded, self.exact | other.exact)


def own_secret_forms(values: Iterable[str], marks: Iterable[str] = TOKEN_MARKS) -> SecretForms:
    """The forms of the console's own secrets (`values`) and of its tokens' `marks`, computed
    once when the secrets are loaded, for a matcher to search every submission with."""
    folded: set[str] = set()
    exact: set[str] = set()
    for value in values:
        if len(value or "") < MIN_OWN_SECRET:
            continue
        plain, raw = _key_text_and_bytes(value)
        spellings_folded = [plain.lower(), plain.encode().hex()]
        spellings_exact = _base64_forms(plain.encode())
        if raw is not None:
            spellings_folded += [raw.hex(), ",".join(map(str, raw)), ", ".join(map(str, raw))]
            spellings_exact += _base64_forms(raw)
        folded.update(piece for form in spellings_folded for piece in _pieces(form.lower()))
        exact.update(piece for form in spellings_exact for piece in _pieces(form))
    for mark in marks:
        folded.update((mark.lower(), mark.encode().hex()))
        exact.update(_base64_forms(mark.encode()))
    return SecretForms(frozenset(folded), frozenset(form for form in exact if form))


def _key_text_and_bytes(value: str) -> tuple[str, bytes | None]:
    """A key as its text (an EVM key without 0x) and, for a key, its bytes."""
    evm = _HEX_KEY.match(value)
    if evm is not None:
        return evm.group(1), bytes.fromhex(evm.group(1))
    if _SOLANA_KEY.match(value):
        return value, _base58(value)
    return value, None


def _base58(text: str) -> bytes:
    number = 0
    for char in text:
        number = number * 58 + _BASE58.index(char)
    zeros = len(text) - len(text.lstrip("1"))
    return bytes(zeros) + number.to_bytes((number.bit_length() + 7) // 8, "big")


def _base64_forms(data: bytes) -> list[str]:
    """`data` as any base64 or base64url text holding it shows it: for each offset modulo 3, the
    characters that depend on `data` alone."""
    forms = []
    for shift in range(3):
        encoded = base64.b64encode(bytes(shift) + data).decode()
        first = -(-8 * shift // 6)  # the first character no byte before `data` reaches
        end = 8 * (shift + len(data)) // 6  # past the last character `data` fills whole
        forms += [encoded[first:end], encoded[first:end].translate(_URLSAFE)]
    return forms


def _pieces(form: str) -> list[str]:
    """Stretches of `form` such that any part of it at least half as long holds one: a quarter
    each, end to end (at least MIN_PIECE long, else the whole form)."""
    size = max(MIN_PIECE, len(form) // 4)
    if len(form) <= size:
        return [form]
    return [form[start : start + size] for start in range(0, len(form) - size + 1, size)]
