"""API key format: `cak_live_` (or `cak_test_` for test mode) + 43 base64url characters
(32 random bytes).

Only the SHA-256 digest of a key is ever stored; the key itself is shown once.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets

LIVE_PREFIX = "cak_live_"
TEST_PREFIX = "cak_test_"  # a key of a property's test twin (docs/decisions/0115-test-mode-twins.md)
PREFIXES = {"live": LIVE_PREFIX, "test": TEST_PREFIX}
_KEY_RE = re.compile(r"cak_(live|test)_[A-Za-z0-9_-]{43}")
# How much of a key the owner sees in listings: enough to tell keys apart, useless to an attacker.
DISPLAY_CHARS = len(LIVE_PREFIX) + 4


def new_key(mode: str = "live") -> str:
    return PREFIXES[mode] + secrets.token_urlsafe(32)


def mode_of(key: str) -> str:
    """`test` for a key with the test prefix, otherwise `live` (whether well formed or not:
    a request's budgets are counted by the mode its key claims, before it is looked up)."""
    return "test" if key.startswith(TEST_PREFIX) else "live"


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
