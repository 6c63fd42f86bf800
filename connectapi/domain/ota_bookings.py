"""OTA booking revisions from the channel manager: read, normalised to the property's own
ids, told as the webhook's `data.booking`, and compared for `changes` and `previous`.

A revision repeats the whole booking as it now is (REFERENCE.md), so applying one means
making the booking what the revision says; order matters only in that an older revision
must never undo a newer one.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
import re
from typing import Any, Literal

from typing_extensions import TypedDict

from .bookings import money, normalise_phone, stay_nights_of, to_minor
from .money import currency_exponent
from .ota_details import (BookingDetails, Charge, RoomDetails, Unreadable, booking_details, card_brand,
                          disagreements, object_of, room_details)
from .revision_screen import StayFacts, screen
from .text import EMAIL_PATTERN, one_line
from .webhook_body import ChangedFields, WebhookBooking, WebhookService, WebhookTax

STATUSES = ("new", "modified", "cancelled")
# The booking's fields a `modified` event compares; `changes` and `previous` hold the ones
# that differ, each whole (the new value and the old one).
Compared = Literal["status", "stay", "rooms", "guest", "amounts", "channel", "taxes", "services", "arrivalHour",
                   "notes"]
COMPARED: tuple[Compared, ...] = ("status", "stay", "rooms", "guest", "amounts", "channel", "taxes", "services",
                                  "arrivalHour", "notes")


# The booking's own fields, bounded as the contract bounds a booking's (decision 0030):
# longer text is cut, and a value that is not what it says (an e-mail that is no address, a
# country that is no code) is dropped; either is recorded with the revision.
GUEST_NAME_MAX = 200
EMAIL_MAX = 254
PHONE_DIGITS = (5, 20)
CHANNEL_MAX = 40
CODE_MAX = 60
ID_MAX = 200  # characters of an id the channel manager gives (uuids, reservation codes)
UNMAPPED_NAMED = 5  # unmapped ids a note names
_COUNTRY = re.compile(r"[A-Za-z]{2}")


class MalformedRevision(ValueError):
    """The revision lacks a field or holds one we cannot read."""


@dataclass(frozen=True, slots=True)
class RevisionRoom:
    cm_room_type_id: str | None  # None: the channel manager has the room unmapped
    cm_rate_plan_id: str | None
    adults: int
    children: int
    amount: Decimal
    details: RoomDetails = RoomDetails((), (), (), (), 0)


@dataclass(frozen=True, slots=True)
class Revision:
    id: str
    cm_booking_id: str
    cm_property_id: str
    system_id: str
    status: str
    reservation_code: str
    ota_name: str
    arrival: date
    departure: date
    amount: Decimal
    currency: str
    customer: dict[str, str | None]
    rooms: tuple[RevisionRoom, ...]
    revised_at: datetime
    details: BookingDetails = BookingDetails()
    room_cut: tuple[str, ...] = ()  # what of the rooms' details was cut or dropped


# PCI (docs/decisions/0093-no-card-data.md, 0128): of a revision's `guarantee` only
# `is_virtual` and the card's brand (`card_type`: a code such as VI or MC, no cardholder
# data) are kept; any other key naming a card, anywhere in the revision, is dropped.
_CARD_KEY = re.compile(r"card|cvv|cvc", re.IGNORECASE)


class KeptGuarantee(TypedDict, total=False):
    """What is kept of a revision's `guarantee`, each when it came readable: whether the
    OTA's own virtual card pays, and the card's brand (a short code, as card_brand keeps it)."""

    is_virtual: bool
    card_type: str


def without_card(raw: dict[str, Any]) -> dict[str, Any]:
    """The revision with no card data left in it: what may be stored, logged or told."""
    cleaned = _drop_card_keys(raw)
    assert isinstance(cleaned, dict)
    if "guarantee" in raw:
        guarantee = raw["guarantee"]
        # That a guarantee came, whether the OTA's own virtual card pays, and the card's
        # brand are all the desk needs from it; a guarantee that is not an object is
        # dropped whole, and a brand that is not a short code is dropped.
        kept: KeptGuarantee = {}
        if isinstance(guarantee, dict):
            if isinstance(guarantee.get("is_virtual"), bool):
                kept["is_virtual"] = guarantee["is_virtual"]
            brand = card_brand(guarantee.get("card_type"))
            if brand is not None:
                kept["card_type"] = brand
        cleaned["guarantee"] = None if guarantee is None else kept
    return cleaned


def _drop_card_keys(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _drop_card_keys(v) for k, v in value.items() if not (isinstance(k, str) and _CARD_KEY.search(k))}
    if isinstance(value, list):
        return [_drop_card_keys(v) for v in value]
    return value


def revision_key(raw: dict[str, object]) -> tuple[str, str, str, str]:
    """(id, system_id, cm property id, cm booking id): what storing a revision needs.

    A feed item (a booking revision) has its own `id` and names its booking in `booking_id`.
    The documented message examples are bookings: their `id` is the booking's (`booking_id`,
    when there, the same) and `revision_id` the revision's, with no `system_id`: the
    revision's id then stands for it (a repeat under the same id is a no-op all the same)."""
    try:
        if raw.get("revision_id") is not None and raw.get("booking_id") in (None, raw.get("id")):
            ident, booking = _text(raw, "revision_id"), _text(raw, "id")
        else:
            ident, booking = _text(raw, "id"), _text(raw, "booking_id")
        system_id = ident if raw.get("system_id") is None else _text(raw, "system_id")
        return ident, system_id, _text(raw, "property_id"), booking
    except KeyError as exc:
        raise MalformedRevision(f"no {exc.args[0]}") from None


def _text(raw: dict[str, object], name: str) -> str:
    value = raw.get(name)
    if value is None or isinstance(value, (dict, list)) or str(value) == "":
        raise KeyError(name)
    if len(str(value)) > ID_MAX:
        raise MalformedRevision(f"its {name} is longer than {ID_MAX} characters")
    return str(value)


REVISED_YEARS = (2000, 9000)  # an `inserted_at` outside these is none a revision was made at


def revised_at(raw: dict[str, object]) -> datetime:
    """The channel manager's `inserted_at`: documented without a zone, and in UTC. One whose
    instant in UTC falls outside the calendar (0001-01-01 at +14:00) is unreadable here,
    not a value the record refuses later (which failed every round of the intake)."""
    try:
        at = datetime.fromisoformat(str(raw["inserted_at"])[:64])
        at = (at if at.tzinfo is not None else at.replace(tzinfo=UTC)).astimezone(UTC)
    except (KeyError, ValueError, OverflowError):
        raise MalformedRevision("no readable inserted_at") from None
    if not REVISED_YEARS[0] <= at.year <= REVISED_YEARS[1]:
        raise MalformedRevision(f"inserted_at in the year {at.year}")
    return at


# How far ahead of this service's clock a revision's `inserted_at` may be. Revisions are
# ordered by it (one older than the revision applied last changes nothing), so one dated
# in the year 8999 would make every later revision of its booking stale: the OTA's
# cancellation lost, the rooms kept. Clocks kept by NTP differ by far less; a host clock
# an hour behind is an outage of its own (decision 0150).
AHEAD_AT_MOST = timedelta(hours=1)


def dated_ahead(revised_at: datetime, now: datetime) -> str | None:
    """Why a revision dated too far ahead of `now` is not applied; None when it is not."""
    if revised_at <= now + AHEAD_AT_MOST:
        return None
    ahead = revised_at - now
    said = f"{ahead.days} days" if ahead.days else f"{ahead.seconds // 60} minutes"
    return (f"its inserted_at is {said} ahead of this service's clock: applied, it would make every later "
            "revision of its booking stale")


def parse_revision(raw: dict[str, Any]) -> Revision:
    try:
        ident, system_id, cm_property, cm_booking = revision_key(raw)
        status = str(raw["status"])
        if status not in STATUSES:
            raise MalformedRevision(f"unknown status {status[:20]!r}")
        occupancy = object_of(raw.get("occupancy"))
        # The booking's children's ages stand for its one room's when the room has none.
        ages = occupancy.get("ages") if len(raw["rooms"]) == 1 else None
        arrival, departure = date.fromisoformat(raw["arrival_date"]), date.fromisoformat(raw["departure_date"])
        room_cut: list[str] = []
        rooms = tuple(_room(room, ages, f"rooms[{i}]", room_cut, (arrival, departure))
                      for i, room in enumerate(raw["rooms"]))
        customer = raw.get("customer") or {}
        if departure <= arrival:
            raise MalformedRevision("departure_date is not after arrival_date")
        if not rooms:
            raise MalformedRevision("no rooms")
        return Revision(
            id=ident, cm_booking_id=cm_booking, cm_property_id=cm_property, system_id=system_id, status=status,
            reservation_code=str(raw.get("ota_reservation_code") or raw.get("unique_id") or ""),
            ota_name=str(raw.get("ota_name") or "unknown"), arrival=arrival, departure=departure,
            amount=Decimal(str(raw["amount"])), currency=str(raw["currency"]).upper(),
            customer={k: (None if customer.get(k) in (None, "") else str(customer[k]))
                      for k in ("name", "surname", "mail", "phone", "country")},
            rooms=rooms, revised_at=revised_at(raw), details=booking_details(raw), room_cut=tuple(room_cut),
        )
    except MalformedRevision:
        raise
    except Unreadable as exc:
        raise MalformedRevision(str(exc)[:200]) from None
    except (KeyError, TypeError, ValueError, AttributeError, ArithmeticError) as exc:
        # ArithmeticError: Decimal's InvalidOperation, and int() of an infinite float.
        raise MalformedRevision(f"unreadable revision: {type(exc).__name__} {exc}"[:200]) from None


def _room(room: dict[str, Any], booking_ages: object, where: str, cut: list[str],
          stay: tuple[date, date]) -> RevisionRoom:
    # Both ids are always there, either may be null (unmapped at the channel manager); a
    # room without `room_type_id` at all is not one we can read.
    occupancy = room.get("occupancy") or {}
    return RevisionRoom(
        None if room["room_type_id"] is None else str(room["room_type_id"]),
        None if room.get("rate_plan_id") is None else str(room["rate_plan_id"]),
        _whole(occupancy.get("adults", 1)), _whole(occupancy.get("children") or 0),
        Decimal(str(room.get("amount", "0"))), room_details(room, booking_ages, where, cut, stay),
    )


def _whole(value: Any) -> int:
    """A count: a whole number, or a string of one (never a float or a boolean)."""
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise ValueError(f"{type(value).__name__} is not a whole number")
    return int(value)


@dataclass(frozen=True, slots=True)
class Mapping:
    """The property's channel-manager ids, theirs to ours."""

    room_types: dict[str, int]
    rate_plans: dict[str, int]
    meal_plans: dict[int, str]  # our rate plan id -> its meal plan
    room_counts: dict[str, int] = field(default_factory=dict)  # their room type id -> the rooms we have of it


@dataclass(frozen=True, slots=True)
class OtaRoom:
    room_type_id: int
    rate_plan_id: int | None
    meal_plan: str
    adults: int
    children: int
    amount_minor: int
    nightly_minor: int
    details: RoomDetails = RoomDetails((), (), (), (), 0)


@dataclass(frozen=True, slots=True)
class OtaBooking:
    """A revision in the property's terms."""

    cancelled: bool
    check_in: date
    check_out: date
    rooms: tuple[OtaRoom, ...]
    guest_name: str
    guest_email: str | None
    guest_phone: str | None
    guest_country: str | None
    total_minor: int
    currency: str
    exponent: int
    channel: str
    reservation_code: str
    # What of the revision's own fields was cut or dropped (decision 0126), for the note.
    cut: tuple[str, ...] = ()
    details: BookingDetails = BookingDetails()
    # What of its amounts does not add up (told as sent all the same), for the owner.
    disagreements: tuple[str, ...] = ()

    @property
    def nights(self) -> list[date]:
        return stay_nights_of(self.check_in, self.check_out)

    def rooms_per_night(self) -> Counter[tuple[int, date]]:
        """Rooms the booking holds per (room type, night)."""
        return Counter((room.room_type_id, night) for room in self.rooms for night in self.nights)


def normalise(revision: Revision, mapping: Mapping) -> OtaBooking | list[str]:
    """The revision in the property's ids; or what it names that cannot be mapped."""
    unmapped = []
    for room in revision.rooms:
        if room.cm_room_type_id is None:
            unmapped.append("a room the channel manager has not mapped to a room type")
        elif room.cm_room_type_id not in mapping.room_types:
            unmapped.append(f"room type {one_line(room.cm_room_type_id, 60)}")
        if room.cm_rate_plan_id is not None and room.cm_rate_plan_id not in mapping.rate_plans:
            unmapped.append(f"rate plan {one_line(room.cm_rate_plan_id, 60)}")
    try:
        exponent = currency_exponent(revision.currency)
    except KeyError:
        unmapped.append(f"currency {revision.currency[:3]}")
        exponent = 2
    total = _minor(revision.amount, exponent)
    if unmapped:
        named = sorted(set(unmapped))
        # Named in a note and an e-mail: a few, and how many more (a revision may hold 100 rooms).
        return named[:UNMAPPED_NAMED] + ([f"{len(named) - UNMAPPED_NAMED} more"] if len(named) > UNMAPPED_NAMED else [])
    nights = len(stay_nights_of(revision.arrival, revision.departure))
    rooms = []
    for room in revision.rooms:
        plan = mapping.rate_plans[room.cm_rate_plan_id] if room.cm_rate_plan_id is not None else None
        amount = _minor(room.amount, exponent)
        assert room.cm_room_type_id is not None  # an unmapped room was answered above
        rooms.append(OtaRoom(mapping.room_types[room.cm_room_type_id], plan,
                             mapping.meal_plans.get(plan, "RO") if plan is not None else "RO",
                             max(1, room.adults), max(0, room.children), amount, amount // nights, room.details))
    guest, cut = _guest(revision.customer)
    channel, code = one_line(revision.ota_name, CHANNEL_MAX), one_line(revision.reservation_code, CODE_MAX)
    cut += [what for what, was, now in (("channel name", revision.ota_name, channel),
                                        ("reservation code", revision.reservation_code, code)) if was.strip() != now]
    cut += [*revision.room_cut, *revision.details.cut]
    told_places = min(exponent, 2)  # the contract's amounts have two decimals
    if any(-amount.as_tuple().exponent > told_places for amount in _amounts_of(revision)  # type: ignore[operator]
           if amount.is_finite()):
        cut.append(f"amounts with more decimals than the {told_places} told: rounded half up")
    cancelled = revision.status == "cancelled"
    return OtaBooking(
        cancelled=cancelled, check_in=revision.arrival, check_out=revision.departure,
        rooms=tuple(rooms), guest_name=guest["name"] or "OTA guest", guest_email=guest["email"],
        guest_phone=guest["phone"], guest_country=guest["country"], total_minor=total, currency=revision.currency,
        exponent=exponent, channel=channel, reservation_code=code, cut=tuple(cut), details=revision.details,
        disagreements=tuple(disagreements(revision.amount, [(r.amount, r.details) for r in revision.rooms],
                                          revision.details, cancelled, revision.currency[:3], told_places)))


def _guest(customer: dict[str, str | None]) -> tuple[dict[str, str | None], list[str]]:
    """The guest's name, e-mail, phone and country as the record keeps them, and what was cut
    or dropped on the way (sizes only: the value itself may be anything)."""
    cut = []
    whole = " ".join(part.strip() for part in (customer["name"], customer["surname"]) if part and part.strip())
    name = one_line(whole, GUEST_NAME_MAX)
    if name != whole:
        cut.append(f"guest name cut ({len(whole):,} characters)")
    email = customer["mail"]
    if email is not None and (len(email) > EMAIL_MAX or not re.fullmatch(EMAIL_PATTERN, email)):
        cut.append(f"guest e-mail dropped ({len(email):,} characters, not an address)")
        email = None
    phone = _phone(customer["phone"])
    if phone is not None and not PHONE_DIGITS[0] <= sum(c.isdigit() for c in phone) <= PHONE_DIGITS[1]:
        cut.append(f"guest phone dropped ({len(customer['phone'] or ''):,} characters, not a number)")
        phone = None
    country = customer["country"]
    if country is not None and not _COUNTRY.fullmatch(country):
        cut.append(f"guest country dropped ({len(country):,} characters, not a two-letter code)")
        country = None
    return {"name": name or None, "email": email, "phone": phone,
            "country": country.upper() if country else None}, cut


def _amounts_of(revision: Revision) -> list[Decimal]:
    """Every amount of the revision that is told."""
    details = revision.details
    return [revision.amount, *(room.amount for room in revision.rooms),
            *(price for room in revision.rooms for _, price in room.details.days),
            *(c.amount for room in revision.rooms for c in (*room.details.taxes, *room.details.services)),
            *(c.amount for c in (*details.taxes, *details.services)),
            *([details.commission] if details.commission is not None else [])]


def screened(revision: Revision, facts: StayFacts) -> str | None:
    """Why the property cannot take this revision (domain.revision_screen), or None."""
    # The booking's and its rooms' amounts: a detail's that cannot be told is dropped when
    # read (domain.ota_details), never a reason to refuse the booking.
    amounts = [revision.amount, *(room.amount for room in revision.rooms)]
    return screen(revision.arrival, revision.departure,
                  [(room.cm_room_type_id, room.adults, room.children) for room in revision.rooms], amounts, facts)


def _phone(phone: str | None) -> str | None:
    """The guest's phone, or None when it holds no digit (an OTA's placeholder, such as the
    documented "Custom Phone"): guests are told apart by phone, and "" would make one guest
    of every OTA guest without a number."""
    found = normalise_phone(phone) if phone else ""
    return found if any(c.isdigit() for c in found) else None


def in_currency_of(booking: OtaBooking, currency: str) -> OtaBooking:
    """The booking, with a disagreement said when its amounts are in another currency than
    the property's (`currency`): applied and told as the OTA sent it, the rooms taken, the
    owner told (decision 0153), as for amounts that do not add up."""
    theirs, ours = booking.currency.strip()[:3], currency.strip()
    if theirs == ours:
        return booking
    said = f"its amounts are in {theirs}, the property's currency is {ours}"
    return replace(booking, disagreements=(*booking.disagreements, said))


def _minor(amount: Decimal, exponent: int) -> int:
    """Major units as minor ones, rounded half up when the OTA sent more digits than the
    currency holds (a fraction of a cent is not worth refusing a booking for)."""
    exact = to_minor(str(amount), exponent)
    if exact is not None:
        return max(0, exact)
    return max(0, int(amount.scaleb(exponent).quantize(Decimal(1), rounding="ROUND_HALF_UP")))


def told(booking: OtaBooking, reference: str, status: str) -> WebhookBooking:
    """`data.booking` of a webhook event: the property's ids only, never the channel
    manager's ids or anything of its credentials; amounts as two-decimal strings in the
    booking's currency, each as the OTA sent it."""
    details, exponent = booking.details, booking.exponent

    def amount(value: Decimal) -> str:
        return money(_minor(value, exponent), exponent)

    guarantee = details.guarantee
    address, company = details.address, details.company
    return {
        "reference": reference,
        "status": status,
        "stay": {"checkIn": booking.check_in.isoformat(), "checkOut": booking.check_out.isoformat(),
                 "nights": len(booking.nights)},
        "rooms": [{"roomTypeId": r.room_type_id, "ratePlanId": r.rate_plan_id, "adults": r.adults,
                   "children": r.children, "amount": money(r.amount_minor, exponent),
                   "nights": [{"date": night.isoformat(), "amount": amount(price)} for night, price in r.details.days],
                   "taxes": [_tax(t, amount) for t in r.details.taxes],
                   "services": [_service(s, amount) for s in r.details.services],
                   "childrenAges": list(r.details.children_ages), "infants": r.details.infants}
                  for r in booking.rooms],
        "guest": {"name": booking.guest_name, "email": booking.guest_email, "phone": booking.guest_phone,
                  "country": booking.guest_country, "language": details.language,
                  "address": None if address is None else {"line": address.line, "city": address.city,
                                                           "zip": address.zip, "country": address.country},
                  "company": None if company is None else {"name": company.name, "vatNumber": company.vat_number}},
        "amounts": {"total": money(booking.total_minor, exponent), "currency": booking.currency,
                    "commission": None if details.commission is None else amount(details.commission),
                    "paymentCollect": details.payment_collect, "paymentType": details.payment_type,
                    "guarantee": None if guarantee is None else {"virtualCard": guarantee.virtual_card,
                                                                 "cardType": guarantee.card_type}},
        "channel": {"name": booking.channel, "reservationCode": booking.reservation_code},
        "taxes": [_tax(t, amount) for t in details.taxes],
        "services": [_service(s, amount) for s in details.services],
        "arrivalHour": details.arrival_hour,
        "notes": details.notes,
    }


def _tax(tax: Charge, amount: Callable[[Decimal], str]) -> WebhookTax:
    return {"name": tax.name, "type": tax.type, "inclusive": tax.inclusive, "amount": amount(tax.amount)}


def _service(service: Charge, amount: Callable[[Decimal], str]) -> WebhookService:
    return {"name": service.name, "type": service.type, "amount": amount(service.amount),
            "priceMode": service.price_mode, "persons": service.persons, "nights": service.nights}


def changes_between(before: WebhookBooking, after: WebhookBooking) -> tuple[ChangedFields, ChangedFields]:
    """(changes, previous): of the compared fields, those that differ, new and old. A booking
    told before members were added (issue 42) is compared on the members it had: the new
    ones appearing is no change of the booking's, and its next event tells them with it
    only if something it had changed."""
    comparable = _members_of(after, before)
    changes: ChangedFields = {}
    previous: ChangedFields = {}
    for name in COMPARED:
        if name in before and before.get(name) != comparable.get(name):
            changes[name], previous[name] = after[name], before[name]
    return changes, previous


def _members_of(value: Any, shape: Any) -> Any:
    """`value` with only the members `shape` has (objects by key, lists by position)."""
    if isinstance(value, dict) and isinstance(shape, dict):
        return {k: _members_of(v, shape[k]) for k, v in value.items() if k in shape}
    if isinstance(value, list) and isinstance(shape, list):
        return [_members_of(v, shape[i]) if i < len(shape) else v for i, v in enumerate(value)]
    return value


def is_newer(revised: datetime, seq: int, last_revised: datetime, last_seq: int) -> bool:
    """Whether a revision comes after the one applied last: by the channel manager's time,
    then, for the same instant, by the order we received them in."""
    return (revised, seq) > (last_revised, last_seq)


@dataclass(frozen=True, slots=True)
class CellMove:
    """One cell's move for an OTA booking, and rooms sold that were not there."""

    delta: int
    short: int


def inventory_moves(held_now: Counter[tuple[int, date]], wanted: Counter[tuple[int, date]],
                    available: dict[tuple[int, date], int]) -> dict[tuple[int, date], CellMove]:
    """From the rooms a booking holds now to the rooms it should hold. The OTA has sold them
    already, so nothing is refused: a cell is taken down to zero at most, and what could
    not be taken is `short` (an overbooking the owner must hear of). `held_now` is what the
    booking took before, which is all it gives back."""
    moves = {}
    for cell in set(held_now) | set(wanted):
        free = available.get(cell, 0) + held_now.get(cell, 0)
        take = min(wanted.get(cell, 0), max(0, free))
        delta = held_now.get(cell, 0) - take
        short = wanted.get(cell, 0) - take
        if delta or short:
            moves[cell] = CellMove(delta, short)
    return moves
