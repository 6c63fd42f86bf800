"""Signing outbound webhooks per Standard Webhooks, with the `standardwebhooks` package.

After a secret rotation the old and the new secret both sign for 24 hours: the
`webhook-signature` header then carries one `v1,` entry per secret, and a receiver that
knows either secret verifies the message.
"""

from __future__ import annotations

import base64
import secrets
from datetime import UTC, datetime, timedelta

from standardwebhooks.webhooks import Webhook

SECRET_PREFIX = "whsec_"
SECRET_BYTES = 32
ROTATION_OVERLAP = timedelta(hours=24)


def new_secret() -> str:
    """`whsec_` and the base64 of 32 random bytes: shown to the owner once."""
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(SECRET_BYTES)).decode()


def signing_secrets(current: str, previous: str | None, rotated_at: datetime | None, now: datetime) -> list[str]:
    """The secrets that sign a message sent at `now`: the current one, and the previous one
    for 24 hours after a rotation."""
    if previous is not None and rotated_at is not None and now < rotated_at + ROTATION_OVERLAP:
        return [current, previous]
    return [current]


def signed_headers(message_id: str, body: str, signing: list[str], at: datetime) -> dict[str, str]:
    """The three Standard Webhooks headers for one attempt (the timestamp is the attempt's)."""
    moment = at.astimezone(UTC)
    signatures = " ".join(Webhook(secret).sign(message_id, moment, body) for secret in signing)
    return {"webhook-id": message_id, "webhook-timestamp": str(int(moment.timestamp())),
            "webhook-signature": signatures}
