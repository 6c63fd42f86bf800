"""What an OTA booking carries beyond its stay, rooms and guest (issue 42): each night's
price, taxes, extras, the OTA's commission, who collects the money and how, the guarantee
(never the card), the arrival hour, the guest's requests, the children's ages, and the
guest's language, address and company: what a front desk needs to post a folio.

Read from a Channex booking revision (docs.channex.io, Bookings Collection: Booking Room
`days`, `taxes`, `services`; Booking `services`, `ota_commission`, `payment_collect`,
`payment_type`, `arrival_hour`, `notes`; `occupancy.ages`; `customer`), bounded as the
contract bounds a booking's fields, and told as members of the webhook's `data.booking`.
Money is read as the OTA sent it and never made to add up: `disagreements` names what does
not, for the owner. A detail that cannot be read (a tax without a price, a night off the
stay) is dropped and the drop recorded, never a reason to refuse the booking: an OTA has
sold the stay, and a booking refused takes no room. Pure: no I/O.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from datetime import date
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import Any

from .text import NOT_IN_TEXT, one_line, without_card_numbers

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
# Card brands as Channex codes them (Bookings Collection, Guarantee: `card_type`), and the
# names its own examples show; anything else in `card_type` is not kept.
CARD_BRANDS = frozenset({"AX", "BC", "BL", "CU", "DN", "DS", "EL", "JC", "MA", "MC", "MI", "VI", "VISA",
                         "MASTERCARD", "AMEX", "MAESTRO", "DINERS", "DISCOVER", "JCB", "UNIONPAY"})
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


def object_of(value: object) -> dict[str, object]:
    """A member that should be an object, or an empty one when it is anything else."""
    return value if isinstance(value, dict) else {}


def card_brand(value: Any) -> str | None:
    """The card's brand as kept and told (upper case), or None for anything that is no brand."""
    if isinstance(value, str) and value.strip().upper() in CARD_BRANDS:
        return value.strip().upper()
    return None


AMOUNT_BOUND = Decimal(10) ** 10  # as the screen's (domain.revision_screen)


def money(value: Any, where: str) -> Decimal:
    """An amount as the OTA sent it (a string or a number of major units)."""
    if isinstance(value, bool) or value is None or isinstance(value, (dict, list)):
        raise Unreadable(f"{where} is not an amount")
    try:
        return Decimal(str(value))
    except (InvalidOperation, ValueError):
        raise Unreadable(f"{where} is not an amount") from None


def _detail_amount(value: Any, where: str, cut: list[str]) -> Decimal | None:
    """A detail's amount (a night's, a tax's, an extra's, the commission), or None, the drop
    recorded, when it is not one a webhook can tell: unreadable, not a number, negative (a
    discount: the booking's own amounts say what is owed), or absurd."""
    try:
        amount = money(value, where)
    except Unreadable:
        cut.append(f"{where} dropped (not an amount)")
        return None
    if not amount.is_finite() or not 0 <= amount < AMOUNT_BOUND:
        cut.append(f"{where} dropped (not an amount from 0 to ten integer digits)")
        return None
    return amount


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
        cut.append(f"{where} dropped (not a list)")
        return ()
    if len(values) > CHARGES_MAX:
        cut.append(f"{where} beyond the first {CHARGES_MAX} dropped ({len(values):,} in all)")
    found = []
    for i, value in enumerate(values[:CHARGES_MAX]):
        if not isinstance(value, dict):
            cut.append(f"{where}[{i}] dropped (not an object)")
            continue
        amount = _detail_amount(value.get("total_price"), f"{where}[{i}].total_price", cut)
        if amount is None:
            continue
        name = _text(value.get("name"), NAME_MAX) or _text(value.get("type"), NAME_MAX) or "unnamed"
        if len(str(value.get("name") or "")) > NAME_MAX:
            cut.append(f"{where}[{i}] name cut ({len(str(value['name'])):,} characters)")
        inclusive = value.get("is_inclusive")
        found.append(Charge(
            name=name, type=_text(value.get("type"), TYPE_MAX), amount=amount,
            inclusive=(inclusive if isinstance(inclusive, bool) else None) if tax else None,
            price_mode=_text(value.get("price_mode"), PRICE_MODE_MAX),
            persons=_count(value.get("persons")), nights=_count(value.get("nights"))))
    return tuple(found)


def room_details(room: dict[str, object], booking_ages: object, where: str, cut: list[str],
                 stay: tuple[date, date] | None = None) -> RoomDetails:
    """A Booking Room's nights (those of the stay, once each), taxes, services, children's
    ages and infants."""
    days_raw = room.get("days")
    days: dict[date, Decimal] = {}
    if days_raw is not None and not isinstance(days_raw, dict):
        cut.append(f"{where}.days dropped (not an object)")
    for night, price in (days_raw.items() if isinstance(days_raw, dict) else ()):
        text = str(night)
        try:
            day = date.fromisoformat(text) if len(text) == 10 else None
        except ValueError:
            day = None
        if day is None or day in days or (stay is not None and not stay[0] <= day < stay[1]):
            cut.append(f"{where}.days: a night dropped (not a night of the stay, or given twice)")
            continue
        amount = _detail_amount(price, f"{where}.days[{day.isoformat()}]", cut)
        if amount is not None:
            days[day] = amount
    occupancy = object_of(room.get("occupancy"))
    children = _count(occupancy.get("children")) or 0
    ages_raw = occupancy.get("ages") if occupancy.get("ages") is not None else booking_ages
    ages: list[int] = []
    for age in ages_raw if isinstance(ages_raw, list) else []:
        years = _count(age)
        if years is None or years > CHILD_AGE_MAX:
            cut.append(f"{where} child's age dropped (not 0 to {CHILD_AGE_MAX})")
            continue
        ages.append(years)
    if len(ages) > children:
        cut.append(f"{where} children's ages beyond its {children} children dropped")
        ages = ages[:children]
    infants = _count(occupancy.get("infants")) or 0
    return RoomDetails(tuple(sorted(days.items())), _charges(room.get("taxes"), f"{where}.taxes", True, cut),
                       _charges(room.get("services"), f"{where}.services", False, cut), tuple(ages), infants)


def booking_details(raw: dict[str, object]) -> BookingDetails:
    """The booking-level members: charges, commission, payment terms, guarantee, arrival
    hour, notes, and the guest's language, address and company."""
    cut: list[str] = []
    taxes = _charges(raw.get("taxes"), "taxes", True, cut)
    services = _charges(raw.get("services"), "services", False, cut)
    commission = (None if raw.get("ota_commission") is None else
                  _detail_amount(raw["ota_commission"], "ota_commission", cut))
    collect = _choice(raw.get("payment_collect"), PAYMENT_COLLECT, "payment_collect", cut)
    payment_type = _choice(raw.get("payment_type"), PAYMENT_TYPE, "payment_type", cut)
    hour = raw.get("arrival_hour")
    if hour is not None and not (isinstance(hour, str) and _HOUR.fullmatch(hour.strip())):
        cut.append("arrival hour dropped (not HH:MM)")
        hour = None
    notes_raw = raw.get("notes")
    notes = None
    if isinstance(notes_raw, str) and notes_raw.strip():
        notes = _notes(notes_raw, cut)
        if len(notes_raw) > NOTES_MAX:
            cut.append(f"notes cut ({len(notes_raw):,} characters)")
    customer = object_of(raw.get("customer"))
    return BookingDetails(
        taxes=taxes, services=services, commission=commission, payment_collect=collect, payment_type=payment_type,
        guarantee=_guarantee(raw.get("guarantee")), arrival_hour=hour.strip() if isinstance(hour, str) else None,
        notes=notes, language=_language(customer.get("language"), cut), address=_address(customer, cut),
        company=_company(customer.get("company"), cut), cut=tuple(cut))


def _choice(value: Any, allowed: tuple[str, ...], name: str, cut: list[str]) -> str | None:
    if value is None:
        return None
    if isinstance(value, str) and value in allowed:
        return value
    cut.append(f"{name} dropped (not one of {', '.join(allowed)})")
    return None


def _notes(text: str, cut: list[str]) -> str:
    """The guest's requests: several lines kept, what no text should hold taken out, and a
    card number a guest or an OTA wrote there (PCI)."""
    kept, cards = without_card_numbers(NOT_IN_TEXT.sub("", text)[:NOTES_MAX])
    if cards:
        cut.append(f"notes: {cards} card number(s) taken out")
    return kept.strip()


def _free(text: str | None, where: str, cut: list[str]) -> str | None:
    """Short free text from outside with any card number taken out (PCI)."""
    if text is None:
        return None
    kept, cards = without_card_numbers(text)
    if cards:
        cut.append(f"{where}: a card number taken out")
    return kept


def _guarantee(value: Any) -> Guarantee | None:
    if not isinstance(value, dict):
        return None
    card_type = value.get("card_type")
    return Guarantee(value.get("is_virtual") is True, card_brand(card_type))


def _language(value: Any, cut: list[str]) -> str | None:
    if value is None or value == "":
        return None
    if isinstance(value, str) and _LANGUAGE.fullmatch(value):
        return value
    cut.append("guest language dropped (not a language code)")
    return None


def _address(customer: dict[str, object], cut: list[str]) -> Address | None:
    line, city, zip_code = (_text(customer.get(k), limit) for k, limit in
                            (("address", ADDRESS_MAX), ("city", CITY_MAX), ("zip", ZIP_MAX)))
    for name, limit in (("address", ADDRESS_MAX), ("city", CITY_MAX), ("zip", ZIP_MAX)):
        if len(str(customer.get(name) or "")) > limit:
            cut.append(f"guest {name} cut ({len(str(customer[name])):,} characters)")
    country = customer.get("country")
    country = country.upper() if isinstance(country, str) and _COUNTRY.fullmatch(country) else None
    if line is None and city is None and zip_code is None:
        return None
    return Address(_free(line, "guest address", cut), _free(city, "guest city", cut), _free(zip_code, "guest zip", cut),
                   country)


def _company(value: Any, cut: list[str]) -> Company | None:
    if isinstance(value, str):
        name = _free(_text(value, COMPANY_MAX), "guest company", cut)
        return Company(name, None) if name else None
    if not isinstance(value, dict):
        return None
    name = _free(_text(value.get("title") or value.get("name"), COMPANY_MAX), "guest company", cut)
    kind = str(value.get("number_type") or value.get("type") or "")
    number = _text(value.get("number"), VAT_MAX) if "vat" in kind.lower() or not kind else None
    number = _free(number, "guest company's number", cut)
    return Company(name, number) if name or number else None


def disagreements(total: Decimal, rooms: list[tuple[Decimal, RoomDetails]], details: BookingDetails,
                  cancelled: bool, currency: str, places: int = 2) -> list[str]:
    """What of the amounts does not add up, said for the owner (the amounts are told as the
    OTA sent them all the same). What an OTA's amounts cover is not documented alike for
    every OTA (a room's extras within its amount or beside it; a tax not included within
    the total or not), so an amount that adds up any of those ways is taken as adding up:
    what is named is a room whose nights, with or without its extras, are not its amount,
    and, but for a cancellation (whose amount is what the guest still owes), a total that
    is not the rooms and the booking's extras, with or without the rooms' extras and the
    taxes not included. Each amount is taken as told (`places` decimals, half up), so that
    what the receiver adds up is what was checked."""
    unit = Decimal(1).scaleb(-places)

    def told(amount: Decimal) -> Decimal:
        return amount.quantize(unit, rounding=ROUND_HALF_UP)

    total = told(total)
    rooms = [(told(amount), RoomDetails(tuple((d, told(p)) for d, p in room.days),
                                        tuple(replace(t, amount=told(t.amount)) for t in room.taxes),
                                        tuple(replace(e, amount=told(e.amount)) for e in room.services),
                                        room.children_ages, room.infants)) for amount, room in rooms]
    details = replace(details, taxes=tuple(replace(t, amount=told(t.amount)) for t in details.taxes),
                      services=tuple(replace(e, amount=told(e.amount)) for e in details.services))
    said = []
    room_extras = Decimal(0)
    excluded = sum((t.amount for t in details.taxes if t.inclusive is False), Decimal(0))
    for i, (amount, room) in enumerate(rooms, start=1):
        extras = sum((s.amount for s in room.services), Decimal(0))
        room_extras += extras
        excluded += sum((t.amount for t in room.taxes if t.inclusive is False), Decimal(0))
        nights = sum((price for _, price in room.days), Decimal(0))
        if room.days and amount not in (nights, nights + extras):
            said.append(f"the nights of room {i} add up to {nights} {currency}, its amount is {amount} {currency}")
    if not cancelled:
        summed = sum((amount for amount, _ in rooms), Decimal(0)) + sum((s.amount for s in details.services),
                                                                       Decimal(0))
        if total not in {summed + extra + tax for extra in (Decimal(0), room_extras) for tax in (Decimal(0), excluded)}:
            said.append(f"the rooms and extras add up to {summed} {currency}, the total is {total} {currency}")
    return said
