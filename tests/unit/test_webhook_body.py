"""The webhook body's types (domain.webhook_body) hold to the contract's JSON Schemas: the
same members, the same ones required, all the way down. The schemas are what integrators
are given; the types are what mypy holds the code that builds an event to."""

from __future__ import annotations

import types
import typing
from typing import Any

from typing_extensions import is_typeddict

from connectapi.domain import webhook_contract
from connectapi.domain.json_value import json_at, json_object
from connectapi.domain.webhook_body import ChangedFields, WebhookBooking, WebhookEvent


def _unwrapped(hint: Any) -> Any:
    """`X | None` as X (a schema writes null in `type`, not in its members)."""
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        kept = [arg for arg in typing.get_args(hint) if arg is not type(None)]
        return kept[0] if len(kept) == 1 else hint
    return hint


def _compared(typed: Any, schema: dict[str, Any], where: str) -> list[str]:
    """Where `typed` (a TypedDict) and `schema` (an object's) differ."""
    found: list[str] = []
    hints = typing.get_type_hints(typed)
    if set(hints) != set(schema["properties"]):
        found.append(f"{where}: members {sorted(hints)} != {sorted(schema['properties'])}")
    if set(typed.__required_keys__) != set(schema.get("required", ())):
        found.append(f"{where}: required {sorted(typed.__required_keys__)} != {sorted(schema.get('required', ()))}")
    for name, hint in hints.items():
        inner, member = _unwrapped(hint), schema["properties"].get(name, {})
        if typing.get_origin(inner) is list and "items" in member:
            inner, member = typing.get_args(inner)[0], member["items"]
        if is_typeddict(inner) and "properties" in member:
            found += _compared(inner, member, f"{where}.{name}")
    return found


def test_the_booking_type_is_the_booking_schema() -> None:
    assert _compared(WebhookBooking, webhook_contract.BOOKING_SCHEMA, "booking") == []


def test_the_envelope_type_is_the_envelope_schema() -> None:
    assert _compared(WebhookEvent, webhook_contract.ENVELOPE_SCHEMA, "event") == []


def test_the_changed_fields_are_the_compared_members_of_the_booking() -> None:
    changed = json_at(webhook_contract.ENVELOPE_SCHEMA, "$defs", "changedFields", "properties")
    assert set(typing.get_type_hints(ChangedFields)) == set(json_object(changed))
    assert ChangedFields.__required_keys__ == frozenset()
    booking = typing.get_type_hints(WebhookBooking)
    assert all(hint == _unwrapped(booking[name]) or hint == booking[name]
               for name, hint in typing.get_type_hints(ChangedFields).items())
