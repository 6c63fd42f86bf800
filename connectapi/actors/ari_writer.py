"""Applying one planned ARI write to the record: one transaction, under the property's lock.

Run by the property's writer, so writes of a property are applied one at a time in this
process; the row lock on the property serialises them across processes.
"""

from __future__ import annotations

import uuid
from datetime import datetime

from ..domain import ari_write
from ..domain.ari_write import Resource, WritePlan
from ..domain.errors import ApiError
from ..domain.money import currency_exponent
from ..storage import ari, idempotency
from ..storage.database import Database, Tx
from .messages.property_writer import IdempotencyClaim, Refused, RejectedEntry, WriteAccepted, WriteOutcome


async def apply_write(db: Database, property_id: int, key_id: int | None, plan: WritePlan, now: datetime,
                      claim: IdempotencyClaim | None) -> WriteOutcome:
    async def work(tx: Tx) -> WriteOutcome:
        done = await _apply(tx, property_id, key_id, plan, now)
        if claim is not None:
            await idempotency.finish(tx, property_id, claim.route, claim.key, done.stored())
        return done

    return await db.transaction(work)


async def _apply(tx: Tx, property_id: int, key_id: int | None, plan: WritePlan, now: datetime) -> WriteOutcome:
    prop = await ari.lock_property(tx, property_id)
    resource = plan.resource
    entries = list(plan.entries)
    rejected: list[ari_write.Rejection] = []

    if resource is Resource.AVAILABILITY:
        unknown = ari_write.unknown_ids(plan, await ari.room_type_ids(tx, property_id))
        if unknown:
            return Refused(ApiError("UNKNOWN_ROOM_TYPE", "room types not of this property", {"roomTypeIds": unknown}))
    else:
        policies = await ari.rate_plan_policies(tx, property_id)
        unknown = ari_write.unknown_ids(plan, set(policies))
        if unknown:
            return Refused(ApiError("UNKNOWN_RATE_PLAN", "rate plans not of this property", {"ratePlanIds": unknown}))
        if resource is Resource.RATES:
            got = ari_write.currency_mismatch(plan, prop.currency)
            if got is not None:
                return Refused(ApiError("CURRENCY_MISMATCH", f"rates must be in {prop.currency}",
                                        {"expected": prop.currency, "got": got}))
            rejected = ari_write.policy_rejections(plan, policies, prop.currency)
            if entries and len(rejected) == len(entries):  # an empty write refused nothing
                views = [r.view() for r in rejected]
                return Refused(ApiError("NOTHING_ACCEPTED", "every entry is outside its plan's rate policy",
                                        {"rejected": views}))
            refused = {r.index for r in rejected}
            entries = [e for e in entries if e.index not in refused]

    values = ari_write.merge(resource, entries)
    if resource is Resource.RATES:
        scale = 10 ** currency_exponent(prop.currency)
        values = {cell: major * scale for cell, major in values.items()}
    batch = uuid.uuid4()
    if resource is Resource.AVAILABILITY:
        accepted = await ari.upsert_availability(tx, property_id, batch, values)
    elif resource is Resource.RATES:
        accepted = await ari.upsert_rates(tx, property_id, batch, values)
    else:
        # Restrictions merge sent fields into the record's, so the record is read first.
        current = await ari.current_restrictions(tx, property_id, list(values))
        changed, _ = ari_write.changed_cells(resource, values, current)
        if changed:
            await ari.write_restrictions(tx, property_id, batch, changed)
        accepted = len(changed)
    noop = len(values) - accepted
    rejected_views = [r.view() for r in rejected]
    await ari.insert_batch(tx, batch, property_id, key_id, resource.value, now, plan.requested_cells,
                           accepted, noop, rejected_views)
    return WriteAccepted(batch, resource, plan.requested_cells, accepted, noop,
                         tuple(RejectedEntry(r.cells, r.error) for r in rejected))
