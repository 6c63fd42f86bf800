"""A booking revision as Channex documents it (Bookings Collection, "Booking.com examples"),
field for field: the document the sandbox's feed hands out, and its parts.

The keys are the documents'; their order is the order bookings.py builds them in.
"""

from __future__ import annotations

from typing import Final, Literal

from typing_extensions import NotRequired, TypedDict

RevisionStatus = Literal["new", "modified", "cancelled"]


class Company(TypedDict):
    title: str | None
    number: str | None  # a VAT number, say
    number_type: str | None


class Guest(TypedDict, total=False):
    """The guest as the OTA gives them: what the revision's `customer` repeats, a field not
    given there as null."""

    name: str | None
    surname: str | None
    mail: str | None
    phone: str | None
    country: str | None
    language: str | None
    address: str | None
    city: str | None
    zip: str | None
    company: Company | None


GUEST_FIELDS: Final = ("name", "surname", "mail", "phone", "country", "language", "address", "city", "zip",
                       "company")


class CustomerMeta(TypedDict):
    is_genius: bool


class Customer(TypedDict):
    name: str | None
    surname: str | None
    mail: str | None
    phone: str | None
    country: str | None
    city: str | None
    address: str | None
    zip: str | None
    language: str | None
    company: Company | None
    meta: CustomerMeta


class Occupancy(TypedDict):
    adults: int
    children: int
    infants: int
    ages: NotRequired[list[int]]  # one a child, when there are children


class Guarantee(TypedDict):
    """A card, masked (PCI: never a whole number over the non-secure API)."""

    card_number: str
    card_type: str
    cardholder_name: str
    cvv: str
    expiration_date: str  # MM/YYYY
    is_virtual: bool


class Charge(TypedDict):
    """What a service and a tax share; prices in major units ("20.00")."""

    name: str
    type: str
    total_price: str
    price_per_unit: str
    price_mode: str  # "Per stay", "Per booking", "Per person", ...
    persons: int | None
    nights: int | None


class Service(Charge):
    """An extra bought on top of the room."""


class CancellationFee(Charge):
    """The service a cancelled revision carries for what the guest still owes."""

    service_rph: None


class Tax(Charge):
    is_inclusive: bool  # whether the room's price includes it


class DayPrice(TypedDict):
    amount: str
    date: str  # YYYY-MM-DD
    rate_plan: str


class RoomMeta(TypedDict):
    days_breakdown: list[DayPrice]


class RoomGuest(TypedDict):
    name: str | None
    surname: str | None


class Room(TypedDict):
    amount: str
    booking_room_id: str
    checkin_date: str
    checkout_date: str
    days: dict[str, str]  # night (YYYY-MM-DD) -> its price
    guests: list[RoomGuest] | None  # Booking.com's; null for the others
    meta: RoomMeta | None  # Booking.com's; null for the others
    occupancy: Occupancy
    rate_plan_id: str
    room_type_id: str
    services: list[Service]
    taxes: list[Tax]
    ota_unique_id: NotRequired[str]  # Booking.com's


class Revision(TypedDict):
    """A booking revision's attributes (plus `booking_id` and `system_id`, which the feed's
    revisions carry)."""

    id: str
    booking_id: str
    revision_id: str
    property_id: str
    unique_id: str
    system_id: str
    ota_reservation_code: str
    ota_name: str
    status: RevisionStatus
    arrival_date: str
    departure_date: str
    arrival_hour: str | None
    amount: str
    ota_commission: str | None
    currency: str
    notes: str | None
    payment_collect: str | None
    payment_type: str | None
    occupancy: Occupancy
    customer: Customer
    guarantee: Guarantee | None
    services: list[Service | CancellationFee]  # the fee alone once cancelled
    rooms: list[Room]
    inserted_at: str
