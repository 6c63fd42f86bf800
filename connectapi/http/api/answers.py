"""The Connect API's answers, typed (issue 43, item 4): a route builds its answer as one of
these, and the OpenAPI document's schema for it is drawn from the type (`answer_schema`,
used by http/public/openapi.py), so the two cannot differ.

TypedDicts, not models: an answer is made of values the record already typed, so it is
checked by mypy, and costs nothing per request (a model validating each night of a year's
read would). Their schemas are drawn inline and in the document's own style: no titles, a
member that may be null as `"type": [t, "null"]`, nested types written out where used.
Comments, not docstrings, describe them here: a docstring would become the schema's
description and change the document the clients are generated from.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import Field, TypeAdapter, WithJsonSchema
from typing_extensions import NotRequired, TypedDict

from ...domain.ari_write import RejectedCells
from ...domain.sell_modes import ApiSellMode
from ...domain.json_value import JsonObject, JsonValue, json_object
from ...domain.sync_state import PushState

# A date as the contract writes it (YYYY-MM-DD): the routes put `date.isoformat()`.
IsoDate = Annotated[str, WithJsonSchema({"type": "string", "format": "date"})]
# A stay's length in nights, or null where the record holds no opinion.
Stay = Annotated[int | None, Field(ge=0)]

# A write's refusals, and in a batch also the channel manager's (`by`, the room type or
# rate plan, `field`, ...): one schema for both.
REJECTED_SCHEMA: JsonObject = {"type": "object", "required": ["cells", "error"], "properties": {
    "cells": {"type": "integer"}, "error": {"type": "string"}, "by": {"type": "string"},
    "roomTypeId": {"type": "integer"}, "ratePlanId": {"type": "integer"},
    "field": {"type": "string"}, "messages": {"type": "array", "items": {"type": "string"}},
    "from": {"type": "string", "format": "date"}, "to": {"type": "string", "format": "date"}}}


class Products(TypedDict, total=False):
    channelManager: bool
    pms: bool


# GET /property: the property a key works on, as the key sees it.
class PropertyAnswer(TypedDict):
    id: int
    mode: Annotated[Literal["live", "test"], Field(
        description="the key's mode: `test` keys see the property's test record, never its live one, "
                    "and reach no real channel")]
    name: str
    timezone: str
    currency: str
    scopes: list[str]
    products: Products
    bookingsPerMinute: NotRequired[int]


class CatalogRoomType(TypedDict):
    id: int
    name: str
    maxAdults: NotRequired[int]
    maxOccupancy: NotRequired[int | None]
    rooms: NotRequired[int]


class CatalogRatePlan(TypedDict):
    id: int
    roomTypeId: int
    name: NotRequired[str]
    mealPlan: NotRequired[str]
    sellMode: Annotated[ApiSellMode, Field(
        description="`perRoom`: one price a night, whatever the guests; `perPerson`: a price per adult count "
                    "(each rates entry names its `occupancy`)")]
    occupancies: Annotated[list[int], Field(
        description="the adult counts the plan is priced for: 1 to its room type's maxAdults when sold per "
                    "person; its room type's maxAdults alone when sold per room")]


# GET /catalog: the contract's shapes, written here (the admin API's views may grow).
class CatalogAnswer(TypedDict):
    roomTypes: list[CatalogRoomType]
    ratePlans: list[CatalogRatePlan]


class AvailabilityNight(TypedDict):
    date: IsoDate
    available: int


class RoomTypeAvailability(TypedDict):
    roomTypeId: int
    nights: list[AvailabilityNight]


# `from` is a keyword: the answers that carry it are written the functional way.
AvailabilityRead = TypedDict("AvailabilityRead", {
    "from": IsoDate, "to": IsoDate, "roomTypes": list[RoomTypeAvailability]})


class OccupancyRate(TypedDict):
    occupancy: int
    rateMinor: Annotated[int | None, Field(description="null: the record holds no price for this occupancy")]


class RateNight(TypedDict):
    date: IsoDate
    rateMinor: Annotated[int | None, Field(
        description="the night's price; of a per-person plan, its largest occupancy's (null when that one has "
                    "none), so a reader that knows nothing of occupancy still sees a room's price")]
    byOccupancy: NotRequired[Annotated[list[OccupancyRate], Field(
        description="a per-person plan's price for each of its occupancies, smallest first; absent for a "
                    "per-room plan")]]


class PlanRates(TypedDict):
    ratePlanId: int
    nights: list[RateNight]


RatesRead = TypedDict("RatesRead", {"from": IsoDate, "to": IsoDate, "currency": str, "ratePlans": list[PlanRates]})


# A night's restrictions: null where the record holds no opinion.
class RestrictionNight(TypedDict):
    date: IsoDate
    stopSell: bool | None
    closedToArrival: bool | None
    closedToDeparture: bool | None
    minStayArrival: Stay
    minStayThrough: Stay
    maxStay: Stay


class PlanRestrictions(TypedDict):
    ratePlanId: int
    nights: list[RestrictionNight]


RestrictionsRead = TypedDict("RestrictionsRead", {
    "from": IsoDate, "to": IsoDate, "ratePlans": list[PlanRestrictions]})


# A write taken into the record (202): its batch, its counts, where to poll.
class WriteResult(TypedDict):
    batchId: str
    resource: str
    requestedCells: int
    acceptedCells: int
    noopCells: int
    rejected: Annotated[list[RejectedCells], WithJsonSchema({"type": "array", "items": REJECTED_SCHEMA})]
    pushedBy: NotRequired[str]  # always sent; optional in the schema, as the contract first had it
    poll: str


class InventorySync(TypedDict):
    state: Annotated[PushState, WithJsonSchema({"enum": ["IN_SYNC", "PENDING", "REFUSED", "BACKING_OFF", "FAILING"]})]
    dirtyCells: int
    # Of the dirty cells, those the channel manager refused (offered again with backoff);
    # the state is REFUSED while any wait.
    refusedCells: NotRequired[int]


class CellsSync(TypedDict):
    dirtyCells: int
    refusedCells: int


class ProjectorSync(TypedDict):
    lastPushAt: datetime | None
    lastOutcome: str | None
    lastError: str | None
    nextAttemptAt: datetime | None


class PendingBatch(TypedDict):
    batchId: str
    pendingCells: int


# GET /sync: whether what was written has reached the channels.
class SyncAnswer(TypedDict):
    inventory: InventorySync
    refusedCells: NotRequired[int]
    rates: CellsSync
    restrictions: CellsSync
    projector: ProjectorSync
    newestPendingBatch: NotRequired[PendingBatch | None]


class ChannelTask(TypedDict, total=False):
    taskId: str
    kind: Annotated[Literal["availability", "restrictions"], WithJsonSchema({"enum": ["availability", "restrictions"]})]
    sentAt: datetime


# A batch's refusal by the channel manager: of which cells (the room type's or rate plan's,
# and the nights), the field and what it said.
ChannelRefusal = TypedDict("ChannelRefusal", {
    "cells": int, "error": str, "by": Literal["channelManager"],
    "roomTypeId": NotRequired[int], "ratePlanId": NotRequired[int],  # one of them
    "field": str, "messages": list[str], "from": IsoDate, "to": IsoDate})


# GET /batches/{id}: what became of one write. Its refusals are the write's own and the
# channel manager's (REJECTED_SCHEMA).
class BatchAnswer(TypedDict):
    batchId: str
    resource: str
    createdAt: NotRequired[datetime]
    requestedCells: NotRequired[int]
    acceptedCells: NotRequired[int]
    noopCells: NotRequired[int]
    rejected: NotRequired[Annotated[list[RejectedCells | ChannelRefusal],
                                    WithJsonSchema({"type": "array", "items": REJECTED_SCHEMA})]]
    status: Annotated[Literal["pending", "completed"], WithJsonSchema({"enum": ["pending", "completed"]})]
    pendingCells: int
    lastError: NotRequired[str | None]
    channelTasks: NotRequired[list[ChannelTask]]


# Money as the contract writes it: a decimal string in major units.
Money = Annotated[str, WithJsonSchema({"type": "string", "pattern": r"^[0-9]+\.[0-9]{2,3}$|^[0-9]+$"})]
# An instant as every timestamp of the API: ISO 8601 with its offset.
Timestamp = Annotated[str, WithJsonSchema({"type": "string", "format": "date-time"})]


class BookingGuest(TypedDict):
    name: str
    phone: str | None
    email: str | None


class BookingRoom(TypedDict):
    bookingRoomId: int
    roomTypeId: int
    ratePlanId: int | None
    mealPlan: str | None
    adults: int
    children: int
    nightlyRate: Money
    status: str


class BookingInventory(TypedDict):
    eventRecorded: bool
    channelManager: bool
    pushedBy: str


# A booking as the contract answers it (POST, GET, PATCH /bookings, a cancellation).
class Booking(TypedDict):
    bookingId: int
    reference: str
    externalReference: str | None
    status: Annotated[str, WithJsonSchema({"enum": ["UPCOMING", "CHECKED_IN", "CANCELLED"]})]
    checkIn: IsoDate
    checkOut: IsoDate
    nights: NotRequired[int]
    currency: str
    totalAmount: Money
    totalPaid: NotRequired[Money]
    balanceDue: NotRequired[Money]
    guest: BookingGuest
    rooms: list[BookingRoom]
    inventory: NotRequired[BookingInventory]
    replay: bool
    createdAt: NotRequired[Timestamp]
    cancelledAt: NotRequired[Timestamp | None]
    revision: NotRequired[Annotated[int, Field(ge=1, description="1 at creation, one more per change (a PATCH, the "
                                                                  "cancellation, the check-in); the ETag is this "
                                                                  "number, quoted")]]
    modifiedAt: NotRequired[Annotated[Timestamp, Field(description="the last change; the creation until one")]]


# GET /bookings: a page of them, newest first.
class BookingList(TypedDict):
    bookings: list[Booking]
    count: int
    limit: int
    since: Timestamp
    nextBefore: Annotated[int | None, Field(
        description="on a full page, the last booking's id: send it as `before` for the next page")]


# The test helpers' answers (test keys only).
class TestOtaRevision(TypedDict):
    reference: Annotated[str | None, Field(description=(
        "the booking's reference, as its webhooks' `data.booking.reference` has it, once the service has "
        "applied the revision (it waits up to 10 s for that; null if it has not by then); modify and cancel "
        "take it, or the reservation code"))]
    reservationCode: Annotated[str, Field(description="the channel's reservation code, as the webhooks' "
                                                      "`data.booking.channel.reservationCode` has it")]
    revisionId: str
    status: Literal["new", "modified", "cancelled"]


class TestEvent(TypedDict):
    id: Annotated[str, Field(description="the event's id: its webhook-id")]
    type: str
    body: Annotated[str, Field(description="the event exactly as its webhooks carry it (JSON text): what "
                                           "a receiver verifies and parses")]


class TestEvents(TypedDict):
    events: list[TestEvent]
    after: Annotated[str, Field(description="what to give as `after` next, to get the events after these")]


class TestCheckIn(TypedDict):
    bookingId: int
    status: Annotated[Literal["CHECKED_IN"], WithJsonSchema({"const": "CHECKED_IN"})]


class TestFaults(TypedDict):
    mode: str
    count: int


class TestReset(TypedDict):
    propertyId: int
    mode: Annotated[Literal["test"], WithJsonSchema({"const": "test"})]
    reset: Annotated[Literal[True], WithJsonSchema({"const": True})]


# Types that are components of the document of their own: where used, a reference to them.
COMPONENTS = ("Booking", "BookingRoom")


def answer_schema(answer: Any) -> JsonObject:
    """`answer`'s schema in the document's style (see the module's doc)."""
    # Pydantic types a schema it draws with values of Any; it is JSON.
    drawn: JsonObject = TypeAdapter(answer).json_schema(mode="serialization")
    return json_object(_styled(drawn, json_object(drawn.get("$defs", {}))))


def _styled(schema: JsonValue, defs: JsonObject) -> JsonValue:
    if isinstance(schema, list):
        return [_styled(s, defs) for s in schema]
    if not isinstance(schema, dict):
        return schema
    ref = schema.get("$ref")
    if isinstance(ref, str):
        name = ref.rsplit("/", 1)[-1]
        return {"$ref": f"#/components/schemas/{name}"} if name in COMPONENTS else _styled(defs[name], defs)
    options = schema.get("anyOf")
    if isinstance(options, list) and len(options) == 2 and {"type": "null"} in options:
        (kept,) = [o for o in options if o != {"type": "null"}]
        nullable = json_object(_styled(kept, defs))
        merged: JsonObject = {**{k: v for k, v in schema.items() if k != "anyOf"}, **nullable}
        merged["type"] = [nullable["type"], "null"]
        return _styled(merged, defs)
    styled: JsonObject = {}
    for key, value in schema.items():
        if key in ("title", "default", "$defs"):
            continue
        # A type's members by name: a member may be called what a keyword of the schema is.
        styled[key] = {name: _styled(s, defs) for name, s in json_object(value).items()} if key == "properties" \
            else _styled(value, defs)
    return styled
