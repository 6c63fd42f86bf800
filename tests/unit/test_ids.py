"""Path ids: the digits a route takes, and the regex that keeps larger ones from any route."""

from __future__ import annotations

import random
import re

import pytest

from connectapi.domain.ids import MAX_ID, at_most_pattern, bounded_int


@pytest.mark.parametrize("high", [0, 7, 9, 10, 99, 100, 305, 1000, 90210, MAX_ID])
def test_the_pattern_takes_exactly_the_values_up_to_its_bound(high: int) -> None:
    pattern = re.compile(at_most_pattern(high))
    rng = random.Random(high)
    near = {0, 1, high - 1, high, high + 1, high + 10, 10 * high, 10 * high + 9, 2**63, 2**64}
    samples = near | {rng.randrange(0, 2 * high + 2) for _ in range(300)} | {rng.randrange(0, 10**25) for _ in range(50)}
    for value in (v for v in samples if v >= 0):
        for text in (str(value), "00" + str(value)):
            assert (pattern.fullmatch(text) is not None) == (value <= high), (high, text)
            assert (bounded_int(text, high) is not None) == (value <= high), (high, text)


def test_the_pattern_takes_ascii_digits_alone() -> None:
    pattern = re.compile(at_most_pattern(MAX_ID))
    for text in ("", "-1", "+1", "1e3", " 1", "1 ", "１２", "٣", "0x10", "1.0"):
        assert pattern.fullmatch(text) is None, text
