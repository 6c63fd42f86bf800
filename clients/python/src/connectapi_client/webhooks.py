"""Verifying a webhook the service sent (Standard Webhooks): an HMAC-SHA256 over
`<webhook-id>.<webhook-timestamp>.<raw body>`, any of several signatures, a timestamp
within 300 s. The raw body: the bytes as they arrived, before any JSON parsing."""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import math
import re
import time
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import ValidationError

from .errors import ConnectApiError
from .models import WebhookEvent

TOLERANCE_SECONDS = 300
_RAW_BODY_RULE = (
    "the signature is over the raw body, byte for byte as it arrived: pass the request's bytes before any JSON "
    "parsing (Flask: request.get_data(); Django: request.body; FastAPI/Starlette: await request.body(); "
    "aiohttp: await request.read()), not a parsed object")


class WebhookVerificationError(ConnectApiError):
    """The webhook is not proven to come from the service: refuse it (answer 400)."""


class WebhookRawBodyError(WebhookVerificationError, TypeError):
    """A parsed body was given where the raw one is needed."""


def _header(headers: Mapping[str, str], name: str) -> str:
    for key, value in headers.items():
        if key.lower() == name:
            return value
    raise WebhookVerificationError(f"no {name} header: not a webhook of the service")


def _key(secret: str) -> bytes:
    try:
        return base64.b64decode(secret.removeprefix("whsec_"), validate=True)
    except (binascii.Error, ValueError):
        raise ValueError("a webhook secret is whsec_ followed by base64, as the owner was shown it") from None


def _signature(secret: str, event_id: str, stamp: str, raw: bytes) -> bytes:
    """Standard Webhooks' v1 signature: HMAC-SHA256 of `id.timestamp.body`, base64."""
    content = f"{event_id}.{stamp}.".encode() + raw
    return base64.b64encode(hmac.new(_key(secret), content, hashlib.sha256).digest())


def sign_webhook(raw_body: bytes, event_id: str, secret: str, now: float | None = None) -> dict[str, str]:
    """The Standard Webhooks headers that sign `raw_body` with `secret` (`whsec_…`), as the
    service signs its deliveries: what `listen` sends, and what a receiver's own tests may."""
    stamp = str(int(time.time() if now is None else now))
    return {"webhook-id": event_id, "webhook-timestamp": stamp,
            "webhook-signature": "v1," + _signature(secret, event_id, stamp, raw_body).decode()}


def _signed(raw: bytes, headers: Mapping[str, str], secrets: Sequence[str], tolerance: float,
            now: float | None) -> None:
    event_id = _header(headers, "webhook-id")
    stamp = _header(headers, "webhook-timestamp")
    signatures = _header(headers, "webhook-signature")
    if not re.fullmatch(r"\s*[+-]?[0-9]{1,15}\s*", stamp):
        # Digits only, and not so many that the age cannot be reckoned (a float overflows).
        raise WebhookVerificationError("webhook-timestamp is not a number of seconds")
    sent_at = int(stamp)
    at = time.time() if now is None else now
    if not (math.isfinite(at) and math.isfinite(tolerance)):
        # Fail closed: a NaN compares false with everything, and "> NaN" let any age through.
        raise WebhookVerificationError(f"now ({at!r}) and tolerance ({tolerance!r}) must be finite numbers")
    if abs(at - sent_at) > tolerance:
        when = f"{at - sent_at:.0f} s old" if at > sent_at else f"{sent_at - at:.0f} s ahead"
        raise WebhookVerificationError(f"webhook-timestamp is {when}, beyond {tolerance:g} s: a replay or a clock "
                                       "far off")
    offered = [entry.split(",", 1)[1].encode() for entry in signatures.split()
               if entry.startswith("v1,") and "," in entry]
    for secret in secrets:
        expected = _signature(secret, event_id, stamp, raw)
        # Every entry compared in constant time; any match verifies (a rotated secret).
        if any(hmac.compare_digest(expected, one) for one in offered):
            return
    raise WebhookVerificationError("no signature matches the secret")


def verify_webhook(raw_body: bytes | bytearray | memoryview | str, headers: Mapping[str, str],
                   secret: str | Sequence[str], *, tolerance: float = TOLERANCE_SECONDS,
                   now: float | None = None) -> WebhookEvent:
    """The event, once its signature and timestamp are proven; else WebhookVerificationError.

    `secret` is the endpoint's `whsec_...` (or several, while you rotate yours); `headers`
    a plain mapping of the request's headers, in any case."""
    if not isinstance(raw_body, (bytes, bytearray, memoryview, str)):
        raise WebhookRawBodyError(f"raw_body is a {type(raw_body).__name__}: {_RAW_BODY_RULE}")
    raw = raw_body.encode() if isinstance(raw_body, str) else bytes(raw_body)
    _signed(raw, headers, [secret] if isinstance(secret, str) else list(secret), tolerance, now)
    try:
        return WebhookEvent.model_validate_json(raw)
    except ValidationError as failure:
        raise WebhookVerificationError(f"signed, but not an event of the service: {failure}") from None


def verify_webhook_parsed(parsed_body: Any, headers: Mapping[str, str], secret: str | Sequence[str], *,
                          tolerance: float = TOLERANCE_SECONDS, now: float | None = None) -> WebhookEvent:
    """For a framework that hands over the body already parsed: the service sends compact
    JSON, so the body is written back that way and verified. When that is not the text
    that was signed (a framework that changed a number, the order or an escape), the error
    explains how to get the raw body, which is the only sure way."""
    text = json.dumps(parsed_body, separators=(",", ":"), ensure_ascii=False)
    try:
        return verify_webhook(text, headers, secret, tolerance=tolerance, now=now)
    except WebhookRawBodyError:
        raise
    except WebhookVerificationError as failure:
        if "no signature matches" not in str(failure):
            raise
        raise WebhookRawBodyError(f"the parsed body, written back as JSON, does not match its signature; "
                                  f"{_RAW_BODY_RULE}") from None
