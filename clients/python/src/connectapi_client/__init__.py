"""A client for the connectapi Connect API, sync and async, that does the contract's hard
parts: retries of 429 and 503 after the wait the service asks, one idempotency key per
write reused on every try, typed answers and errors, the RateLimit headers read on every
answer, batches waited for in one request, bookings paged, webhooks verified, and a test
record's webhooks forwarded to your machine (`python -m connectapi_client listen`).

    from connectapi_client import Client
    client = Client(base_url="http://127.0.0.1:8080", api_key="cak_test_...")
    result = client.rates.set([{"ratePlanId": 1, "dateFrom": "2026-12-01", "dateTo": "2026-12-07",
                                "rate": "120", "currency": "EUR"}])
"""

from . import models
from ._calls import LastResponse
from .async_client import (AsyncAvailability, AsyncBookings, AsyncClient, AsyncRates, AsyncRestrictions,
                           AsyncTestHelpers)
from .client import Availability, Bookings, Client, Rates, Restrictions, TestHelpers
from .errors import (ApiConnectionError, ApiError, AuthenticationError, BatchTimeoutError, ConflictError,
                     ConnectApiError, IdempotencyError, InternalServerError, InvalidRequestError, NotEntitledError,
                     NotFoundError, NothingAcceptedError, PayloadTooLargeError, PermissionDeniedError,
                     PreconditionFailedError, RateLimitedError, ServiceUnavailableError)
from .rate_limit import Budget, RateLimit
from .listen import listen
from .webhooks import WebhookRawBodyError, WebhookVerificationError, sign_webhook, verify_webhook, verify_webhook_parsed

__version__ = "1.0.0"

__all__ = [
    "Availability", "Rates", "Restrictions", "Bookings", "TestHelpers", "AsyncAvailability", "AsyncRates",
    "AsyncRestrictions", "AsyncBookings", "AsyncTestHelpers",
    "ApiConnectionError", "ApiError", "AsyncClient", "AuthenticationError", "BatchTimeoutError", "Budget", "Client",
    "ConflictError", "ConnectApiError", "IdempotencyError", "InternalServerError", "InvalidRequestError",
    "LastResponse", "NotEntitledError", "NotFoundError", "NothingAcceptedError", "PayloadTooLargeError",
    "PermissionDeniedError", "PreconditionFailedError", "RateLimit", "RateLimitedError", "ServiceUnavailableError",
    "WebhookRawBodyError", "WebhookVerificationError", "listen", "models", "sign_webhook", "verify_webhook",
    "verify_webhook_parsed",
]
