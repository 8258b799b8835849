"""A slow hash (scrypt) of what only an operator knows: the passphrase, an operator's token.

A same-user agent can read every file the operator can, so what is kept must make guessing
offline slow: verifying one guess costs about a tenth of a second and 32 MiB.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets

N, R, P = 2**15, 8, 1
MAXMEM = 64 * 1024 * 1024


def _hash(secret: str, salt: bytes, n: int, r: int, p: int) -> bytes:
    return hashlib.scrypt(secret.encode(), salt=salt, n=n, r=r, p=p, maxmem=MAXMEM, dklen=32)


def encode(secret: str) -> str:
    """`scrypt$N$R$P$salt$digest`, salted afresh."""
    salt = secrets.token_bytes(16)
    digest = _hash(secret, salt, N, R, P)
    encoded = [base64.b64encode(part).decode() for part in (salt, digest)]
    return f"scrypt${N}${R}${P}${encoded[0]}${encoded[1]}"


def matches(stored: str, candidate: str) -> bool:
    """Whether `candidate` hashes to `stored`; ValueError when `stored` is no such hash."""
    try:
        scheme, n, r, p, salt, digest = stored.split("$")
        if scheme != "scrypt":
            raise ValueError(scheme)
        expected = base64.b64decode(digest, validate=True)
        actual = _hash(candidate, base64.b64decode(salt, validate=True), int(n), int(r), int(p))
    except (ValueError, TypeError) as exc:
        raise ValueError(type(exc).__name__) from None
    return hmac.compare_digest(actual, expected)
