"""Which characters a stored name or reference may hold, and how text from outside is made
safe for an e-mail header or a log line.

Refused in what we store (400 VALIDATION): C0 and C1 controls and DEL (a CR/LF in a
property name broke the owner's e-mail headers), the line and paragraph separators U+2028
and U+2029, the bidirectional embeddings, overrides and isolates (which make a name or a
reference display as something it is not), and the invisible format characters (zero
width space, word joiner and invisible operators, the deprecated format controls, the
byte order mark, interlinear annotation), which make look-alike references. Kept: the
directional marks (LRM, RLM, ALM: ordinary in mixed-direction names, and they reorder
nothing), ZWJ and ZWNJ (emoji sequences, Persian and Indic names), tag characters
(subdivision flags). Multi-line text (notes, a cancellation reason) may also hold tab,
line feed and carriage return.
"""

from __future__ import annotations

import re

_ALWAYS_REFUSED = ("\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069"
                   "\u200b\u2060-\u2064\u206a-\u206f\ufeff\ufff9-\ufffb")
# For pydantic's `pattern` (its regex engine takes these characters as they are).
LINE_PATTERN = f"^[^\t\n\r{_ALWAYS_REFUSED}]*$"
TEXT_PATTERN = f"^[^{_ALWAYS_REFUSED}]*$"
# An address we send to (an owner logs in with it): one @, no spaces, none of the above.
EMAIL_PATTERN = f"^[^@\\s{_ALWAYS_REFUSED}]+@[^@\\s{_ALWAYS_REFUSED}]+$"
_NOT_IN_A_HEADER = re.compile(f"[\t\n\r{_ALWAYS_REFUSED}]+")
# What multi-line text from outside (a guest's requests) may not keep: the refused
# characters, but for tab, line feed and carriage return.
NOT_IN_TEXT = re.compile(f"[{_ALWAYS_REFUSED}]+")
# A card number written out (13 to 19 digits, in groups or not): taken out of free text
# from outside, where guests and OTAs put one (PCI, docs/decisions/0128).
_DIGIT_RUN = re.compile(r"(?<![0-9])[0-9](?:[ -]?[0-9]){12,18}(?![0-9])")


def _luhn(digits: str) -> bool:
    total = 0
    for i, c in enumerate(reversed(digits)):
        d = int(c) * (2 if i % 2 else 1)
        total += d - 9 if d > 9 else d
    return total % 10 == 0


def without_card_numbers(text: str) -> tuple[str, int]:
    """The text with every run of 13 to 19 digits that passes the Luhn check (a card
    number) replaced, and how many were."""
    found = 0

    def masked(match: re.Match[str]) -> str:
        nonlocal found
        digits = re.sub(r"[ -]", "", match.group(0))
        if not _luhn(digits):
            return match.group(0)
        found += 1
        return "[card number removed]"

    return _DIGIT_RUN.sub(masked, text), found


def one_line(text: str, limit: int = 200) -> str:
    """Text from outside (the channel manager's, or a row stored before these rules) fit for
    an e-mail header or a log line: every run of refused characters becomes one space, and
    the length is bounded."""
    cleaned = _NOT_IN_A_HEADER.sub(" ", text).strip()
    return cleaned if len(cleaned) <= limit else cleaned[: limit - 1] + "…"
