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


def at_most_pattern(high: int) -> str:
    """A regular expression of the ASCII digits `bounded_int` takes for `high`: a path's
    converter that only refuses a value after its rule matched leaves werkzeug counting the
    path's other rules, whose methods make a 405 of what matches no route."""
    digits = str(high)
    shorter = [f"[0-9]{{1,{len(digits) - 1}}}"] if len(digits) > 1 else []
    # As long as `high`: its first i digits, a smaller one, then any.
    lower = [f"{digits[:i]}[0-{int(d) - 1}][0-9]{{{len(digits) - i - 1}}}" for i, d in enumerate(digits) if d != "0"]
    return "0*(?:" + "|".join([*shorter, *lower, digits]) + ")"
