"""The booking intake's round lease in the running service, on the mock clock: a round that
finds the lease held by another process looks again when that lease would run out,
counted from when the record was asked."""

from __future__ import annotations

import pytest

from connectapi.actors.booking_intake import LEASE, LEASE_NAME, BookingIntake
from connectapi.storage import leases
from connectapi.storage.database import Database

from .harness import Harness, eventually

ROUND = leases.LeaseKind.ROUND


async def test_a_slow_answer_does_not_put_the_look_at_a_held_intake_lease_later(
        api: Harness, monkeypatch: pytest.MonkeyPatch) -> None:
    seconds = LEASE.total_seconds()

    async def taken_elsewhere() -> bool:  # once the service's own round at start has given it back
        return (await leases.take(api.ctx.db, ROUND, LEASE_NAME, "another-process", api.ctx.clock.shared_time(),
                                  seconds)).held_by("another-process")

    await eventually(taken_elsewhere, "the round lease taken for another process")
    taking = leases.take

    async def slow_answer(db: Database, kind: leases.LeaseKind, name: str, holder: str, now: float | None,
                          lease_seconds: float) -> leases.Lease:
        found = await taking(db, kind, name, holder, now, lease_seconds)
        if holder == "this-test":  # not the service's own intake, should its round come meanwhile
            api.advance(3)  # the clock moved on while the answer was on its way
        return found

    monkeypatch.setattr(leases, "take", slow_answer)
    intake = BookingIntake(api.ctx.db, api.ctx.clock, api.ctx.channel.mailbox, api.ctx.properties.writers,
                           holder="this-test")
    after = await intake.round()
    # Its lease runs out `seconds` after it was taken, now 3 s ago: it looks a second after that.
    assert not after.more and after.due_in == pytest.approx(seconds - 3 + 1.0, abs=1e-3)
