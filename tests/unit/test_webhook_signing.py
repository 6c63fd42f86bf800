"""Signing with the Standard Webhooks test vectors, rotation overlap, and the retry schedule."""

from __future__ import annotations

import base64
from datetime import UTC, datetime, timedelta

import pytest
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from connectapi.domain.webhook_retry import DAY, SCHEDULE, attempts, next_wait
from connectapi.domain.webhook_signing import new_secret, signed_headers, signing_secrets


@pytest.mark.parametrize(("secret", "message_id", "timestamp", "body", "expected"), [
    ("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330,
     '{"test": 2432232314}', "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="),
    ("whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD", "msg_27UH4WbU6Z5A5EzD8u03UvzRbpk", 1649367553,
     '{"email":"test@example.com","username":"test_user"}', "v1,tZ1I4/hDygAJgO5TYxiSd6Sd0kDW6hPenDe+bTa3Kkw="),
])
def test_reference_vectors(secret: str, message_id: str, timestamp: int, body: str, expected: str) -> None:
    headers = signed_headers(message_id, body, [secret], datetime.fromtimestamp(timestamp, UTC))
    assert headers == {"webhook-id": message_id, "webhook-timestamp": str(timestamp), "webhook-signature": expected}


def test_new_secrets_are_32_random_bytes() -> None:
    one, two = new_secret(), new_secret()
    assert one.startswith("whsec_") and one != two
    assert len(base64.b64decode(one.removeprefix("whsec_"))) == 32


def test_both_secrets_sign_for_a_day_after_a_rotation() -> None:
    old, new = new_secret(), new_secret()
    rotated = datetime(2026, 11, 22, 10, tzinfo=UTC)
    assert signing_secrets(new, old, rotated, rotated + timedelta(hours=23)) == [new, old]
    assert signing_secrets(new, old, rotated, rotated + timedelta(hours=24)) == [new]
    now = datetime.now(UTC)
    headers = signed_headers("evt_1", '{"a":1}', [new, old], now)
    assert len(headers["webhook-signature"].split(" ")) == 2
    for secret in (old, new):  # a receiver that knows either secret verifies it
        Webhook(secret).verify('{"a":1}', headers)
    with pytest.raises(WebhookVerificationError):
        Webhook(new_secret()).verify('{"a":1}', headers)


def test_the_schedule_spans_a_day() -> None:
    assert sum(SCHEDULE, timedelta()) == DAY and attempts() == 8
    elapsed, waits = timedelta(), []
    for failed in range(1, attempts() + 1):
        wait = next_wait(failed, elapsed, None, lambda: 0.5)
        if wait is None:
            break
        waits.append(wait)
        elapsed += wait
    assert waits == list(SCHEDULE) and elapsed == DAY
    assert next_wait(8, elapsed, None, lambda: 0.5) is None


def test_jitter_and_retry_after() -> None:
    assert next_wait(2, timedelta(seconds=5), None, lambda: 0.0) == timedelta(minutes=4, seconds=30)
    longest = next_wait(2, timedelta(seconds=5), None, lambda: 0.999999)
    assert longest is not None and longest > timedelta(minutes=5, seconds=29)
    assert next_wait(1, timedelta(0), 120, lambda: 0.5) == timedelta(seconds=120)  # longer than 5 s: honoured
    assert next_wait(1, timedelta(0), 1, lambda: 0.5) == timedelta(seconds=5)  # shorter: the schedule's
    assert next_wait(7, timedelta(hours=23, minutes=59), 3600, lambda: 0.5) == timedelta(minutes=1)  # the day ends
