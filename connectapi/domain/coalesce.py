"""Turning the cells to push into the fewest channel-manager range values.

Per entity (room type or rate plan), nights are split into blocks of consecutive nights.
Each block becomes either
- runs: neighbouring nights with equal values as one range each, or
- a weekday pattern, when every weekday holds one value throughout the block: one range
  value per distinct value, with `days` naming its weekdays (it takes more than 7 nights
  for this to beat runs),
whichever is fewer. Availability has no weekday masks on the channel manager: runs only.

A pattern's first value goes over the whole block and the others over their weekdays
after it. The channel manager applies a value field by field (and a per-person plan's
`rates` occupancy by occupancy), so an override that leaves out something the first
value sets would leave the first value's on its nights, which the record never said:
`covers(first, other)` says whether `other` sets everything `first` does, and a pattern
is used only when every override covers its first value.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass
from datetime import date, timedelta

from .dates import WEEKDAY_CODES

ONE_DAY = timedelta(days=1)


@dataclass(frozen=True, slots=True)
class RangeValue:
    entity_id: int
    first: date
    last: date
    value: Hashable
    days: tuple[str, ...] | None = None  # None: every night of the range


Covers = Callable[[Hashable, Hashable], bool]


def _always(first: Hashable, other: Hashable) -> bool:
    return True


def coalesce(entity_id: int, cells: Mapping[date, Hashable], *, weekday_masks: bool,
             covers: Covers = _always) -> list[RangeValue]:
    values: list[RangeValue] = []
    for block in _blocks(sorted(cells)):
        runs = _runs(entity_id, block, cells)
        if weekday_masks and len(block) > 7:
            pattern = _weekday_pattern(entity_id, block, cells, covers)
            if pattern is not None and len(pattern) < len(runs):
                values.extend(pattern)
                continue
        values.extend(runs)
    return values


def _blocks(nights: list[date]) -> list[list[date]]:
    blocks: list[list[date]] = []
    for night in nights:
        if blocks and blocks[-1][-1] + ONE_DAY == night:
            blocks[-1].append(night)
        else:
            blocks.append([night])
    return blocks


def _runs(entity_id: int, block: list[date], cells: Mapping[date, Hashable]) -> list[RangeValue]:
    runs: list[RangeValue] = []
    start = block[0]
    for previous, night in zip(block, block[1:]):
        if cells[night] != cells[previous]:
            runs.append(RangeValue(entity_id, start, previous, cells[previous]))
            start = night
    runs.append(RangeValue(entity_id, start, block[-1], cells[block[-1]]))
    return runs


def _weekday_pattern(entity_id: int, block: list[date], cells: Mapping[date, Hashable],
                     covers: Covers) -> list[RangeValue] | None:
    by_weekday: dict[int, Hashable] = {}
    for night in block:
        weekday = night.weekday()
        if weekday in by_weekday and by_weekday[weekday] != cells[night]:
            return None
        by_weekday[weekday] = cells[night]
    groups: dict[Hashable, list[int]] = {}
    for weekday in sorted(by_weekday):
        groups.setdefault(by_weekday[weekday], []).append(weekday)
    # The most common value goes first over the whole block with no mask, the others after it.
    ordered = sorted(groups.items(), key=lambda item: -len(item[1]))
    if not all(covers(ordered[0][0], value) for value, _ in ordered[1:]):
        return None  # an override would leave some of the first value's fields on its nights
    pattern = [RangeValue(entity_id, block[0], block[-1], ordered[0][0])]
    for value, weekdays in ordered[1:]:
        pattern.append(RangeValue(entity_id, block[0], block[-1], value, tuple(WEEKDAY_CODES[d] for d in weekdays)))
    return pattern


def expand(values: list[RangeValue]) -> dict[tuple[int, date], Hashable]:
    """What applying the values in order leaves per (entity, night): the inverse, for tests."""
    result: dict[tuple[int, date], Hashable] = {}
    for value in values:
        night = value.first
        while night <= value.last:
            if value.days is None or WEEKDAY_CODES[night.weekday()] in value.days:
                result[(value.entity_id, night)] = value.value
            night += ONE_DAY
    return result
