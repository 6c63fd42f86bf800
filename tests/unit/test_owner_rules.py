"""The owners' pure rules: the setup e-mail, passwords, the lockout, sessions' end."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from connectapi.domain import emails
from connectapi.domain.owners import (
    LOCKOUT_FAILURES, LOCKOUT_WAIT, LOCKOUT_WINDOW, digest, email_key, locked_until, new_secret,
    password_problem, session_over,
)

NOW = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)


def test_the_setup_email_carries_the_link() -> None:
    mail = emails.owner_setup("Ana", "https://api.hotel.example/console/setup/abc", 24, reset=False)
    assert mail.kind == "owner.setup" and "https://api.hotel.example/console/setup/abc" in mail.body
    assert "24 hours" in mail.body and "Ana" in mail.body
    assert "reset" in emails.owner_setup("Ana", "x", 24, reset=True).subject


@pytest.mark.parametrize(("password", "refused"), [
    ("short", True), ("x" * 11, True), ("x" * 12, False), (" " * 20, True), ("x" * 256, False), ("x" * 257, True),
])
def test_passwords(password: str, refused: bool) -> None:
    assert (password_problem(password) is not None) is refused


def test_ten_failures_within_fifteen_minutes_wait_fifteen_from_the_tenth() -> None:
    within = [NOW - timedelta(minutes=14) + timedelta(seconds=i) for i in range(LOCKOUT_FAILURES)]
    assert locked_until(within, NOW) == within[-1] + LOCKOUT_WAIT
    assert locked_until(within[:-1], NOW) is None  # nine
    spread = [NOW - timedelta(minutes=2 * i) for i in range(LOCKOUT_FAILURES)]  # over 18 minutes
    assert locked_until(spread, NOW) is None
    assert locked_until(within, within[-1] + LOCKOUT_WAIT) is None  # the wait is over
    old = [NOW - LOCKOUT_WINDOW - LOCKOUT_WAIT - timedelta(seconds=i + 1) for i in range(LOCKOUT_FAILURES)]
    assert locked_until(old, NOW) is None


def test_sessions_end_after_twelve_idle_hours() -> None:
    assert not session_over(NOW - timedelta(hours=11, minutes=59), NOW)
    assert session_over(NOW - timedelta(hours=12), NOW)


def test_secrets_and_their_digests() -> None:
    one, two = new_secret(), new_secret()
    assert one != two and len(one) >= 43
    assert digest(one) == digest(one) and digest(one) != digest(two) and len(digest(one)) == 32
    assert email_key("  Ana@Hotel.EXAMPLE ") == "ana@hotel.example"
