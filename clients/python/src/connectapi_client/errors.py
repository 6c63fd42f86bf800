"""Errors: one class per family of the contract's `data.code`, each with the status, the
code, `details`, the wait the service asked for, the request id and the budgets' state."""

from __future__ import annotations

from typing import Any

from .rate_limit import RateLimit


class ConnectApiError(Exception):
    """Anything this library raises."""


class ApiError(ConnectApiError):
    """The service answered with its error envelope. Branch on `code` (the contract's
    `data.code`), never on the message."""

    def __init__(self, status: int, code: str, message: str, *, details: Any = None, scope: str | None = None,
                 retry_after: float | None = None, request_id: str | None = None,
                 rate_limit: RateLimit | None = None, idempotency_key: str | None = None) -> None:
        super().__init__(f"{status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message
        self.details = details
        self.scope = scope  # the budget a 429 names
        self.retry_after = retry_after  # seconds the service asked to wait (429, 503)
        self.request_id = request_id  # X-Request-Id: quote it to the operator
        self.rate_limit = rate_limit
        # The write's x-idempotency-key, sent on every try: send the write again later with
        # it (`idempotency_key=`) and it is written once, however its tries ended.
        self.idempotency_key = idempotency_key


class AuthenticationError(ApiError):
    """401: API_KEY_INVALID, API_KEY_REVOKED."""


class PermissionDeniedError(ApiError):
    """403: SCOPE_MISSING, IP_NOT_ALLOWED, PAYMENT_NOT_ALLOWED."""


class InvalidRequestError(ApiError):
    """400: the request is wrong (VALIDATION, RANGE_INVALID, HORIZON, UNKNOWN_RATE_PLAN, ...).
    Sending it again cannot help."""


class IdempotencyError(ApiError):
    """IDEMPOTENCY_KEY_INVALID, IDEMPOTENCY_KEY_REUSED (the key went with another body),
    IDEMPOTENCY_IN_FLIGHT (its first request is still running)."""


class NotFoundError(ApiError):
    """404: BATCH_NOT_FOUND, BOOKING_NOT_FOUND, NOT_FOUND."""


class ConflictError(ApiError):
    """409: the property's or the booking's state refuses it (PROPERTY_UNAVAILABLE,
    CHANNEL_MANAGER_DISABLED, PMS_NOT_AVAILABLE, NO_AVAILABILITY, BOOKING_NOT_CANCELLABLE, ...)."""


class PreconditionFailedError(ApiError):
    """412 BOOKING_REVISION_STALE: If-Match named another revision; `details["revision"]`
    is the current one."""


class NotEntitledError(ApiError):
    """402 MODULE_NOT_ENTITLED: the property's plan lacks the product."""


class NothingAcceptedError(ApiError):
    """422 NOTHING_ACCEPTED: the rate policy refused every group (`details["rejected"]`)."""


class PayloadTooLargeError(ApiError):
    """413: the body is over 1,048,576 bytes."""


class RateLimitedError(ApiError):
    """429 RATE_LIMITED: `scope` names the budget, `retry_after` the wait. Raised once the
    retries are spent, or at once when the wait is beyond the client's `max_wait`."""


class ServiceUnavailableError(ApiError):
    """503: the service cannot answer now (SERVICE_UNAVAILABLE, CONNECT_API_NOT_CONFIGURED)."""


class InternalServerError(ApiError):
    """500 INTERNAL: a fault of the service's; `request_id` names it."""


class ApiConnectionError(ConnectApiError):
    """No answer: the connection failed, dropped or timed out. A request that cannot be
    repeated safely (a test helper's POST) is not retried after one: it may have been
    applied. A write's `idempotency_key` makes sending it again later safe."""

    def __init__(self, message: str, *, idempotency_key: str | None = None) -> None:
        super().__init__(message)
        self.idempotency_key = idempotency_key


class BatchTimeoutError(ConnectApiError, TimeoutError):
    """`wait_for_batch` gave up; `batch` is the last state read."""

    def __init__(self, message: str, batch: Any) -> None:
        super().__init__(message)
        self.batch = batch


_BY_CODE: dict[str, type[ApiError]] = {
    "IDEMPOTENCY_KEY_INVALID": IdempotencyError, "IDEMPOTENCY_KEY_REUSED": IdempotencyError,
    "IDEMPOTENCY_IN_FLIGHT": IdempotencyError,
}
_BY_STATUS: dict[int, type[ApiError]] = {
    400: InvalidRequestError, 401: AuthenticationError, 402: NotEntitledError, 403: PermissionDeniedError,
    404: NotFoundError, 409: ConflictError, 412: PreconditionFailedError, 413: PayloadTooLargeError,
    422: NothingAcceptedError, 429: RateLimitedError, 500: InternalServerError, 503: ServiceUnavailableError,
}


def error_class(status: int, code: str) -> type[ApiError]:
    """The class for an answer: by its code where the code says more than the status."""
    return _BY_CODE.get(code) or _BY_STATUS.get(status) or (InternalServerError if status >= 500 else ApiError)
