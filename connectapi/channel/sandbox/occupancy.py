"""A rate plan's occupancy options, as Channex documents them (Rate Plans Collection,
"Occupancy Options", `sell_mode`): a per-room plan sells one price a night whatever the
guests; a per-person plan one price per count of adults, an option for each, one of them
primary. Messages of a refused body are ours (the docs name the rules, not the words),
in Channex's 422 shape: field -> messages.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

MAX_OCCUPANCY: Final = 18  # adults an option may count: a plan holds at most 18 options
SELL_MODES: Final = ("per_room", "per_person")  # per_room unless said
BLANK = "can't be blank"
IS_INVALID = "is invalid"
# Ours.
OPTIONS_LIST = "must be a non-empty list of occupancy options"
DISTINCT = "each occupancy may have one option only"
ONE_PRIMARY = "exactly one option must be primary"

Problems = dict[str, list[str]]


@dataclass(frozen=True, slots=True)
class PerPerson:
    """A per-person plan's options: its occupancies, ascending, and the primary one (whose
    price a read answers as the plan's `rate`)."""

    occupancies: tuple[int, ...]
    primary: int


def per_person(occupancies: Sequence[int]) -> PerPerson:
    """Options for these occupancies, the largest primary (as our client creates a plan).
    ValueError unless they are distinct whole numbers from 1 to MAX_OCCUPANCY, at least one."""
    if not occupancies or len(set(occupancies)) != len(occupancies) or not all(
            _is_occupancy(n) for n in occupancies):
        raise ValueError(f"occupancies must be distinct whole numbers from 1 to {MAX_OCCUPANCY}, at least one")
    return PerPerson(tuple(sorted(occupancies)), max(occupancies))


def sold_per_person(attrs: dict[str, Any]) -> PerPerson | None | Problems:
    """What a rate plan's body asks for: None for a per-room plan, its options for a
    per-person one, or why it is refused. Options are required of a per-person plan; a
    per-room plan's, if sent, are checked alike and not kept (it has one price a night).
    An option's default `rate` is checked, not kept: the sandbox holds no default prices."""
    mode = attrs.get("sell_mode")
    if mode is not None and mode not in SELL_MODES:
        return {"sell_mode": [IS_INVALID]}
    options = attrs.get("options")
    if options is None:
        return {"options": [BLANK]} if mode == "per_person" else None
    checked = _options(options)
    if isinstance(checked, list):
        return {"options": checked}
    return checked if mode == "per_person" else None


def _options(options: Any) -> PerPerson | list[str]:
    """The options as a PerPerson, or the problems with them."""
    if not isinstance(options, list) or not options:
        return [OPTIONS_LIST]
    problems: list[str] = []
    occupancies: list[int] = []
    primaries: list[int] = []
    for index, option in enumerate(options):
        said = _option_problems(index, option)
        if said:
            problems += said
            continue
        occupancies.append(option["occupancy"])
        if option["is_primary"]:
            primaries.append(option["occupancy"])
    if problems:
        return problems
    if len(set(occupancies)) != len(occupancies):
        problems.append(DISTINCT)
    if len(primaries) != 1:
        problems.append(ONE_PRIMARY)
    return problems or PerPerson(tuple(sorted(occupancies)), primaries[0])


def _option_problems(index: int, option: Any) -> list[str]:
    """`occupancy` and `is_primary` required, `rate` a whole number of minor units >= 0
    (the docs' examples send 0), `derived_option` taken as sent."""
    if not isinstance(option, dict):
        return [f"option {index} is not an object"]
    problems = []
    if not _is_occupancy(option.get("occupancy")):
        problems.append(f"option {index}: occupancy must be a whole number from 1 to {MAX_OCCUPANCY}")
    if not isinstance(option.get("is_primary"), bool):
        problems.append(f"option {index}: is_primary must be true or false")
    rate = option.get("rate", 0)
    if isinstance(rate, bool) or not isinstance(rate, int) or rate < 0:
        problems.append(f"option {index}: rate must be a whole number >= 0")
    return problems


def _is_occupancy(raw: Any) -> bool:
    return not isinstance(raw, bool) and isinstance(raw, int) and 1 <= raw <= MAX_OCCUPANCY
