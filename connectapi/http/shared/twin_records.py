"""A live property's test record as the front reaches it: its test twin, made when first
needed, with its pushers woken to carry the new record's availability to the test sandbox."""

from __future__ import annotations

from ...storage import twins
from ..context import context


async def test_record_of(property_id: int) -> int | None:
    """The test twin of live property `property_id` (None: no such live property)."""
    ctx = context()
    found = await twins.twin_of(ctx.db, property_id)
    if found is not None:
        return found
    made = await twins.ensure_twin(ctx.db, property_id, ctx.clock.now().date())
    if made is not None:
        # Its availability starts dirty: the test sandbox holds only what it is sent.
        await ctx.properties.wakeups.cells_dirty(made, True, False)
    return made
