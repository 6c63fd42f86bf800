"""Which of a call's cells the channel manager refused, from the values it echoed back.

Channex echoes each refused value in `meta.warnings` (its ids, its dates, its fields)
beside a `warning` object of field -> messages; the other values of the call are
applied. A refusal is tied to the cells of the call that its value covers: the entity it
names and the nights of its date, or range and weekdays. One that cannot be tied to cells
(no echoed value, ids or dates we cannot read, nights none of the call's) refuses every
cell of the call: a value we cannot place must not be taken for applied.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from datetime import date
from typing import Any

from .dates import WEEKDAY_CODES

Key = tuple[int, date]  # our entity id, night
REFUSAL_MAX = 500  # characters kept of what was said of one cell


def kept(fields: Mapping[str, list[str]]) -> str:
    """What the channel manager said of a value as the record keeps it: JSON of field ->
    messages, within REFUSAL_MAX characters (messages cut, then fields left out)."""
    shown: dict[str, list[str]] = {}
    for name, messages in fields.items():
        shown[name[:60]] = [m[:200] for m in messages[:3]]
        if len(json.dumps(shown)) > REFUSAL_MAX:
            shown.pop(name[:60])
            break
    return json.dumps(shown or {"value": ["refused"]}, ensure_ascii=False)


def fields_of(stored: str) -> dict[str, list[str]]:
    """The field -> messages of a kept refusal (an unreadable one as a message of its own)."""
    try:
        found = json.loads(stored)
    except ValueError:
        return {"value": [stored]}
    if not isinstance(found, dict):
        return {"value": [stored]}
    return {str(k): [str(m) for m in v] if isinstance(v, list) else [str(v)] for k, v in found.items()}


def said(stored: str) -> str:
    """A kept refusal as one line: `rate: must be greater than 0`."""
    return "; ".join(f"{name}: {', '.join(messages)}" for name, messages in fields_of(stored).items())


def refused_cells(refusals: Iterable[tuple[Mapping[str, Any], Mapping[str, list[str]]]], id_field: str,
                  ours: Mapping[str, int], sent: Iterable[Key]) -> dict[Key, str]:
    """The cells of the call refused, each with what was said of it (as `kept`).

    `refusals` are (the echoed value, field -> messages); `id_field` names the entity in a
    value (room_type_id or rate_plan_id); `ours` maps the channel manager's ids to ours;
    `sent` are the cells the call carried."""
    sent_keys = set(sent)
    refused: dict[Key, str] = {}
    for value, fields in refusals:
        text = kept(fields)
        covered = _covered(value, id_field, ours, sent_keys)
        for key in (covered if covered else sent_keys):
            refused.setdefault(key, text)
    return refused


def _covered(value: Mapping[str, Any], id_field: str, ours: Mapping[str, int], sent: set[Key]) -> set[Key]:
    entity = ours.get(str(value.get(id_field)))
    if entity is None:
        return set()
    try:
        if value.get("date") is not None:
            first = last = date.fromisoformat(str(value["date"]))
        else:
            first = date.fromisoformat(str(value["date_from"]))
            last = date.fromisoformat(str(value["date_to"]))
        days = value.get("days")
        weekdays = set(range(7)) if days is None else {WEEKDAY_CODES.index(str(d)) for d in days}
    except (KeyError, ValueError, TypeError):
        return set()
    return {(e, night) for e, night in sent
            if e == entity and first <= night <= last and night.weekday() in weekdays}
