"""What an OTA booking carries beyond its stay, rooms and guest (issue 42): each night's
price, taxes, extras, the OTA's commission, who collects the money and how, the guarantee
(never the card), the arrival hour, the guest's requests, the children's ages, and the
guest's language, address and company: what a front desk needs to post a folio.

Read from a Channex booking revision (docs.channex.io, Bookings Collection: Booking Room
`days`, `taxes`, `services`; Booking `services`, `ota_commission`, `payment_collect`,
`payment_type`, `arrival_hour`, `notes`; `occupancy.ages`; `customer`), bounded as the
contract bounds a booking's fields, and told as members of the webhook's `data.booking`.
Money is read as the OTA sent it and never made to add up: `disagreements` names what does
not, for the owner. Pure: no I/O.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date
from decimal import Decimal, InvalidOperation
from typing import Any

from .text import one_line

CHARGES_MAX = 50  # taxes, or services, of one room or of the booking
NAME_MAX = 100
TYPE_MAX = 60
PRICE_MODE_MAX = 40
NOTES_MAX = 2000  # as the contract's own booking notes
ADDRESS_MAX = 200
CITY_MAX = 100
ZIP_MAX = 20
COMPANY_MAX = 200
VAT_MAX = 40
COUNT_MAX = 1000  # persons or nights of a charge
PAYMENT_COLLECT = ("ota", "property")
PAYMENT_TYPE = ("credit_card", "bank_transfer")
_HOUR = re.compile(r"([01][0-9]|2[0-3]):[0-5][0-9]")
_LANGUAGE = re.compile(r"[A-Za-z]{2,3}([-_][A-Za-z0-9]{2,8})?")
_CARD_TYPE = re.compile(r"[A-Za-z]{2,20}")
_COUNTRY = re.compile(r"[A-Za-z]{2}")
CHILD_AGE_MAX = 17


class Unreadable(ValueError):
    """A money field of the revision that cannot be read: the revision cannot be applied."""


@dataclass(frozen=True, slots=True)
class Charge:
    """A tax or a service (an extra) as the OTA charged it."""

    name: str
    type: str | None
    amount: Decimal
    inclusive: bool | None = None  # taxes: whether the room's price includes it
    price_mode: str | None = None  # services: per stay, per night, per person per night
    persons: int | None = None
    nights: int | None = None


@dataclass(frozen=True, slots=True)
class RoomDetails:
    days: tuple[tuple[date, Decimal], ...]  # each night's price, as the OTA sent it
    taxes: tuple[Charge, ...]
    services: tuple[Charge, ...]
    children_ages: tuple[int, ...]
    infants: int


@dataclass(frozen=True, slots=True)
class Guarantee:
    """That a card guaranteed the booking: whether the OTA's virtual card, and its brand.
    Never a number, holder, expiry or CVV (PCI, decision 0093)."""

    virtual_card: bool
    card_type: str | None


@dataclass(frozen=True, slots=True)
class Address:
    line: str | None
    city: str | None
    zip: str | None
    country: str | None


@dataclass(frozen=True, slots=True)
class Company:
    name: str | None
    vat_number: str | None


@dataclass(frozen=True, slots=True)
class BookingDetails:
    taxes: tuple[Charge, ...] = ()
    services: tuple[Charge, ...] = ()
    commission: Decimal | None = None
    payment_collect: str | None = None
    payment_type: str | None = None
    guarantee: Guarantee | None = None
    arrival_hour: str | None = None
    notes: str | None = None
    language: str | None = None
    address: Address | None = None
    company: Company | None = None
    # What was cut or dropped on the way (sizes and names only, never the value).
    cut: tuple[str, ...] = ()


def object_of(value: Any) -> dict[str, Any]:
    """A member that should be an object, or an empty one when it is anything else."""
    return value if isinstance(value, dict) else {}


def money(value: Any, where: str) -> Decimal:
    """An amount as the OTA sent it (a string or a number of major units)."""
    if isinstance(value, bool) or value is None or isinstance(value, (dict, list)):
        raise Unreadable(f"{where} is not an amount")
    try:
        return Decimal(str(value))
    except (InvalidOperation, ValueError):
        raise Unreadable(f"{where} is not an amount") from None


def _count(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return None
    try:
        number = int(str(value))
    except ValueError:
        return None
    return number if 0 <= number <= COUNT_MAX else None


def _text(value: Any, limit: int) -> str | None:
    if value is None or isinstance(value, (dict, list, bool)):
        return None
    text = one_line(str(value), limit)
    return text or None


def _charges(values: Any, where: str, tax: bool, cut: list[str]) -> tuple[Charge, ...]:
    if values is None:
        return ()
    if not isinstance(values, list):
        raise Unreadable(f"{where} is not a list")
    if len(values) > CHARGES_MAX:
        raise Unreadable(f"{where} holds {len(values):,} entries, more than {CHARGES_MAX}")
    found = []
    for i, value in enumerate(values):
        if not isinstance(value, dict):
            raise Unreadable(f"{where}[{i}] is not an object")
        name = _text(value.get("name"), NAME_MAX) or _text(value.get("type"), NAME_MAX) or "unnamed"
        if len(str(value.get("name") or "")) > NAME_MAX:
            cut.append(f"{where}[{i}] name cut ({len(str(value['name'])):,} characters)")
        inclusive = value.get("is_inclusive")
        found.append(Charge(
            name=name, type=_text(value.get("type"), TYPE_MAX),
            amount=money(value.get("total_price"), f"{where}[{i}].total_price"),
            inclusive=(inclusive if isinstance(inclusive, bool) else None) if tax else None,
            price_mode=_text(value.get("price_mode"), PRICE_MODE_MAX),
            persons=_count(value.get("persons")), nights=_count(value.get("nights"))))
    return tuple(found)


def room_details(room: dict[str, Any], booking_ages: list[Any] | None, where: str,
                 cut: list[str]) -> RoomDetails:
    """A Booking Room's nights, taxes, services, children's ages and infants."""
    days_raw = room.get("days")
    days: list[tuple[date, Decimal]] = []
    if days_raw is not None:
        if not isinstance(days_raw, dict):
            raise Unreadable(f"{where}.days is not an object")
        for night, price in days_raw.items():
            try:
                day = date.fromisoformat(str(night))
            except ValueError:
                raise Unreadable(f"{where}.days has a night that is not a date") from None
            days.append((day, money(price, f"{where}.days")))
    occupancy = object_of(room.get("occupancy"))
    children = occupancy.get("children") or 0
    ages_raw = occupancy.get("ages") if occupancy.get("ages") is not None else booking_ages
    ages: list[int] = []
    for age in ages_raw if isinstance(ages_raw, list) else []:
        years = _count(age)
        if years is None or years > CHILD_AGE_MAX:
            cut.append(f"{where} child's age dropped (not 0 to {CHILD_AGE_MAX})")
            continue
        ages.append(years)
    if isinstance(children, int) and not isinstance(children, bool) and len(ages) > children >= 0:
        cut.append(f"{where} children's ages beyond its {children} children dropped")
        ages = ages[:children]
    infants = _count(occupancy.get("infants")) or 0
    return RoomDetails(tuple(sorted(days)), _charges(room.get("taxes"), f"{where}.taxes", True, cut),
                       _charges(room.get("services"), f"{where}.services", False, cut), tuple(ages), infants)


def booking_details(raw: dict[str, Any]) -> BookingDetails:
    """The booking-level members: charges, commission, payment terms, guarantee, arrival
    hour, notes, and the guest's language, address and company."""
    cut: list[str] = []
    taxes = _charges(raw.get("taxes"), "taxes", True, cut)
    services = _charges(raw.get("services"), "services", False, cut)
    commission = None if raw.get("ota_commission") is None else money(raw["ota_commission"], "ota_commission")
    collect = _choice(raw.get("payment_collect"), PAYMENT_COLLECT, "payment_collect", cut)
    payment_type = _choice(raw.get("payment_type"), PAYMENT_TYPE, "payment_type", cut)
    hour = raw.get("arrival_hour")
    if hour is not None and not (isinstance(hour, str) and _HOUR.fullmatch(hour.strip())):
        cut.append("arrival hour dropped (not HH:MM)")
        hour = None
    notes_raw = raw.get("notes")
    notes = None
    if isinstance(notes_raw, str) and notes_raw.strip():
        notes = _notes(notes_raw)
        if len(notes_raw) > NOTES_MAX:
            cut.append(f"notes cut ({len(notes_raw):,} characters)")
    customer = object_of(raw.get("customer"))
    return BookingDetails(
        taxes=taxes, services=services, commission=commission, payment_collect=collect, payment_type=payment_type,
        guarantee=_guarantee(raw.get("guarantee")), arrival_hour=hour.strip() if isinstance(hour, str) else None,
        notes=notes, language=_language(customer.get("language"), cut), address=_address(customer, cut),
        company=_company(customer.get("company")), cut=tuple(cut))


def _choice(value: Any, allowed: tuple[str, ...], name: str, cut: list[str]) -> str | None:
    if value is None:
        return None
    if isinstance(value, str) and value in allowed:
        return value
    cut.append(f"{name} dropped (not one of {', '.join(allowed)})")
    return None


_NOT_IN_NOTES = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def _notes(text: str) -> str:
    """The guest's requests: several lines kept, what no text should hold taken out."""
    return _NOT_IN_NOTES.sub("", text)[:NOTES_MAX].strip()


def _guarantee(value: Any) -> Guarantee | None:
    if not isinstance(value, dict):
        return None
    card_type = value.get("card_type")
    return Guarantee(value.get("is_virtual") is True,
                     card_type if isinstance(card_type, str) and _CARD_TYPE.fullmatch(card_type) else None)


def _language(value: Any, cut: list[str]) -> str | None:
    if value is None or value == "":
        return None
    if isinstance(value, str) and _LANGUAGE.fullmatch(value):
        return value
    cut.append("guest language dropped (not a language code)")
    return None


def _address(customer: dict[str, Any], cut: list[str]) -> Address | None:
    line, city, zip_code = (_text(customer.get(k), limit) for k, limit in
                            (("address", ADDRESS_MAX), ("city", CITY_MAX), ("zip", ZIP_MAX)))
    for name, limit in (("address", ADDRESS_MAX), ("city", CITY_MAX), ("zip", ZIP_MAX)):
        if len(str(customer.get(name) or "")) > limit:
            cut.append(f"guest {name} cut ({len(str(customer[name])):,} characters)")
    country = customer.get("country")
    country = country.upper() if isinstance(country, str) and _COUNTRY.fullmatch(country) else None
    if line is None and city is None and zip_code is None:
        return None
    return Address(line, city, zip_code, country)


def _company(value: Any) -> Company | None:
    if isinstance(value, str):
        name = _text(value, COMPANY_MAX)
        return Company(name, None) if name else None
    if not isinstance(value, dict):
        return None
    name = _text(value.get("title") or value.get("name"), COMPANY_MAX)
    kind = str(value.get("number_type") or value.get("type") or "")
    number = _text(value.get("number"), VAT_MAX) if "vat" in kind.lower() or not kind else None
    return Company(name, number) if name or number else None


def disagreements(total: Decimal, rooms: list[tuple[Decimal, RoomDetails]], services: tuple[Charge, ...],
                  cancelled: bool, currency: str) -> list[str]:
    """What of the amounts does not add up, said for the owner (the amounts are told as the
    OTA sent them all the same): a room whose nights do not add up to its amount, and,
    but for a cancellation (whose amount is what the guest still owes), rooms and the
    booking's extras that do not add up to the total."""
    said = []
    for i, (amount, details) in enumerate(rooms, start=1):
        if details.days and sum(price for _, price in details.days) != amount:
            said.append(f"the nights of room {i} add up to {sum(p for _, p in details.days)} {currency}, "
                        f"its amount is {amount} {currency}")
    if not cancelled:
        summed = sum((amount for amount, _ in rooms), Decimal(0)) + sum((s.amount for s in services), Decimal(0))
        if summed != total:
            said.append(f"the rooms and extras add up to {summed} {currency}, the total is {total} {currency}")
    return said
