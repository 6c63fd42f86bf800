"""The sandbox's reservation codes start at random (issue 29's review): a sandbox started
again, another process's, or the test sandbox beside the live one must not hand out a
code, and so a revision system id, that the record already keeps."""

from __future__ import annotations

from datetime import UTC, date, datetime
from decimal import Decimal

from connectapi.channel.sandbox.bookings import BookingFeed, Stay

AT = datetime(2026, 11, 26, tzinfo=UTC)


def a_stay() -> Stay:
    return Stay("p", "r", "rp", date(2026, 12, 1), date(2026, 12, 3), 2, 0, {"name": "Ana"}, Decimal("200.00"), "EUR",
                "BookingCom")


def test_two_feeds_hand_out_different_codes_and_each_its_own_in_order() -> None:
    first = [BookingFeed().new(a_stay(), AT)["ota_reservation_code"] for _ in range(20)]
    assert len(set(first)) == 20  # twenty fresh feeds: twenty different first codes
    feed = BookingFeed()
    codes = [int(feed.new(a_stay(), AT)["ota_reservation_code"]) for _ in range(3)]
    assert codes == [codes[0], codes[0] + 1, codes[0] + 2] and len(str(codes[0])) == 10
