"""The sandbox channel manager's OTA bookings: revisions in Channex's documented shape, the
feed of unacknowledged ones, acknowledgement, and the 30-minute reminder for revisions left
unacknowledged (docs.channex.io, Bookings Collection: "Booking.com examples"; REFERENCE.md).

A revision repeats the whole booking as it now is; `new`, `modified` and `cancelled` are
all made from the booking's current Stay.
"""

from __future__ import annotations

import itertools
import secrets
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from decimal import ROUND_DOWN, Decimal

from typing_extensions import TypedDict

from ...domain.money import currency_exponent
from .revision import CancellationFee, Guarantee, Guest, Occupancy, Revision, RevisionStatus, Room, Service, Tax

# Channex e-mails the property (webhook `non_acked_booking`) for a revision not acknowledged
# 30 minutes after it was first offered (Bookings Collection, "Booking Revisions Feed").
REMIND_AFTER = timedelta(minutes=30)

# unique_id is "<OTA code>-<reservation code>" (BDC-3333333333, ABB-HM5MBZ1AVA, EXP-1695093244
# in the docs' examples); other OTAs: the first three letters of their name, our choice.
OTA_CODES = {"BookingCom": "BDC", "Airbnb": "ABB", "Expedia": "EXP", "A-Expedia": "EXP"}
# ota_commission is "Currently available for Booking.com and Airbnb channels"; the rate is ours.
COMMISSION_OTAS = ("BookingCom", "Airbnb")
COMMISSION_RATE = Decimal("0.15")
# Booking.com's example room carries a 5 % VAT, inclusive, and an `ota_unique_id`.
VAT_RATE = Decimal("0.05")
# Airbnb's example has no guarantee and `guests`/`meta` null; the others carry a masked card.
NO_CARD_OTAS = ("Airbnb",)
# A child's age when the OTA did not say one (the docs list `ages` whenever children > 0).
DEFAULT_CHILD_AGE = 8


@dataclass
class Stay:
    """What an OTA booking is now: the fields a revision repeats in full. The first eleven
    are positional (the service's admin route builds one so); the rest are optional."""

    property_id: str
    room_type_id: str
    rate_plan_id: str
    arrival: date
    departure: date
    adults: int
    children: int
    guest: Guest
    amount: Decimal
    currency: str
    ota_name: str
    arrival_hour: str | None = None
    notes: str | None = None
    children_ages: list[int] = field(default_factory=list)
    # What the OTA keeps of a cancelled stay: the cancelled revision's amount and its one
    # service, as in the docs' Booking.com cancellation (76.50 of a 153.00 stay).
    cancellation_fee: Decimal | None = None
    # Each night's price (the amount spread evenly when None): given apart from `amount`,
    # they may disagree with it, as an OTA's may.
    nightly: list[Decimal] | None = None
    # The room's taxes; None: the OTA's own (Booking.com's example: a 5 % VAT, included).
    taxes: list[Tax] | None = None
    # Extras bought on top of the room (Channex's booking-level `services`): the booking's
    # amount is the rooms' and theirs.
    extras: list[Service] = field(default_factory=list)
    payment_collect: str | None = None
    payment_type: str | None = None
    virtual_card: bool = False
    commission: Decimal | None = None  # None: the OTA's own (15 % for Booking.com and Airbnb)


class StayDetails(TypedDict, total=False):
    """A Stay's optional fields, those given."""

    arrival_hour: str | None
    notes: str | None
    children_ages: list[int]
    nightly: list[Decimal] | None
    taxes: list[Tax] | None
    extras: list[Service]
    payment_collect: str | None
    payment_type: str | None
    virtual_card: bool
    commission: Decimal | None


class StayChange(StayDetails, total=False):
    """What an OTA's modification changes of a Stay: its fields by name, those that change."""

    room_type_id: str
    rate_plan_id: str
    arrival: date
    departure: date
    adults: int
    children: int
    guest: Guest
    amount: Decimal
    ota_name: str


@dataclass
class BookingFeed:
    revisions: dict[str, Revision] = field(default_factory=dict)  # id -> revision, in emission order
    acked: set[str] = field(default_factory=set)
    stays: dict[str, Stay] = field(default_factory=dict)  # booking id -> the stay now
    codes: dict[str, str] = field(default_factory=dict)  # OTA reservation code -> booking id
    # Told of each revision as Channex's `booking` webhook is: {booking_id, property_id,
    # revision_id}, no booking data.
    listeners: list[Callable[[dict[str, str]], None]] = field(default_factory=list)
    # Told, once, of each revision still unacknowledged REMIND_AFTER after it was made
    # (Channex's `non_acked_booking` event); the same payload.
    reminder_listeners: list[Callable[[dict[str, str]], None]] = field(default_factory=list)
    # Tests: hand the feed out newest first, as a channel manager may.
    newest_first: bool = False
    made_at: dict[str, datetime] = field(default_factory=dict)  # revision id -> when it was made
    reminded: set[str] = field(default_factory=set)
    # Reservation codes from a random start: the revisions' system ids (`<code>-<n>`) are
    # unique in the record, and a sandbox started again (or another process's, or the test
    # sandbox beside the live one) must not hand out one already kept, which the intake
    # would take for the same revision offered again.
    _numbers: itertools.count[int] = field(default_factory=lambda: itertools.count(secrets.randbelow(8 * 10**9)
                                                                                    + 10**9))
    _room_ids: dict[str, str] = field(default_factory=dict)  # booking id -> booking_room_id now
    _last_at: datetime | None = None

    def new(self, stay: Stay, at: datetime) -> Revision:
        booking_id = str(uuid.uuid4())
        code = str(next(self._numbers))
        self.stays[booking_id] = stay
        self.codes[code] = booking_id
        self._room_ids[booking_id] = str(uuid.uuid4())
        return self._emit(booking_id, code, "new", at)

    def modify(self, code: str, changes: StayChange, at: datetime) -> Revision:
        booking_id = self.codes[code]
        stay = self.stays[booking_id]
        for name, value in changes.items():
            setattr(stay, name, value)
        # Booking.com's modification example carries a new booking_room_id; its
        # cancellation repeats the modified one.
        self._room_ids[booking_id] = str(uuid.uuid4())
        return self._emit(booking_id, code, "modified", at)

    def forget_property(self, property_id: str) -> None:
        """Every booking of this property gone, revisions and codes with them (a test
        record's reset: nothing of it comes back through the feed)."""
        gone = {bid for bid, stay in self.stays.items() if stay.property_id == property_id}
        for code in [c for c, bid in self.codes.items() if bid in gone]:
            del self.codes[code]
        for revision_id in [r for r, rev in self.revisions.items() if rev["booking_id"] in gone]:
            del self.revisions[revision_id]
            self.acked.discard(revision_id)
            self.made_at.pop(revision_id, None)
        for bid in gone:
            del self.stays[bid]
            self._room_ids.pop(bid, None)

    def cancel(self, code: str, at: datetime, fee: Decimal | None = None) -> Revision:
        self.stays[self.codes[code]].cancellation_fee = fee
        return self._emit(self.codes[code], code, "cancelled", at)

    def feed(self, property_id: str | None) -> list[Revision]:
        """Revisions not yet acknowledged, oldest first (or newest first, when told to)."""
        found = [r for rid, r in self.revisions.items()
                 if rid not in self.acked and (property_id is None or r["property_id"] == property_id)]
        return found[::-1] if self.newest_first else found

    def ack(self, revision_id: str) -> bool:
        if revision_id not in self.revisions:
            return False
        self.acked.add(revision_id)
        return True

    def remind(self, now: datetime) -> list[dict[str, str]]:
        """Tell the reminder listeners of revisions unacknowledged REMIND_AFTER after they were
        made, each once; returns what was told."""
        due = [rid for rid, made in self.made_at.items()
               if rid not in self.acked and rid not in self.reminded and now - made >= REMIND_AFTER]
        told = []
        for rid in due:
            self.reminded.add(rid)
            payload = _trigger(self.revisions[rid])
            told.append(payload)
            for listener in self.reminder_listeners:
                listener(payload)
        return told

    def _emit(self, booking_id: str, code: str, status: RevisionStatus, at: datetime) -> Revision:
        # Its clock gives every revision its own instant, even on a test's standing clock.
        if self._last_at is not None and at <= self._last_at:
            at = self._last_at + timedelta(microseconds=1)
        self._last_at = at
        revision_id = str(uuid.uuid4())
        number = sum(1 for r in self.revisions.values() if r["booking_id"] == booking_id) + 1
        revision = revision_attributes(self.stays[booking_id], revision_id, booking_id, code,
                                       f"{code}-{number}", self._room_ids[booking_id], status, at)
        self.revisions[revision_id] = revision
        self.made_at[revision_id] = at
        for listener in self.listeners:
            listener(_trigger(revision))
        return revision


def _trigger(revision: Revision) -> dict[str, str]:
    return {"booking_id": revision["booking_id"], "property_id": revision["property_id"],
            "revision_id": revision["id"]}


def revision_attributes(stay: Stay, revision_id: str, booking_id: str, code: str, system_id: str,
                        room_id: str, status: RevisionStatus, at: datetime) -> Revision:
    """A booking revision's attributes, field for field as the docs' Booking.com example (plus
    `booking_id` and `system_id`, which the feed's revisions carry)."""
    exponent = currency_exponent(stay.currency)
    nights = [stay.arrival + timedelta(days=i) for i in range((stay.departure - stay.arrival).days)]
    card = stay.ota_name not in NO_CARD_OTAS
    guest = stay.guest
    fee = stay.cancellation_fee if status == "cancelled" else None
    extras = sum((Decimal(str(e["total_price"])) for e in stay.extras), Decimal(0))
    amount = stay.amount + extras if fee is None else fee
    return {
        "id": revision_id,
        "booking_id": booking_id,
        "revision_id": revision_id,
        "property_id": stay.property_id,
        "unique_id": f"{OTA_CODES.get(stay.ota_name, stay.ota_name[:3].upper())}-{code}",
        "system_id": system_id,
        "ota_reservation_code": code,
        "ota_name": stay.ota_name,
        "status": status,
        "arrival_date": stay.arrival.isoformat(),
        "departure_date": stay.departure.isoformat(),
        "arrival_hour": stay.arrival_hour,
        "amount": _money(amount, exponent),
        "ota_commission": (_money(stay.commission, exponent) if stay.commission is not None else
                           _money(amount * COMMISSION_RATE, exponent) if stay.ota_name in COMMISSION_OTAS else None),
        "currency": stay.currency,
        "notes": stay.notes,
        "payment_collect": stay.payment_collect,
        "payment_type": stay.payment_type,
        "occupancy": _occupancy(stay),
        "customer": {
            "name": guest.get("name"), "surname": guest.get("surname"), "mail": guest.get("mail"),
            "phone": guest.get("phone"), "country": guest.get("country"), "city": guest.get("city"),
            "address": guest.get("address"), "zip": guest.get("zip"), "language": guest.get("language"),
            "company": guest.get("company"), "meta": {"is_genius": False},
        },
        "guarantee": _guarantee(stay) if card or stay.virtual_card else None,
        "services": [e.copy() for e in stay.extras] if fee is None else [_cancellation_fee(fee, exponent)],
        "rooms": [_room(stay, room_id, nights, exponent)],
        # "Timestamp, when Booking Revision was received": ISO 8601 in UTC without a zone,
        # microseconds always shown ("2020-11-12T11:39:50.111087").
        "inserted_at": at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f"),
    }


def _cancellation_fee(fee: Decimal, exponent: int) -> CancellationFee:
    """The service a cancelled revision carries for what the guest still owes, field for
    field as the docs' Booking.com cancellation."""
    return {"name": "Cancellation Fee", "nights": 0, "persons": 0, "price_mode": "Per stay",
            "price_per_unit": _money(fee, exponent), "service_rph": None, "total_price": _money(fee, exponent),
            "type": "Cancellation Fee"}


def _occupancy(stay: Stay) -> Occupancy:
    occupancy: Occupancy = {"adults": stay.adults, "children": stay.children, "infants": 0}
    if stay.children:
        ages = list(stay.children_ages[:stay.children])
        occupancy["ages"] = ages + [DEFAULT_CHILD_AGE] * (stay.children - len(ages))
    return occupancy


def _guarantee(stay: Stay) -> Guarantee:
    """A masked test card (PCI: Channex never sends a whole number over the non-secure API)."""
    holder = " ".join(str(p) for p in (stay.guest.get("name"), stay.guest.get("surname")) if p) or "CARDHOLDER"
    expires = stay.arrival + timedelta(days=365)
    if stay.virtual_card:  # the OTA's own card, as in the docs' Expedia example
        return {"card_number": "511111******1111", "card_type": "MC", "cardholder_name": f"{stay.ota_name} VirtualCard",
                "cvv": "***", "expiration_date": f"{expires.month:02d}/{expires.year}", "is_virtual": True}
    return {"card_number": "411111******1111", "card_type": "VI", "cardholder_name": holder.upper(), "cvv": "***",
            "expiration_date": f"{expires.month:02d}/{expires.year}", "is_virtual": False}


def _room(stay: Stay, room_id: str, nights: list[date], exponent: int) -> Room:
    booking_com = stay.ota_name == "BookingCom"
    days = (_days(stay.amount, nights, exponent) if stay.nightly is None else
            {night.isoformat(): _money(price, exponent) for night, price in zip(nights, stay.nightly, strict=True)})
    vat = (stay.amount - stay.amount / (1 + VAT_RATE)).quantize(Decimal(1).scaleb(-exponent))
    room: Room = {
        "amount": _money(stay.amount, exponent),
        "booking_room_id": room_id,
        "checkin_date": stay.arrival.isoformat(),
        "checkout_date": stay.departure.isoformat(),
        "days": days,
        "guests": ([{"name": stay.guest.get("name"), "surname": stay.guest.get("surname")}]
                   if booking_com else None),
        "meta": ({"days_breakdown": [{"amount": price, "date": day, "rate_plan": stay.rate_plan_id}
                                     for day, price in days.items()]} if booking_com else None),
        "occupancy": _occupancy(stay),
        "rate_plan_id": stay.rate_plan_id,
        "room_type_id": stay.room_type_id,
        "services": [],
        "taxes": [t.copy() for t in stay.taxes] if stay.taxes is not None else [
            {"is_inclusive": True, "name": "VAT (5%)", "nights": len(nights), "persons": stay.adults + stay.children,
             "price_mode": "Per booking", "price_per_unit": _money(vat, exponent),
             "total_price": _money(vat, exponent), "type": "Value Added Tax (VAT)"}] if booking_com else [],
    }
    if booking_com:
        room["ota_unique_id"] = "49"  # "right now only Booking.com supported"; the docs' value
    return room


def _days(amount: Decimal, nights: list[date], exponent: int) -> dict[str, str]:
    """The price per night, summing to the room's amount exactly (the last night takes the
    remainder of the rounding)."""
    if not nights:
        return {}
    unit = Decimal(1).scaleb(-exponent)
    nightly = (amount / len(nights)).quantize(unit, rounding=ROUND_DOWN)
    prices = [nightly] * (len(nights) - 1) + [amount - nightly * (len(nights) - 1)]
    return {night.isoformat(): _money(price, exponent) for night, price in zip(nights, prices, strict=True)}


def _money(amount: Decimal, exponent: int) -> str:
    return f"{amount:.{exponent}f}"
