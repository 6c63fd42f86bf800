"""The body of a webhook event we send, typed: the envelope domain.webhook_events writes, the
booking domain.ota_bookings tells in it, and the changed fields of a `modified` event.

They follow the contract's JSON Schemas (domain.webhook_contract: BOOKING_SCHEMA,
ENVELOPE_SCHEMA), member for member and in the same order (json.dumps keeps a dict's
order, so the body sent is the one these are built as). A member the schema does not
require is NotRequired here: those added since the first release of the booking (issue 42)
are in every event we build now, but not in a booking the record kept as an older event
told it, which `changes_between` still compares and `previous` still tells.
"""

# No `from __future__ import annotations`: evaluated, the annotations give each type its
# required and optional keys at run time too, which tests/unit/test_webhook_body.py holds
# to the schemas.
from typing_extensions import NotRequired, TypedDict


class WebhookStay(TypedDict):
    checkIn: str  # YYYY-MM-DD
    checkOut: str
    nights: int


class WebhookNight(TypedDict):
    date: str  # YYYY-MM-DD
    amount: str  # major units, two decimals


class WebhookTax(TypedDict):
    name: str
    type: str | None
    inclusive: bool | None  # whether the room's price includes it
    amount: str


class WebhookService(TypedDict):
    name: str
    type: str | None
    amount: str
    priceMode: str | None
    persons: int | None
    nights: int | None


class WebhookRoom(TypedDict):
    roomTypeId: int
    ratePlanId: int | None
    adults: int
    children: int
    amount: str
    nights: NotRequired[list[WebhookNight]]
    taxes: NotRequired[list[WebhookTax]]
    services: NotRequired[list[WebhookService]]
    childrenAges: NotRequired[list[int]]
    infants: NotRequired[int]


class WebhookAddress(TypedDict):
    line: str | None
    city: str | None
    zip: str | None
    country: str | None


class WebhookCompany(TypedDict):
    name: str | None
    vatNumber: str | None


class WebhookGuest(TypedDict):
    name: str
    email: str | None
    phone: str | None
    country: str | None
    language: NotRequired[str | None]
    address: NotRequired[WebhookAddress | None]
    company: NotRequired[WebhookCompany | None]


class WebhookGuarantee(TypedDict):
    """That a card guaranteed the booking: never its number, holder, expiry or CVV."""

    virtualCard: bool
    cardType: str | None


class WebhookAmounts(TypedDict):
    total: str
    currency: str
    commission: NotRequired[str | None]
    paymentCollect: NotRequired[str | None]  # "ota", "property", or not said
    paymentType: NotRequired[str | None]  # "credit_card", "bank_transfer", or not said
    guarantee: NotRequired[WebhookGuarantee | None]


class WebhookChannel(TypedDict):
    name: str
    reservationCode: str


class WebhookBooking(TypedDict):
    """`data.booking`: an OTA booking in the property's own ids, never a channel manager's."""

    reference: str
    status: str  # UPCOMING, CHECKED_IN or CANCELLED
    stay: WebhookStay
    rooms: list[WebhookRoom]
    guest: WebhookGuest
    amounts: WebhookAmounts
    channel: WebhookChannel
    taxes: NotRequired[list[WebhookTax]]
    services: NotRequired[list[WebhookService]]
    arrivalHour: NotRequired[str | None]
    notes: NotRequired[str | None]


class ChangedFields(TypedDict, total=False):
    """`changes` and `previous` of a `modified` event: the booking's fields that changed,
    each whole (domain.ota_bookings.COMPARED names them)."""

    status: str
    stay: WebhookStay
    rooms: list[WebhookRoom]
    guest: WebhookGuest
    amounts: WebhookAmounts
    channel: WebhookChannel
    taxes: list[WebhookTax]
    services: list[WebhookService]
    arrivalHour: str | None
    notes: str | None


class BookingData(TypedDict):
    """`data` of a channel.booking event."""

    booking: WebhookBooking


class PingData(TypedDict):
    """`data` of connectapi.ping: why it was sent."""

    reason: str


EventData = BookingData | PingData


class WebhookProperty(TypedDict):
    id: int
    name: str
    currency: str
    timezone: str


class WebhookEvent(TypedDict):
    """The envelope of every event, as it is signed and sent."""

    id: str
    type: str
    apiVersion: str
    occurredAt: str  # ISO 8601 with its offset
    mode: str  # live, or test
    property: WebhookProperty
    data: EventData
    # null but on `modified`: the changed fields' new values, and their old ones
    changes: ChangedFields | None
    previous: ChangedFields | None
