"""The service's wall clock follows the database server's, and a small step back (one
measure's error, the host's clock slewed back) holds it a moment instead, so a later record
is never dated before an earlier one; a wrong clock put right (minutes) is followed at once."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from connectapi.engine import SystemClock
from connectapi.engine import _clock


class SteppingHost(datetime):
    """The host's `datetime.now`, at instants a test sets."""

    at = datetime(2026, 11, 29, 9, 0, tzinfo=UTC)

    @classmethod
    def now(cls, tz: object = None) -> datetime:  # type: ignore[override]
        return cls.at


@pytest.fixture
def host(monkeypatch: pytest.MonkeyPatch) -> type[SteppingHost]:
    monkeypatch.setattr(_clock, "datetime", SteppingHost)
    return SteppingHost


def test_it_follows_the_database_forward(host: type[SteppingHost]) -> None:
    clock = SystemClock()
    first = clock.now()
    clock.follow(120.0)
    assert clock.now() == first + timedelta(seconds=120)


def test_a_smaller_offset_holds_the_clock_instead_of_stepping_it_back(host: type[SteppingHost]) -> None:
    clock = SystemClock()
    clock.follow(0.2)
    before = [clock.now() for _ in range(3)]
    clock.follow(-0.1)  # the next measure: 300 ms behind the last
    after = [clock.now() for _ in range(3)]
    given = before + after
    assert given == sorted(given) and len(set(given)) == len(given)
    host.at += timedelta(seconds=1)  # once the host's time has caught up, it is followed again
    assert clock.now() == host.at - timedelta(seconds=0.1)


def test_the_hosts_clock_slewed_back_does_not_step_it_back(host: type[SteppingHost]) -> None:
    clock = SystemClock()
    first = clock.now()
    host.at -= timedelta(seconds=0.5)
    assert clock.now() > first


def test_a_wrong_clock_put_right_is_followed_at_once(host: type[SteppingHost]) -> None:
    clock = SystemClock()
    clock.now()
    clock.follow(-600.0)  # this host is ten minutes ahead of the database
    assert clock.now() == host.at - timedelta(seconds=600)
