"""Checking one ARI value as Channex does (docs.channex.io, "Availability and Rates").

A value is either a Change to apply or the problems that refuse it: an object of field ->
list of messages, which the answer echoes as the value's `warning` in `meta.warnings`.
A value is checked as sent, any JSON object (so its values are Any); its fields are
typed once they pass (ari_fields.py).

Messages quoted from the docs: NULL_FIELD, IS_INVALID, RATE_POSITIVE, AT_LEAST_0,
AT_LEAST_1, BLANK (the 422 example of the API reference). The others are ours, marked so.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import date, timedelta
from decimal import Decimal, InvalidOperation
from typing import Any, Final, Generic, TypeVar

from ...domain.dates import WEEKDAY_CODES
from .ari_fields import MIN_STAY_FIELDS, AvailabilityFields, RestrictionFields

NULL_FIELD = "Should be a non null value or not existed field"
IS_INVALID = "is invalid"
RATE_POSITIVE = "must be greater than 0"
AT_LEAST_0 = "must be greater than or equal to 0"
AT_LEAST_1 = "must be greater than or equal to 1"
BLANK = "can't be blank"
# Ours: the docs say these are refused but not in which words.
NOT_FOUND = "not found"
PAST = "can't be in the past"
BEFORE_FROM = "must be on or after date_from"
UNKNOWN_FIELD = "is not a known field"
NO_DAYS = "is not allowed for availability"
DATE_AND_RANGE = "give either date or date_from and date_to"
NO_RESTRICTION = "at least one restriction should be present"  # "At least one restriction should be present"
BOTH_MIN_STAY = "not applicable when the property's min_stay_type is both"
ONE_OCCUPANCY = "multi-occupancy rates are not enabled for this rate plan"  # `rates` for a per-room plan
PER_PERSON_RATE = "is not taken by a per-person rate plan: send rates, a rate per occupancy"
RATES_LIST = "must be a non-empty list of {occupancy, rate}"

DATE_KEYS = ("date", "date_from", "date_to")
AVAILABILITY_KEYS = frozenset({"property_id", "room_type_id", *DATE_KEYS, "availability"})
STAYS = ("min_stay_arrival", "min_stay_through", "min_stay")
HELD_STAYS: Final = ("min_stay_arrival", "min_stay_through")  # STAYS less the virtual min_stay
FLAGS: Final = ("closed_to_arrival", "closed_to_departure", "stop_sell")
RESTRICTIONS = ("rate", *STAYS, "max_stay", *FLAGS)
RESTRICTION_KEYS = frozenset({"property_id", "rate_plan_id", *DATE_KEYS, "days", "rates", *RESTRICTIONS})

Problems = dict[str, list[str]]
Fields = TypeVar("Fields", AvailabilityFields, RestrictionFields)


@dataclass(frozen=True, slots=True)
class Target:
    """What a value may name: the property's entities and how it reads dates and stays."""

    entities: frozenset[str]  # its room types (availability) or rate plans (restrictions)
    today: date  # in the property's time zone
    exponent: int  # of its currency, for rates in minor units
    min_stay_type: str  # arrival | through | both
    # The occupancy options of its per-person rate plans, by plan id (a per-room plan's
    # absent; empty for availability).
    occupancies: Mapping[str, tuple[int, ...]]


@dataclass(frozen=True, slots=True)
class Change(Generic[Fields]):
    property_id: str
    entity_id: str
    nights: tuple[date, ...]
    fields: Fields  # normalised: rate a decimal string, stays ints, flags booleans


def check_availability(value: Any,
                       target_of: Callable[[str], Target | None]) -> Change[AvailabilityFields] | Problems:
    return _check(value, "room_type_id", AVAILABILITY_KEYS, target_of, _availability_fields)


def check_restrictions(value: Any,
                       target_of: Callable[[str], Target | None]) -> Change[RestrictionFields] | Problems:
    return _check(value, "rate_plan_id", RESTRICTION_KEYS, target_of, _restriction_fields)


def _check(value: Any, entity_key: str, known: frozenset[str], target_of: Callable[[str], Target | None],
           fields_of: Callable[[dict[str, Any], Target, Problems], Fields | None]) -> Change[Fields] | Problems:
    if not isinstance(value, dict):
        return {"value": [IS_INVALID]}
    problems: Problems = {}
    for key, held in value.items():
        if held is None:  # even of a field it does not take (the docs' availability_offset)
            _add(problems, key, NULL_FIELD)
        elif key not in known:
            # Availability does not take `days` (only restrictions do): ours, like any unknown key.
            _add(problems, key, NO_DAYS if key == "days" else UNKNOWN_FIELD)
    target = None
    pid = value.get("property_id")
    if "property_id" not in value:
        _add(problems, "property_id", BLANK)
    elif isinstance(pid, str):
        target = target_of(pid)
        if target is None:
            _add(problems, "property_id", NOT_FOUND)
    elif pid is not None:
        _add(problems, "property_id", IS_INVALID)
    entity = value.get(entity_key)
    if entity_key not in value:
        _add(problems, entity_key, BLANK)
    elif entity is not None and (not isinstance(entity, str) or (target is not None and entity not in target.entities)):
        _add(problems, entity_key, NOT_FOUND)
    nights = _nights(value, target, problems)
    fields = fields_of(value, target, problems) if target is not None else None
    if problems or fields is None or not isinstance(pid, str) or not isinstance(entity, str):
        return problems or {"value": [IS_INVALID]}
    return Change(pid, entity, tuple(nights), fields)


def _add(problems: Problems, key: str, message: str) -> None:
    if message not in problems.setdefault(key, []):
        problems[key].append(message)


def _day(value: dict[str, Any], key: str, today: date | None, problems: Problems) -> date | None:
    raw = value.get(key)
    if raw is None:
        return None  # a null was said already; an absent one is the caller's to say
    try:
        day = date.fromisoformat(raw) if isinstance(raw, str) and len(raw) == 10 else None
    except ValueError:
        day = None
    if day is None:
        _add(problems, key, IS_INVALID)
    elif today is not None and day < today:
        _add(problems, key, PAST)  # "Past dates are not allowed"
    return day


def _nights(value: dict[str, Any], target: Target | None, problems: Problems) -> list[date]:
    today = target.today if target is not None else None
    if "date" in value:
        if "date_from" in value or "date_to" in value:
            _add(problems, "date", DATE_AND_RANGE)
        day = _day(value, "date", today, problems)
        first = last = day
    else:
        for key in ("date_from", "date_to"):
            if key not in value:
                _add(problems, key, BLANK)
        first = _day(value, "date_from", today, problems)
        last = _day(value, "date_to", today, problems)
        if first is not None and last is not None and last < first:
            _add(problems, "date_to", BEFORE_FROM)
    mask = _weekdays(value, problems)
    if first is None or last is None or last < first or mask is None:
        return []
    return [first + timedelta(days=i) for i in range((last - first).days + 1)
            if (first + timedelta(days=i)).weekday() in mask]


def _weekdays(value: dict[str, Any], problems: Problems) -> set[int] | None:
    days = value.get("days")
    if "days" not in value or days is None:
        return set(range(7))
    if (not isinstance(days, list) or not days
            or not all(isinstance(d, str) and d in WEEKDAY_CODES for d in days)):
        _add(problems, "days", IS_INVALID)
        return None
    return {WEEKDAY_CODES.index(d) for d in days}


def _whole(value: dict[str, Any], key: str, least: int, problems: Problems) -> int | None:
    raw = value.get(key)
    if raw is None:
        return None
    if isinstance(raw, bool) or not isinstance(raw, int):
        _add(problems, key, IS_INVALID)
        return None
    if raw < least:
        _add(problems, key, AT_LEAST_0 if least == 0 else AT_LEAST_1)
        return None
    return raw


def _availability_fields(value: dict[str, Any], target: Target, problems: Problems) -> AvailabilityFields | None:
    """None when refused (then with a problem said)."""
    if "availability" not in value:
        _add(problems, "availability", BLANK)
    count = _whole(value, "availability", 0, problems)
    return None if count is None else {"availability": count}


def _restriction_fields(value: dict[str, Any], target: Target, problems: Problems) -> RestrictionFields:
    fields: RestrictionFields = {}
    if not any(name in value for name in (*RESTRICTIONS, "rates")):
        _add(problems, "restrictions", NO_RESTRICTION)
    plan = value.get("rate_plan_id")
    options = target.occupancies.get(plan) if isinstance(plan, str) else None
    _prices(value, options, target.exponent, fields, problems)
    for name in HELD_STAYS:
        stay = _whole(value, name, 1, problems)
        if stay is not None:
            fields[name] = stay
    min_stay = _whole(value, "min_stay", 1, problems)
    max_stay = _whole(value, "max_stay", 0, problems)
    if max_stay is not None:
        fields["max_stay"] = max_stay
    for flag_name in FLAGS:
        flag = value.get(flag_name)
        if flag is None:
            continue
        if flag in (True, False, 0, 1) and not isinstance(flag, float):
            fields[flag_name] = bool(flag)
        else:
            _add(problems, flag_name, IS_INVALID)
    if min_stay is not None:
        # "It is virtual option": the value lands on the min stay the property's setting names
        # (last, over one given with it).
        if target.min_stay_type == "both":
            _add(problems, "min_stay", BOTH_MIN_STAY)
        else:
            fields[MIN_STAY_FIELDS[target.min_stay_type]] = min_stay
    return fields


def _prices(value: dict[str, Any], options: tuple[int, ...] | None, exponent: int, fields: RestrictionFields,
            problems: Problems) -> None:
    """A per-room plan's price is `rate`; a per-person plan's (`options` its occupancies)
    are `rates`, one per occupancy, and it refuses `rate`: which price would that be?"""
    if value.get("rates") is not None:
        if options is None:
            _add(problems, "rates", ONE_OCCUPANCY)
        else:
            fields["rates"] = _occupancy_rates(value["rates"], options, exponent, problems)
    if value.get("rate") is None:
        return
    if options is not None:
        _add(problems, "rate", PER_PERSON_RATE)
        return
    rate = rate_text(value["rate"], exponent)
    if rate is None or rate == "":
        _add(problems, "rate", IS_INVALID if rate is None else RATE_POSITIVE)
    else:
        fields["rate"] = rate


def _occupancy_rates(raw: Any, options: tuple[int, ...], exponent: int, problems: Problems) -> dict[int, str]:
    """`rates` as occupancy -> rate, each entry `{occupancy, rate}` with an occupancy of the
    plan's options (once) and a rate as `rate` takes it. Every problem is said under
    `rates`, naming its entry (ours: the docs show no such warning), and refuses the value
    whole, as a problem with any field does."""
    if not isinstance(raw, list) or not raw:
        _add(problems, "rates", RATES_LIST)
        return {}
    prices: dict[int, str] = {}
    seen: set[int] = set()
    for index, entry in enumerate(raw):
        if not isinstance(entry, dict) or set(entry) != {"occupancy", "rate"}:
            _add(problems, "rates", f"entry {index} is not an object of occupancy and rate")
            continue
        occupancy = entry["occupancy"]
        if isinstance(occupancy, bool) or not isinstance(occupancy, int):
            _add(problems, "rates", f"entry {index}: occupancy {IS_INVALID}")
            continue
        if occupancy not in options:
            _add(problems, "rates", f"occupancy {occupancy} is not an option of this rate plan")
        elif occupancy in seen:
            _add(problems, "rates", f"occupancy {occupancy} is given more than once")
        seen.add(occupancy)
        rate = rate_text(entry["rate"], exponent)
        if rate is None or rate == "":
            _add(problems, "rates", f"occupancy {occupancy}: rate {IS_INVALID if rate is None else RATE_POSITIVE}")
        else:
            prices[occupancy] = rate
    return prices


def rate_text(raw: Any, exponent: int) -> str | None:
    """A rate as Channex keeps it, a decimal string in major units ("200.00"). It takes a
    decimal string in major units or an integer of minor units (20000 for 200.00). None when
    it is neither; "" when it is one but not above 0."""
    if isinstance(raw, bool) or not isinstance(raw, (str, int)):
        return None
    try:
        amount = Decimal(raw.strip()) if isinstance(raw, str) else Decimal(raw).scaleb(-exponent)
    except InvalidOperation:
        return None
    if not amount.is_finite():
        return None
    if amount <= 0:
        return ""
    if amount != amount.quantize(Decimal(1).scaleb(-exponent)) and isinstance(raw, str):
        return None  # more digits than the currency has: ours to refuse
    return f"{amount:.{exponent}f}"
