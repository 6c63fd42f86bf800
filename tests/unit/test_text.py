import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from connectapi.domain.text import LINE_PATTERN, TEXT_PATTERN, one_line

HOSTILE = ["\r\nBcc: x@example.com", "\n", "\x85", "\u2028", "\u2029", "\x00", "\x1b[31m", "\x7f", "\x9b",
           "\u202e", "\u2066", "\ufeff", "\u200b", "\u2060", "\u206f", "\ufffb"]


@pytest.mark.parametrize("bad", HOSTILE)
def test_a_line_refuses_controls_separators_and_bidi(bad: str) -> None:
    assert re.fullmatch(LINE_PATTERN, f"Casa{bad}Azul") is None


def test_text_keeps_line_breaks_and_tabs_but_not_the_rest() -> None:
    assert re.fullmatch(TEXT_PATTERN, "first line\r\nsecond\tline") is not None
    for bad in HOSTILE[2:]:
        assert re.fullmatch(TEXT_PATTERN, f"note{bad}") is None, repr(bad)


def test_ordinary_names_in_any_script_pass() -> None:
    for name in ("Casa Azul", "Hôtel Élysée", "ホテル", "فندق", "Zimmer 7 – Meerblick", "👍", "👩\u200d💻",
                 "می\u200cخواهم", "\u05e9\u05dc\u05d5\u05dd\u200f 7", "🏴\U000e0067\U000e0062\U000e0065\U000e006e\U000e0067\U000e007f"):
        assert re.fullmatch(LINE_PATTERN, name) is not None


@given(st.text())
def test_one_line_is_always_fit_for_a_header(text: str) -> None:
    cleaned = one_line(text)
    assert re.fullmatch(LINE_PATTERN, cleaned) is not None and len(cleaned) <= 200


def test_one_line_keeps_what_it_can() -> None:
    assert one_line("Booking.com\r\nBcc: x@example.com") == "Booking.com Bcc: x@example.com"


REFUSED_CHARACTERS = st.sampled_from([chr(c) for c in (*range(0, 9), 11, 12, *range(14, 32), *range(0x7F, 0xA0))]
                                     + ["\u2028", "\u2029", "\u200b", "\ufeff", *map(chr, range(0x202A, 0x202F)),
                                        *map(chr, range(0x2060, 0x2065)), *map(chr, range(0x2066, 0x2070)),
                                        *map(chr, range(0xFFF9, 0xFFFC))])


@given(st.text(max_size=20), REFUSED_CHARACTERS, st.text(max_size=20))
def test_stored_names_refuse_a_hostile_character_anywhere(before: str, bad: str, after: str) -> None:
    from pydantic import ValidationError

    from connectapi.domain.admin_models import PropertyPatch
    from connectapi.domain.booking_models import GuestIn

    name = ("A" + before + bad + after)[:100]
    with pytest.raises(ValidationError):
        PropertyPatch.model_validate({"name": name})
    with pytest.raises(ValidationError):
        GuestIn.model_validate({"name": name, "phone": "+351910000000"})
