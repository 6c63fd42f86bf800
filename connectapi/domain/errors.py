"""The error codes of the contract, as one exception type the front turns into the envelope.

Status codes are the front's business; here each code carries the HTTP status it maps to
only as data, so domain and actor code can refuse a request without importing `http/`.
"""

from __future__ import annotations

from typing import Any

# code -> HTTP status, as in the spec's Errors table, plus the service's own codes.
STATUS_OF_CODE: dict[str, int] = {
    "API_KEY_INVALID": 401,
    "API_KEY_REVOKED": 401,
    "ADMIN_TOKEN_INVALID": 401,
    "NOTIFY_SECRET_INVALID": 401,
    "CONNECT_API_NOT_CONFIGURED": 503,
    "NOT_READY": 503,
    "IP_NOT_ALLOWED": 403,
    "SCOPE_MISSING": 403,
    "PAYMENT_NOT_ALLOWED": 403,
    "PROPERTY_UNAVAILABLE": 409,
    "CHANNEL_MANAGER_DISABLED": 409,
    "PMS_NOT_AVAILABLE": 409,
    "KEY_LIMIT_REACHED": 409,
    "OWNER_EXISTS": 409,  # admin: another owner has this e-mail
    "SANDBOX_DISABLED": 409,
    "CHANNEL_MAPPING_TAKEN": 409,  # admin: a channel-manager id another property maps already
    "VALIDATION": 400,
    "RANGE_INVALID": 400,
    "HORIZON": 400,
    "TOO_MANY_UPDATES": 400,
    "TOO_MANY_CELLS": 400,
    "UNKNOWN_ROOM_TYPE": 400,
    "UNKNOWN_RATE_PLAN": 400,
    "CURRENCY_MISMATCH": 400,
    "RATE_LIMITED": 429,
    "NOTHING_ACCEPTED": 422,
    "BATCH_NOT_FOUND": 404,
    "IDEMPOTENCY_KEY_INVALID": 400,
    "IDEMPOTENCY_KEY_REUSED": 409,
    "IDEMPOTENCY_IN_FLIGHT": 409,
    "STAY_INVALID": 400,
    "UNKNOWN_ROOM_TYPE_FOR_PLAN": 400,
    "OCCUPANCY_EXCEEDED": 400,
    "NO_AVAILABILITY": 409,
    "EXTERNAL_REFERENCE_REUSED": 409,
    "PAYMENT_EXCEEDS_TOTAL": 400,
    "BOOKING_NOT_FOUND": 404,
    "BOOKING_NOT_CANCELLABLE": 409,
    "BOOKING_NOT_MODIFIABLE": 409,  # PATCH of a cancelled or checked-in booking
    "BOOKING_REVISION_STALE": 412,  # PATCH with an If-Match of another revision
    "BOOKING_CANCELLED": 409,  # admin check-in of a cancelled booking
    "WEBHOOK_NOT_FOUND": 404,
    "EVENT_NOT_FOUND": 404,
    "REVISION_NOT_FOUND": 404,
    "REVISION_NOT_KEPT": 409,  # admin: only an unmapped or refused OTA revision is applied again
    "MODULE_NOT_ENTITLED": 402,
    "PROPERTY_NOT_FOUND": 404,
    "OWNER_NOT_FOUND": 404,
    "ACTOR_NOT_DOWN": 404,  # admin: revive names an actor that is not down
    "KEY_NOT_FOUND": 404,
    "NOT_FOUND": 404,
    "METHOD_NOT_ALLOWED": 405,
    "PAYLOAD_TOO_LARGE": 413,
    "REQUEST_TIMEOUT": 408,  # the body came too slowly
    "INTERNAL": 500,
    "SERVICE_UNAVAILABLE": 503,
}


class ApiError(Exception):
    """A refusal the caller can act on: a contract code, a message, optional details."""

    def __init__(
        self,
        code: str,
        message: str,
        details: dict[str, Any] | list[dict[str, Any]] | None = None,
        *,
        scope: str | None = None,
        retry_after_seconds: int | None = None,
    ) -> None:
        if code not in STATUS_OF_CODE:
            raise ValueError(f"unknown error code {code!r}")
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.details = details
        self.scope = scope
        self.retry_after_seconds = retry_after_seconds

    @property
    def status(self) -> int:
        return STATUS_OF_CODE[self.code]

    def data(self) -> dict[str, Any]:
        body: dict[str, Any] = {"code": self.code}
        if self.details is not None:
            body["details"] = self.details
        if self.scope is not None:
            body["scope"] = self.scope
        if self.retry_after_seconds is not None:
            body["retryAfterSeconds"] = self.retry_after_seconds
        return body


def validation_error(issues: list[dict[str, str]], message: str = "request does not match the schema") -> ApiError:
    return ApiError("VALIDATION", message, issues)
