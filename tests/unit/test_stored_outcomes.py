"""What a writer keeps under an idempotency key reads back as the same typed outcome, and a
replay is answered with the body the first request got, also for records kept before the
outcomes were typed (the contract's bodies themselves)."""

from __future__ import annotations

import json
from collections.abc import Mapping
import uuid
from datetime import date, datetime, timedelta, timezone

from connectapi.actors.messages.property_writer import (BookingDone, RejectedEntry, Refused, WriteAccepted,
                                                       outcome_from_stored)
from connectapi.domain.ari_write import Resource
from connectapi.domain.errors import ApiError
from connectapi.http.api.booking_body import booking_body
from connectapi.storage.records import Booking, BookingRoom

AT = datetime(2026, 11, 26, 9, 30, 15, 123456, tzinfo=timezone.utc)


def booking(currency: str = "EUR", cancelled: bool = False) -> Booking:
    return Booking(
        id=41, property_id=7, source="api", reference="CA-7-41", external_reference="BE-1001",
        status="CANCELLED" if cancelled else "UPCOMING", check_in=date(2026, 12, 1), check_out=date(2026, 12, 4),
        currency=currency, guest_name="Ann Lee", guest_phone="+44 20 7946 0958", guest_email=None,
        total_minor=36000, paid_minor=1050, created_at=AT,
        cancelled_at=AT + timedelta(hours=1) if cancelled else None, channel_manager=True, event_recorded=False,
        rooms=(BookingRoom(5, 2, 3, "BB", 2, 1, 12000, "CANCELLED" if cancelled else "UPCOMING"),
               BookingRoom(6, 2, None, "RO", 1, 0, 0, "UPCOMING")),
        revision=3, modified_at=AT + timedelta(minutes=5))


def through_json(stored: Mapping[str, object]) -> dict[str, object]:
    """As the record's jsonb gives it back."""
    loaded: dict[str, object] = json.loads(json.dumps(stored))
    return loaded


def test_a_write_result_reads_back_as_it_was_kept() -> None:
    done = WriteAccepted(uuid.uuid4(), Resource.RESTRICTIONS, 10, 6, 2, (RejectedEntry(2, "below minRate"),))
    assert outcome_from_stored(through_json(done.stored()), 7) == done


def test_a_booking_reads_back_with_its_made_and_replay_and_answers_the_same_body() -> None:
    for done in (BookingDone(booking(), made=True), BookingDone(booking("JPY", cancelled=True), made=False, replay=True)):
        back = outcome_from_stored(through_json(done.stored()), 7)
        assert isinstance(back, BookingDone)
        assert (back.booking, back.made, back.replay) == (done.booking, done.made, done.replay)
        assert booking_body(back.booking, back.replay) == booking_body(done.booking, done.replay)


def test_a_refusal_reads_back_with_its_code_and_details() -> None:
    done = Refused(ApiError("BOOKING_NOT_FOUND", "no booking 9", {"bookingId": 9}))
    back = outcome_from_stored(through_json(done.stored()), 7)
    assert isinstance(back, Refused)
    assert (back.error.code, back.error.message, back.error.details) == ("BOOKING_NOT_FOUND", "no booking 9",
                                                                          {"bookingId": 9})


def test_a_booking_kept_as_its_body_by_the_version_before_is_answered_with_that_body() -> None:
    for kept in (booking(), booking("KWD", cancelled=True)):
        for replay in (False, True):
            body = through_json(booking_body(kept, replay))
            back = outcome_from_stored({"outcome": "booking", "made": not replay, "booking": body}, 7)
            assert isinstance(back, BookingDone)
            assert back.booking.property_id == 7 and back.made is not replay and back.replay is replay
            assert booking_body(back.booking, back.replay) == body


def test_a_write_result_kept_whole_by_the_version_before_reads_back() -> None:
    batch = uuid.uuid4()
    kept = {"batchId": str(batch), "resource": "rates", "requestedCells": 4, "acceptedCells": 3, "noopCells": 1,
            "rejected": [], "pushedBy": "ari-projector", "poll": f"/api/connect/v1/batches/{batch}"}
    assert outcome_from_stored({"outcome": "write-accepted", "result": kept}, 7) == WriteAccepted(
        batch, Resource.RATES, 4, 3, 1, ())


def test_an_answer_kept_by_an_older_version_still_is_none() -> None:
    assert outcome_from_stored({"statuscode": 202, "message": "Accepted", "data": {}}, 7) is None
