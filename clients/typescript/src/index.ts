// @connectapi/client: the Connect API for hotels, for TypeScript and JavaScript.
// `import { Client, verifyWebhook, ApiError } from "@connectapi/client"`.

export {
  Client,
  Availability,
  Bookings,
  Rates,
  Restrictions,
  TestHelpers,
  DEFAULT_MAX_RETRIES,
  DEFAULT_MAX_WAIT,
  DEFAULT_TIMEOUT,
  IDEMPOTENCY_HEADER,
  MIN_POLL_SECONDS,
  PREFIX,
} from "./client.js";
export type {
  ClientOptions,
  RetryInfo,
  LastResponse,
  ListOptions,
  ModifyOptions,
  RetryOptions,
  WaitForBatchOptions,
  WriteOptions,
} from "./client.js";
export {
  ApiConnectionError,
  ApiError,
  AuthenticationError,
  BatchTimeoutError,
  ConflictError,
  ConnectApiError,
  IdempotencyError,
  InternalServerError,
  InvalidRequestError,
  NotEntitledError,
  NotFoundError,
  NothingAcceptedError,
  PayloadTooLargeError,
  PermissionDeniedError,
  PreconditionFailedError,
  RateLimitedError,
  ServiceUnavailableError,
  WebhookRawBodyError,
  WebhookVerificationError,
} from "./errors.js";
export type { ApiErrorOptions } from "./errors.js";
export { RateLimit } from "./rateLimit.js";
export type { Budget, HeaderSource } from "./rateLimit.js";
export { TOLERANCE_SECONDS, verifyWebhook, verifyWebhookParsed } from "./webhooks.js";
export type { RawBody, VerifyOptions } from "./webhooks.js";
export type * from "./types.js";
