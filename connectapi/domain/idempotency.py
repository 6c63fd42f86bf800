"""Idempotency keys: their format, and what "the same body" means."""

from __future__ import annotations

import hashlib
import json
import re
from datetime import timedelta
from typing import Any

from .errors import ApiError

HEADER = "x-idempotency-key"
RETENTION = timedelta(days=7)
# A claim still in flight after this is taken for abandoned (its process died) and may be
# taken over; far above any write's duration, far below a client's patience.
STALE_IN_FLIGHT = timedelta(minutes=2)
_KEY = re.compile(r"[A-Za-z0-9_-]{10,64}")


def checked_key(value: str | None) -> str | None:
    if value is None:
        return None
    if _KEY.fullmatch(value) is None:
        raise ApiError("IDEMPOTENCY_KEY_INVALID", "x-idempotency-key must be 10 to 64 characters of [A-Za-z0-9_-]")
    return value


def body_hash(payload: Any) -> bytes:
    """Of the parsed JSON, so key order and whitespace do not make two bodies differ."""
    canonical = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).digest()
