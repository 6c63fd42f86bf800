// Errors: one class per family of the contract's `data.code`, each with the status, the
// code, `details`, the wait the service asked for, the request id and the budgets' state.

import type { RateLimit } from "./rateLimit.js";
import type { Batch } from "./types.js";

/** Anything this library throws on purpose. */
export class ConnectApiError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    // instanceof holds even where a compiler lowers classes (ES5 targets, some bundlers).
    Object.setPrototypeOf(this, new.target.prototype);
  }
}

export interface ApiErrorOptions {
  details?: unknown;
  scope?: string | null;
  retryAfter?: number | null;
  requestId?: string | null;
  rateLimit?: RateLimit | null;
  idempotencyKey?: string | null;
}

/** The service answered with its error envelope. Branch on `code` (the contract's
 * `data.code`), never on the message. */
export class ApiError extends ConnectApiError {
  /** The HTTP status. */
  readonly status: number;
  /** The contract's `data.code`: `VALIDATION`, `RATE_LIMITED`, `BOOKING_REVISION_STALE`, ... */
  readonly code: string;
  /** `data.details`: what the code says more (a list of fields for VALIDATION, ...). */
  readonly details: unknown;
  /** The budget a 429 names (`requests`, `writes`, ...). */
  readonly scope: string | null;
  /** Seconds the service asked to wait (429, 503). */
  readonly retryAfter: number | null;
  /** `X-Request-Id`: quote it to the operator. */
  readonly requestId: string | null;
  /** The budgets' state the error answer told of. */
  readonly rateLimit: RateLimit | null;
  /** The write's `x-idempotency-key`, sent on every try: send the write again later with it
   * (`{ idempotencyKey }`) and it is written once, however its tries ended. */
  readonly idempotencyKey: string | null;
  /** The service's own message (the envelope's `message`), for people: never branch on it.
   * `message` is `"<status> <code>: <serviceMessage>"`. */
  readonly serviceMessage: string;

  constructor(status: number, code: string, message: string, options: ApiErrorOptions = {}) {
    super(`${status} ${code}: ${message}`);
    this.status = status;
    this.code = code;
    this.serviceMessage = message;
    this.details = options.details ?? null;
    this.scope = options.scope ?? null;
    this.retryAfter = options.retryAfter ?? null;
    this.requestId = options.requestId ?? null;
    this.rateLimit = options.rateLimit ?? null;
    this.idempotencyKey = options.idempotencyKey ?? null;
  }
}

/** 401: API_KEY_INVALID, API_KEY_REVOKED. */
export class AuthenticationError extends ApiError {}

/** 403: SCOPE_MISSING, IP_NOT_ALLOWED, PAYMENT_NOT_ALLOWED. */
export class PermissionDeniedError extends ApiError {}

/** 400: the request is wrong (VALIDATION, RANGE_INVALID, HORIZON, UNKNOWN_RATE_PLAN, ...).
 * Sending it again cannot help. */
export class InvalidRequestError extends ApiError {}

/** IDEMPOTENCY_KEY_INVALID, IDEMPOTENCY_KEY_REUSED (the key went with another body),
 * IDEMPOTENCY_IN_FLIGHT (its first request is still running). */
export class IdempotencyError extends ApiError {}

/** 404: BATCH_NOT_FOUND, BOOKING_NOT_FOUND, NOT_FOUND. */
export class NotFoundError extends ApiError {}

/** 409: the property's or the booking's state refuses it (PROPERTY_UNAVAILABLE,
 * CHANNEL_MANAGER_DISABLED, PMS_NOT_AVAILABLE, NO_AVAILABILITY, BOOKING_NOT_CANCELLABLE, ...). */
export class ConflictError extends ApiError {}

/** 412 BOOKING_REVISION_STALE: If-Match named another revision; `details.revision` is the current one. */
export class PreconditionFailedError extends ApiError {}

/** 402 MODULE_NOT_ENTITLED: the property's plan lacks the product. */
export class NotEntitledError extends ApiError {}

/** 422 NOTHING_ACCEPTED: the rate policy refused every group (`details.rejected`). */
export class NothingAcceptedError extends ApiError {}

/** 413: the body is over 1,048,576 bytes. */
export class PayloadTooLargeError extends ApiError {}

/** 429 RATE_LIMITED: `scope` names the budget, `retryAfter` the wait. Thrown once the
 * retries are spent, or at once when the wait is beyond the client's `maxWait`. */
export class RateLimitedError extends ApiError {}

/** 503: the service cannot answer now (SERVICE_UNAVAILABLE, CONNECT_API_NOT_CONFIGURED). */
export class ServiceUnavailableError extends ApiError {}

/** 500 INTERNAL: a fault of the service's; `requestId` names it. */
export class InternalServerError extends ApiError {}

/** No answer: the connection failed, dropped or timed out. A request that cannot be
 * repeated safely (a test helper's POST) is not retried after one: it may have been applied.
 * A write's `idempotencyKey` makes sending it again later safe. */
export class ApiConnectionError extends ConnectApiError {
  readonly idempotencyKey: string | null;

  constructor(message: string, options: { cause?: unknown; idempotencyKey?: string | null } = {}) {
    super(message, { cause: options.cause });
    this.idempotencyKey = options.idempotencyKey ?? null;
  }
}

/** `waitForBatch` gave up; `batch` is the last state read. */
export class BatchTimeoutError extends ConnectApiError {
  readonly batch: Batch;

  constructor(message: string, batch: Batch) {
    super(message);
    this.batch = batch;
  }
}

/** The webhook is not proven to come from the service: refuse it (answer 400). */
export class WebhookVerificationError extends ConnectApiError {}

/** A parsed body was given where the raw one is needed. */
export class WebhookRawBodyError extends WebhookVerificationError {}

// Names set on the prototypes, by hand: a minifier renames classes, and logs should not say "t".
for (const [kind, name] of [
  [ConnectApiError, "ConnectApiError"], [ApiError, "ApiError"], [AuthenticationError, "AuthenticationError"],
  [PermissionDeniedError, "PermissionDeniedError"], [InvalidRequestError, "InvalidRequestError"],
  [IdempotencyError, "IdempotencyError"], [NotFoundError, "NotFoundError"], [ConflictError, "ConflictError"],
  [PreconditionFailedError, "PreconditionFailedError"], [NotEntitledError, "NotEntitledError"],
  [NothingAcceptedError, "NothingAcceptedError"], [PayloadTooLargeError, "PayloadTooLargeError"],
  [RateLimitedError, "RateLimitedError"], [ServiceUnavailableError, "ServiceUnavailableError"],
  [InternalServerError, "InternalServerError"], [ApiConnectionError, "ApiConnectionError"],
  [BatchTimeoutError, "BatchTimeoutError"], [WebhookVerificationError, "WebhookVerificationError"],
  [WebhookRawBodyError, "WebhookRawBodyError"],
] as const) {
  Object.defineProperty(kind.prototype, "name", { value: name, writable: true, configurable: true });
}

type ApiErrorClass = new (status: number, code: string, message: string, options?: ApiErrorOptions) => ApiError;

const BY_CODE: Record<string, ApiErrorClass> = {
  IDEMPOTENCY_KEY_INVALID: IdempotencyError,
  IDEMPOTENCY_KEY_REUSED: IdempotencyError,
  IDEMPOTENCY_IN_FLIGHT: IdempotencyError,
};

const BY_STATUS: Record<number, ApiErrorClass> = {
  400: InvalidRequestError,
  401: AuthenticationError,
  402: NotEntitledError,
  403: PermissionDeniedError,
  404: NotFoundError,
  409: ConflictError,
  412: PreconditionFailedError,
  413: PayloadTooLargeError,
  422: NothingAcceptedError,
  429: RateLimitedError,
  500: InternalServerError,
  503: ServiceUnavailableError,
};

/** The class for an answer: by its code where the code says more than the status. */
export function errorClass(status: number, code: string): ApiErrorClass {
  return (
    (Object.hasOwn(BY_CODE, code) ? BY_CODE[code] : undefined) ??
    BY_STATUS[status] ??
    (status >= 500 ? InternalServerError : ApiError)
  );
}
