"""Which price the reconciler compares a rate cell with (actors.reconciler._held_price):
Channex documents no read of a per-person night (decision 0136)."""

from __future__ import annotations

from connectapi.actors.reconciler import UNREAD, _held_price
from connectapi.channel.client import RestrictionFields

PER_PERSON: RestrictionFields = {"rate": "90.00", "rates": [{"occupancy": 1, "rate": "70.00"},
                                                            {"occupancy": 2, "rate": "90.00"}]}


def test_a_per_room_cell_is_compared_with_the_rate() -> None:
    assert _held_price({"rate": "120.00"}, 0, 0) == "120.00"
    assert _held_price({"stop_sell": True}, 0, 0) is None  # nothing held: differs, pushed again


def test_a_per_person_cell_is_compared_with_its_occupancys_entry() -> None:
    assert _held_price(PER_PERSON, 1, 2) == "70.00"
    assert _held_price(PER_PERSON, 2, 2) == "90.00"
    assert _held_price({"rates": [{"occupancy": 2, "rate": "90.00"}]}, 1, 2) is None  # lost on the channel


def test_a_read_without_rates_shows_the_primary_alone_and_the_others_are_not_compared() -> None:
    assert _held_price({"rate": "90.00"}, 2, 2) == "90.00"
    assert _held_price({"rate": "90.00"}, 1, 2) is UNREAD
    assert _held_price({}, 1, 2) is None  # the night holds nothing at all: every occupancy differs
