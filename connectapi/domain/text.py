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


def one_line(text: str, limit: int = 200) -> str:
    """Text from outside (the channel manager's, or a row stored before these rules) fit for
    an e-mail header or a log line: every run of refused characters becomes one space, and
    the length is bounded."""
    cleaned = _NOT_IN_A_HEADER.sub(" ", text).strip()
    return cleaned if len(cleaned) <= limit else cleaned[: limit - 1] + "…"
