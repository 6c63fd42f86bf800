"""Nights, ranges and weekday masks. A range is both ends inclusive.

Nothing here steps past a range's ends, so a range at the calendar's edge (9999-12-31,
0001-01-01) is answered, not an OverflowError.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date, timedelta

WEEKDAY_CODES: tuple[str, ...] = ("mo", "tu", "we", "th", "fr", "sa", "su")  # date.weekday() order
ONE_DAY = timedelta(days=1)


def mask_of(days: list[str] | None) -> frozenset[int]:
    """Weekday numbers (Monday 0) of a `days` list; every weekday when there is none."""
    if days is None:
        return frozenset(range(7))
    return frozenset(WEEKDAY_CODES.index(d) for d in days)


def count_nights(first: date, last: date, mask: frozenset[int]) -> int:
    """Nights in [first, last] whose weekday is in the mask, without listing them."""
    if last < first:
        return 0
    total = (last - first).days + 1
    weeks, rest = divmod(total, 7)
    count = weeks * len(mask)
    start = first.weekday()
    count += sum(1 for i in range(rest) if (start + i) % 7 in mask)
    return count


def nights(first: date, last: date, mask: frozenset[int]) -> Iterator[date]:
    if last < first:
        return
    night = first
    while True:
        if night.weekday() in mask:
            yield night
        if night == last:
            return
        night += ONE_DAY


def first_masked(first: date, last: date, mask: frozenset[int]) -> date | None:
    week_end = last if (last - first).days < 6 else first + timedelta(days=6)
    return next(nights(first, week_end, mask), None)


def last_masked(first: date, last: date, mask: frozenset[int]) -> date | None:
    night = last
    for _ in range(7):
        if night < first:
            return None
        if night.weekday() in mask:
            return night
        if night == first:
            return None
        night -= ONE_DAY
    return None


def plus_days(day: date, days: int) -> date | None:
    """`day` + `days`, or None past the calendar's ends."""
    try:
        return day + timedelta(days=days)
    except OverflowError:
        return None
