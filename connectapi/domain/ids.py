"""Whole numbers from client text (ids in paths and bodies, a list's limit), read without
calling int() on unbounded text.

int() refuses more than 4300 digits with a ValueError (a 500 if it escapes), str.isdigit()
takes characters int() refuses ("²"), and a value past 64 bits makes PostgreSQL's bigint
refuse the query. Our ids are bigint keys.
"""

from __future__ import annotations

MAX_ID = 2**63 - 1  # PostgreSQL bigint


def bounded_int(text: str, high: int) -> int | None:
    """ASCII digits worth 0 to `high` (leading zeros allowed, as int() takes them); else None."""
    if not text.isascii() or not text.isdigit():
        return None
    significant = text.lstrip("0") or "0"
    if len(significant) > len(str(high)):
        return None
    value = int(significant)
    return value if value <= high else None
