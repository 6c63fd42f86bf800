"""API key format: `cak_live_` + 43 base64url characters (32 random bytes).

Only the SHA-256 digest of a key is ever stored; the key itself is shown once.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets

LIVE_PREFIX = "cak_live_"
_KEY_RE = re.compile(r"cak_live_[A-Za-z0-9_-]{43}")
# How much of a key the owner sees in listings: enough to tell keys apart, useless to an attacker.
DISPLAY_CHARS = len(LIVE_PREFIX) + 4


def new_key() -> str:
    return LIVE_PREFIX + secrets.token_urlsafe(32)


def is_well_formed(key: str) -> bool:
    return _KEY_RE.fullmatch(key) is not None


def digest(key: str) -> bytes:
    return hashlib.sha256(key.encode("ascii")).digest()


def same_digest(a: bytes, b: bytes) -> bool:
    return hmac.compare_digest(a, b)


def display_prefix(key: str) -> str:
    return key[:DISPLAY_CHARS]


def bearer_token(authorization: str | None) -> str | None:
    """The token of an `Authorization: Bearer <token>` header, or None.

    The scheme is case-insensitive (RFC 9110); anything else, including a key sent in
    another header or in the query, is not a credential here.
    """
    if not authorization:
        return None
    scheme, _, token = authorization.strip().partition(" ")
    if scheme.lower() != "bearer":
        return None
    token = token.strip()
    return token or None
