"""Answers typed, their schemas drawn in the OpenAPI document's style (issue 43, item 4)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field
from typing_extensions import NotRequired, TypedDict

from connectapi.domain.json_value import json_at, json_list, json_object
from connectapi.http.api.answers import Booking, BookingList, IsoDate, WriteResult, answer_schema
from connectapi.http.public.openapi import DRAWN_ANSWERS, openapi_document


class Inner(TypedDict):
    count: int


Outer = TypedDict("Outer", {
    "from": IsoDate,
    "maybe": Annotated[int | None, Field(ge=0)],
    "title": str,  # a member named as a keyword of JSON Schema
    "inner": list[Inner],
    "said": NotRequired[str],
})


def test_a_schema_is_drawn_inline_without_titles_with_nullables_as_type_lists() -> None:
    assert answer_schema(Outer) == {
        "type": "object", "required": ["from", "maybe", "title", "inner"],
        "properties": {"from": {"type": "string", "format": "date"},
                       "maybe": {"type": ["integer", "null"], "minimum": 0},
                       "title": {"type": "string"},
                       "inner": {"type": "array", "items": {"type": "object", "required": ["count"],
                                                            "properties": {"count": {"type": "integer"}}}},
                       "said": {"type": "string"}}}


def test_the_write_result_is_all_required_but_pushed_by() -> None:
    drawn = answer_schema(WriteResult)
    assert set(json_object(drawn["properties"])) - set(map(str, json_list(drawn["required"]))) == {"pushedBy"}


def test_the_document_holds_each_drawn_answer_as_drawn() -> None:
    schemas = json_object(json_at(openapi_document(), "components", "schemas"))
    assert {"Property", "Catalog", "AvailabilityRead", "RatesRead", "RestrictionsRead", "WriteResult", "Sync", "Batch",
            "Booking", "BookingRoom", "BookingList"} <= set(
        DRAWN_ANSWERS)
    for name, answer in DRAWN_ANSWERS.items():
        assert schemas[name] == answer_schema(answer)


def test_a_type_that_is_a_component_of_its_own_is_referred_to_where_used() -> None:
    assert json_at(answer_schema(BookingList), "properties", "bookings", "items") == {
        "$ref": "#/components/schemas/Booking"}
    assert json_at(answer_schema(Booking), "properties", "rooms", "items") == {
        "$ref": "#/components/schemas/BookingRoom"}
    assert "$ref" not in str(json_at(answer_schema(Booking), "properties", "guest"))  # no component: inline
