"""A JSON value, as one precise recursive type, for the documents the service builds as JSON:
the OpenAPI document, the JSON Schemas in it and in the webhook contract, the Postman
collection.

They are arbitrary nested JSON, so a TypedDict per node is not sensible; typed as dicts of
`Any` they let anything in, `JsonValue` does not: mypy refuses to put a value that is not
JSON (a date, a Decimal, a model object, a tuple) anywhere in such a document, where `Any`
let it through to fail, or be written otherwise, only when the document is dumped.

Reading a nested value back takes narrowing: `json_object` and `json_list` say, and check,
that the value is the object or array it should be; `json_at` walks a path of members and
indices.
"""

from __future__ import annotations

from typing import TypeAlias

JsonValue: TypeAlias = None | bool | int | float | str | list["JsonValue"] | dict[str, "JsonValue"]
JsonObject: TypeAlias = dict[str, JsonValue]


def json_object(value: JsonValue) -> JsonObject:
    """`value`, known to be an object (a member of a document that is one by construction)."""
    if not isinstance(value, dict):
        raise TypeError(f"a JSON object expected, not {type(value).__name__}")
    return value


def json_list(value: JsonValue) -> list[JsonValue]:
    """`value`, known to be an array."""
    if not isinstance(value, list):
        raise TypeError(f"a JSON array expected, not {type(value).__name__}")
    return value


def json_at(value: JsonValue, *path: str | int) -> JsonValue:
    """The value at `path` in `value`: a name steps into an object's member, an index into
    an array's item (a KeyError, IndexError or TypeError where there is none)."""
    for step in path:
        value = json_list(value)[step] if isinstance(step, int) else json_object(value)[step]
    return value
