"""Answers as models, their schemas drawn in the OpenAPI document's style (issue 43, item 4)."""

from __future__ import annotations

from datetime import date
from typing import Annotated

from pydantic import Field

from connectapi.http.api.answers import Answer, RestrictionNight, WriteResult, answer_schema
from connectapi.http.public.openapi import DRAWN_ANSWERS, openapi_document


class Inner(Answer):
    """Not in the document."""

    count: int


class Outer(Answer):
    from_: date = Field(serialization_alias="from")
    maybe: Annotated[int | None, Field(ge=0)]
    title: str  # a member named as a keyword of JSON Schema
    inner: list[Inner]
    said: str = ""


def test_a_schema_is_drawn_inline_without_titles_with_nullables_as_type_lists() -> None:
    assert answer_schema(Outer) == {
        "type": "object", "required": ["from", "maybe", "title", "inner"],
        "properties": {"from": {"type": "string", "format": "date"},
                       "maybe": {"type": ["integer", "null"], "minimum": 0},
                       "title": {"type": "string"},
                       "inner": {"type": "array", "items": {"type": "object", "required": ["count"],
                                                            "properties": {"count": {"type": "integer"}}}},
                       "said": {"type": "string"}}}


def test_an_answer_says_its_members_by_the_contracts_names() -> None:
    night = RestrictionNight(date_=date(2026, 12, 1), stopSell=True, closedToArrival=None, closedToDeparture=None,
                             minStayArrival=2, minStayThrough=None, maxStay=None)
    assert night.body() == {"date": "2026-12-01", "stopSell": True, "closedToArrival": None,
                            "closedToDeparture": None, "minStayArrival": 2, "minStayThrough": None, "maxStay": None}
    assert set(WriteResult.model_fields) - {"pushedBy"} == set(answer_schema(WriteResult)["required"])


def test_the_document_holds_each_drawn_answer_as_drawn() -> None:
    schemas = openapi_document()["components"]["schemas"]
    for model in DRAWN_ANSWERS:
        assert schemas[model.__name__] == answer_schema(model)
