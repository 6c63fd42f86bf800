"""After a commit the writer, not the route, wakes whoever acts on it (actors/wakeups.py)."""

from __future__ import annotations

import uuid
from datetime import date, datetime, timezone
from typing import Any

from connectapi.budgets.charges import Charge
from connectapi.actors.messages.property_writer import (ApplyWrite, BookingDone, RevisionSettled, WriteAccepted,
                                                       Refused)
from connectapi.actors.property_writer import PropertyWriter
from connectapi.actors.wakeups import Wakeups
from connectapi.domain.ari_write import Resource, WritePlan
from connectapi.domain.errors import ApiError
from connectapi.engine import Wake
from connectapi.storage.records import Booking

AT = datetime(2026, 11, 26, tzinfo=timezone.utc)
A_BOOKING = Booking(1, 7, "api", "R1", "E1", "UPCOMING", date(2026, 12, 1), date(2026, 12, 2), "EUR", "Ann", "+1",
                    None, 100, 0, AT, None, True, True, (), 1, AT)


class Pushes:
    """What a PushScheduler is told."""

    def __init__(self) -> None:
        self.woken: list[tuple[int, bool, bool]] = []

    async def wake(self, property_id: int, availability: bool, rates_or_restrictions: bool) -> None:
        self.woken.append((property_id, availability, rates_or_restrictions))


class Listener:
    """What a service's mailbox is told."""

    def __init__(self) -> None:
        self.told = 0

    def try_tell(self, message: Wake) -> bool:
        assert isinstance(message, Wake)
        self.told += 1
        return True


def attached() -> tuple[Wakeups, Pushes, Listener, Listener, Listener]:
    wakeups, pushes, outbox, webhooks, intake = Wakeups(), Pushes(), Listener(), Listener(), Listener()
    # Each stands for what the assembly attaches (a PushScheduler, the engine's Mailbox).
    fake: Any = (pushes, outbox, webhooks, intake)
    wakeups.attach(pushes=fake[0], outbox=fake[1], webhooks=fake[2])
    wakeups.attach(intake=fake[3])
    return wakeups, pushes, outbox, webhooks, intake


async def test_a_notice_before_its_listener_is_attached_is_dropped_and_later_ones_reach_it() -> None:
    wakeups = Wakeups()
    await wakeups.cells_dirty(1, True, False)
    wakeups.mails_queued()
    wakeups.events_queued()
    wakeups.revisions_waiting()  # nothing attached: nothing to tell, and no error
    wakeups, pushes, outbox, webhooks, intake = attached()
    await wakeups.cells_dirty(4, False, True)
    wakeups.mails_queued()
    wakeups.events_queued()
    wakeups.revisions_waiting()
    assert pushes.woken == [(4, False, True)]
    assert (outbox.told, webhooks.told, intake.told) == (1, 1, 1)
    # A listener attached later does not unset the others.
    later: Any = Listener()
    wakeups.attach(intake=later)
    wakeups.mails_queued()
    wakeups.revisions_waiting()
    assert (outbox.told, intake.told, later.told) == (2, 1, 1)


def write_accepted(cells: int) -> WriteAccepted:
    return WriteAccepted(uuid.uuid4(), Resource.RATES, cells, cells, 0, ())


def write(resource: Resource) -> ApplyWrite:
    return ApplyWrite(1, WritePlan(resource, ()), AT, None, Charge("cells", "7", 1, 100, 60.0, 0, 0), None)


async def test_the_writer_wakes_the_pushers_of_what_it_committed_and_nothing_for_a_refusal() -> None:
    wakeups, pushes, outbox, webhooks, _ = attached()
    no_record: Any = None  # `_committed` reads nothing
    writer = PropertyWriter(7, no_record, wakeups)
    accepted = write_accepted(3)
    await writer._committed(accepted, write(Resource.AVAILABILITY))
    await writer._committed(accepted, write(Resource.RATES))
    await writer._committed(write_accepted(0), write(Resource.RESTRICTIONS))  # nothing new
    await writer._committed(Refused(ApiError("VALIDATION", "no")), write(Resource.RATES))
    assert pushes.woken == [(7, True, False), (7, False, True)]
    await writer._committed(BookingDone(A_BOOKING, made=True, inventory_moved=True, mails_queued=True), None)
    await writer._committed(BookingDone(A_BOOKING, made=False), None)  # a repeat: nothing moved, nothing queued
    assert pushes.woken[2:] == [(7, True, False)] and outbox.told == 1
    await writer._committed(RevisionSettled("applied", inventory_moved=True, events=1, mails=1), None)
    await writer._committed(RevisionSettled("stale"), None)
    assert pushes.woken[3:] == [(7, True, False)]
    assert (webhooks.told, outbox.told) == (1, 2)


async def test_a_failing_wake_up_never_fails_the_commit_it_follows(caplog: Any) -> None:
    class Broken(Pushes):
        async def wake(self, property_id: int, availability: bool, rates_or_restrictions: bool) -> None:
            raise RuntimeError("a bug in waking")

    wakeups, broken = Wakeups(), Broken()
    fake: Any = broken
    wakeups.attach(pushes=fake)
    no_record: Any = None
    writer = PropertyWriter(7, no_record, wakeups)
    await writer._committed(write_accepted(3), write(Resource.RATES))  # no exception
    assert "the wake-up after a commit failed" in caplog.text
