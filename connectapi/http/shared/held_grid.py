"""What the channel manager holds of a property over a range of nights, in our ids: the one
read behind the admin route GET /properties/{id}/channel-grid and the console's grid."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import date
from decimal import Decimal
from typing import Any

from ...actors.channel_manager import CALL_ASK_TIMEOUT
from ...actors.messages.channel_manager import ReadGrid
from ...channel.sandbox.state import SandboxState
from ...domain.channel_values import CM_RESTRICTIONS
from ...domain.errors import ApiError
from ...domain.money import currency_exponent
from ...domain.sell_modes import ROOM_PRICE
from ...storage import properties
from ..context import context
from .channel_calls import when_allowed


@dataclass(frozen=True, slots=True)
class HeldGrid:
    """Per our room type / rate plan and night (ISO date text, as the channel manager keys them)."""

    availability: dict[int, dict[str, int]] = field(default_factory=dict)
    # Minor units by occupancy: a per-room plan's one price under ROOM_PRICE, a per-person
    # plan's under each adult count it holds a price for.
    rates: dict[int, dict[str, dict[int, int]]] = field(default_factory=dict)
    # Our field names (domain/channel_values.CM_RESTRICTIONS), only those held: closures and
    # stop-sell booleans, stays whole numbers (as the channel client checks them).
    restrictions: dict[int, dict[str, dict[str, bool | int]]] = field(default_factory=dict)
    # The plans sold per person, with their occupancies (the record's: ChannelIds.occupancies).
    occupancies: dict[int, list[int]] = field(default_factory=dict)


def _in_sandbox(sandbox: SandboxState, cm_property: str, first: date,
                last: date) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]]]:
    """What one of our sandboxes holds (KeyError: it does not know the property), shaped as
    the channel manager's read answers it (GridRead.grid, by its own field names)."""
    return (dict(sandbox.read_availability(cm_property, first, last)),
            dict(sandbox.read_restrictions(cm_property, first, last)))


# A person waits for the grid: past this, they are told when to look again instead.
GRID_WAIT = 10.0


async def read_held_grid(property_id: int, first: date, last: date, wait: float = GRID_WAIT) -> HeldGrid:
    """PROPERTY_NOT_FOUND; VALIDATION when the property is not mapped; SERVICE_UNAVAILABLE,
    with when to look again, when the channel manager does not answer or its read budget
    stays spent longer than `wait` (its reads ask ahead of the reconciler's: ReadGrid's
    `interactive`)."""
    ctx = context()
    ids = await properties.channel_ids(ctx.db, property_id)
    if ids is None:
        raise ApiError("PROPERTY_NOT_FOUND", f"no property {property_id}")
    if ids.property_id is None:
        raise ApiError("VALIDATION", "the property is not mapped to the channel manager",
                       [{"path": "$", "message": "set its channel mapping first"}])
    if ids.mode == "test":
        # A test twin's channel manager is this process's test sandbox, which knows the
        # twin once it was pushed (under its live property's ids).
        if ids.property_id in ctx.channel.test_sandbox.properties:
            held_availability, held_restrictions = _in_sandbox(ctx.channel.test_sandbox, ids.property_id, first, last)
        else:  # nothing pushed yet: nothing held
            held_availability, held_restrictions = {}, {}
    elif ctx.channel.sandbox is not None:
        # Our own sandbox is looked at directly: a look must not spend the account's
        # ten reads a minute, which the reconciler needs.
        held_availability, held_restrictions = _in_sandbox(ctx.channel.sandbox, ids.property_id, first, last)
    else:
        cm_property = ids.property_id
        give_up = ctx.clock.monotonic() + wait  # both reads within `wait`, not each
        read_a = await when_allowed(lambda: ctx.channel.mailbox.ask(
            ReadGrid("availability", cm_property, first, last, interactive=True), CALL_ASK_TIMEOUT), wait)
        read_r = await when_allowed(lambda: ctx.channel.mailbox.ask(
            ReadGrid("restrictions", cm_property, first, last, interactive=True), CALL_ASK_TIMEOUT),
            max(0.0, give_up - ctx.clock.monotonic()))
        if read_a.grid is None or read_r.grid is None:
            retry_at = read_a.retry_at if read_a.grid is None else read_r.retry_at
            later = 5 if retry_at is None else max(1, math.ceil(retry_at - ctx.clock.monotonic()))
            raise ApiError("SERVICE_UNAVAILABLE", f"the channel manager did not answer: "
                                                  f"{read_a.error or read_r.error or 'its read budget is spent'}",
                           retry_after_seconds=later)
        held_availability, held_restrictions = read_a.grid, read_r.grid
    rooms = {cm: ours for ours, cm in ids.room_types.items()}
    plans = {cm: ours for ours, cm in ids.rate_plans.items()}
    scale = 10 ** currency_exponent(ids.currency)
    grid = HeldGrid(occupancies=ids.occupancies)
    for cm, nights in held_availability.items():
        if cm in rooms:
            grid.availability[rooms[cm]] = {str(day): int(count) for day, count in nights.items()}
    for cm, nights in held_restrictions.items():
        if cm not in plans:
            continue
        rates = grid.rates.setdefault(plans[cm], {})
        restrictions = grid.restrictions.setdefault(plans[cm], {})
        per_person = ids.occupancies.get(plans[cm])
        for day, fields in nights.items():
            # By the plan's sell mode, not by what the read has: a per-person plan's prices
            # are `rates` (its `rate` is the primary's: a read without `rates` shows that
            # alone, decision 0136); a per-room plan's is `rate`.
            if per_person is not None and fields.get("rates") is not None:
                rates[str(day)] = {int(held["occupancy"]): int(Decimal(held["rate"]) * scale)
                                   for held in fields["rates"]}
            elif "rate" in fields:
                rates[str(day)] = {per_person[-1] if per_person else ROOM_PRICE: int(Decimal(fields["rate"]) * scale)}
            held = {ours: fields[theirs] for ours, (theirs, _) in CM_RESTRICTIONS.items() if theirs in fields}
            if held:
                restrictions[str(day)] = held
    return grid
