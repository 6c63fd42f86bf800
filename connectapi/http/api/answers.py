"""The Connect API's answers as models (issue 43, item 4): a route builds its answer as one
of these, and the OpenAPI document's schema for it is drawn from the model
(`answer_schema`, used by http/public/openapi.py), so the two cannot differ.

Schemas are drawn inline and in the document's own style: no titles or defaults, a member
that may be null as `"type": [t, "null"]`, nested models written out where they are used.
"""

from __future__ import annotations

from datetime import date
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema

# A write's refusals, and in a batch also the channel manager's (`by`, the room type or
# rate plan, `field`, ...): one schema for both.
REJECTED_SCHEMA: dict[str, Any] = {"type": "object", "required": ["cells", "error"], "properties": {
    "cells": {"type": "integer"}, "error": {"type": "string"}, "by": {"type": "string"},
    "roomTypeId": {"type": "integer"}, "ratePlanId": {"type": "integer"},
    "field": {"type": "string"}, "messages": {"type": "array", "items": {"type": "string"}},
    "from": {"type": "string", "format": "date"}, "to": {"type": "string", "format": "date"}}}


def _no_docstring(schema: dict[str, Any], model: type[BaseModel]) -> None:
    # A model's docstring is for its reader here; the document describes what it always did.
    schema.pop("description", None)


class Answer(BaseModel):
    """An answer's model: its members under the contract's names (`from` is a keyword, and
    `date` a type: `from_` and `date_` here, said as `from` and `date`)."""

    model_config = ConfigDict(frozen=True, json_schema_extra=_no_docstring)

    def body(self) -> dict[str, Any]:
        """The answer as the envelope's `data`."""
        return self.model_dump(mode="json", by_alias=True)


class AvailabilityNight(Answer):
    date_: date = Field(serialization_alias="date")
    available: int


class RoomTypeAvailability(Answer):
    roomTypeId: int
    nights: list[AvailabilityNight]


class AvailabilityRead(Answer):
    from_: date = Field(serialization_alias="from")
    to: date
    roomTypes: list[RoomTypeAvailability]


class RateNight(Answer):
    date_: date = Field(serialization_alias="date")
    rateMinor: int


class PlanRates(Answer):
    ratePlanId: int
    nights: list[RateNight]


class RatesRead(Answer):
    from_: date = Field(serialization_alias="from")
    to: date
    currency: str
    ratePlans: list[PlanRates]


Stay = Annotated[int | None, Field(ge=0)]


class RestrictionNight(Answer):
    """A night's restrictions: null where the record holds no opinion."""

    date_: date = Field(serialization_alias="date")
    stopSell: bool | None
    closedToArrival: bool | None
    closedToDeparture: bool | None
    minStayArrival: Stay
    minStayThrough: Stay
    maxStay: Stay


class PlanRestrictions(Answer):
    ratePlanId: int
    nights: list[RestrictionNight]


class RestrictionsRead(Answer):
    from_: date = Field(serialization_alias="from")
    to: date
    ratePlans: list[PlanRestrictions]


class RejectedEntry(Answer):
    """An entry of a write refused whole: its cells and why."""

    cells: int
    error: str


class WriteResult(Answer):
    """A write taken into the record (202): its batch, its counts, where to poll."""

    batchId: str
    resource: str
    requestedCells: int
    acceptedCells: int
    noopCells: int
    rejected: Annotated[list[RejectedEntry], WithJsonSchema({"type": "array", "items": REJECTED_SCHEMA})]
    pushedBy: str = ""  # always sent; optional in the schema, as the contract first had it
    poll: str


def answer_schema(model: type[BaseModel]) -> dict[str, Any]:
    """`model`'s schema in the document's style (see the module's doc)."""
    drawn = model.model_json_schema(mode="serialization", by_alias=True)
    styled: dict[str, Any] = _styled(drawn, drawn.get("$defs", {}))
    return styled


def _styled(schema: Any, defs: dict[str, Any]) -> Any:
    if isinstance(schema, list):
        return [_styled(s, defs) for s in schema]
    if not isinstance(schema, dict):
        return schema
    if "$ref" in schema:
        return _styled(defs[schema["$ref"].rsplit("/", 1)[-1]], defs)
    options = schema.get("anyOf")
    if options is not None and len(options) == 2 and {"type": "null"} in options:
        (kept,) = [o for o in options if o != {"type": "null"}]
        nullable = _styled(kept, defs)
        merged = {**{k: v for k, v in schema.items() if k != "anyOf"}, **nullable}
        merged["type"] = [nullable["type"], "null"]
        return _styled(merged, defs)
    styled: dict[str, Any] = {}
    for key, value in schema.items():
        if key in ("title", "default", "$defs"):
            continue
        # A model's members by name: a member may be called what a keyword of the schema is.
        styled[key] = {name: _styled(s, defs) for name, s in value.items()} if key == "properties" \
            else _styled(value, defs)
    return styled
