// The client: `new Client({ baseUrl, apiKey })`, one method per route of the contract,
// each call with its retries (429 and 503, Retry-After, one idempotency key per write).

import {
  ApiConnectionError,
  ApiError,
  BatchTimeoutError,
  errorClass,
} from "./errors.js";
import { RateLimit } from "./rateLimit.js";
import { defaultNow, defaultSleep, newIdempotencyKey } from "./runtime.js";
import type {
  AvailabilityEntry,
  AvailabilityRead,
  Batch,
  Booking,
  BookingIn,
  BookingList,
  BookingPatchIn,
  Catalog,
  IsoDate,
  IsoDateTime,
  OtaBookingChangeIn,
  Property,
  RateEntry,
  RatesRead,
  RestrictionEntry,
  RestrictionsRead,
  Sync,
  TestCheckIn,
  TestFaults,
  TestFaultsIn,
  TestOtaBookingIn,
  TestOtaRevision,
  TestReset,
  WriteResult,
} from "./types.js";

export const PREFIX = "/api/v1/connect-api/v1";
export const IDEMPOTENCY_HEADER = "x-idempotency-key";
/** The contract: poll /batches and /sync no more often than every 15 seconds. */
export const MIN_POLL_SECONDS = 15;
/** How long one `GET /batches/{id}?wait=N` asks the service to hold its answer until the
 * batch is done: well within the client's own timeout. */
export const BATCH_WAIT_SECONDS = 20;
/** A pending batch answered this much sooner than the wait asked was not waited for (a
 * service without `wait`, or one stopping): the client then sleeps its interval. */
const EARLY_BY_SECONDS = 2;
/** A shorter wait is not asked for (the client paces itself at MIN_POLL_SECONDS instead):
 * a wait of a second or two would make a poll every second or two. */
const MIN_BATCH_WAIT = 5;
export const DEFAULT_MAX_RETRIES = 3;
export const DEFAULT_MAX_WAIT = 60;
export const DEFAULT_TIMEOUT = 30;
const KEY_FORMAT = /^[A-Za-z0-9_-]{10,64}$/;

export interface ClientOptions {
  /** Where the service answers, e.g. `http://127.0.0.1:8080` (the API's path is added). */
  baseUrl: string;
  /** A key of the property: `cak_live_...` or `cak_test_...`. */
  apiKey: string;
  /** How many times a 429, a 503 or a dropped connection is tried again (default 3). */
  maxRetries?: number;
  /** The longest wait, in seconds, the client accepts before a retry (default 60); a 429
   * asking more throws RateLimitedError at once, with the wait in `retryAfter`. */
  maxWait?: number;
  /** Seconds one try may take, answer included, before it is aborted (default 30). */
  timeout?: number;
  /** The `fetch` to send with (default: the global one). */
  fetch?: typeof fetch;
  /** For tests and special runtimes: how the client waits `ms` milliseconds before a retry
   * or a poll (default: a `setTimeout` promise; never a blocking sleep). */
  sleep?: (ms: number) => Promise<void>;
  /** For tests and special runtimes: a clock in milliseconds for `waitForBatch`'s deadline
   * (default: `performance.now()`). */
  now?: () => number;
  /** Told of each retry before its wait: the route, why, the wait and the try to come
   * (log it: it never holds the key or a body). */
  onRetry?: (retry: RetryInfo) => void;
}

/** What `onRetry` is told. */
export interface RetryInfo {
  readonly method: string;
  readonly path: string;
  /** `"429 RATE_LIMITED"`, `"503 SERVICE_UNAVAILABLE"`, or `"no answer (...)"`. */
  readonly reason: string;
  readonly waitSeconds: number;
  /** The try about to be made: 2 for the first retry. */
  readonly attempt: number;
  readonly idempotencyKey: string | null;
}

/** Per-call settings: `client.withOptions({ maxRetries: 0 }).rates.set(...)`. */
export interface RetryOptions {
  maxRetries?: number;
  maxWait?: number;
}

/** What the last answer said beside its body. */
export interface LastResponse {
  readonly status: number;
  /** `X-Request-Id`: quote it to the operator. */
  readonly requestId: string | null;
  /** `X-Idempotent-Replay: true`: the answer of an earlier try of the same key, nothing done twice. */
  readonly idempotentReplay: boolean;
  /** The `x-idempotency-key` the call sent on every try (writes). */
  readonly idempotencyKey: string | null;
  readonly etag: string | null;
  /** Tries it took, 1 without a retry. */
  readonly attempts: number;
}

export interface WriteOptions {
  /** Your own key (10 to 64 of A-Z a-z 0-9 _ -); default: one made for this call. Either
   * way the same key goes with every try of the call. */
  idempotencyKey?: string;
}

export interface ModifyOptions extends WriteOptions {
  /** Change only this revision: the booking's `revision` (a number, sent as `"N"`) or its
   * ETag as the service sent it. A stale one throws PreconditionFailedError. */
  ifMatch?: number | string;
}

export interface ListOptions {
  /** Created on or after it (default: the last 7 days); an ISO 8601 instant or a Date. */
  since?: IsoDateTime | Date;
  /** Bookings to a page, 1 to 100 (default 50). */
  limit?: number;
  /** Only the booking with that reservation id. */
  externalReference?: string;
  /** The page after this one's: the `nextBefore` of the page before. */
  before?: number;
}

export interface WaitForBatchOptions {
  /** Seconds to wait in all (default 600), then BatchTimeoutError. */
  timeout?: number;
  /** Seconds between polls, never below the contract's 15 (default 15). */
  interval?: number;
}

interface Call {
  method: "GET" | "PUT" | "POST" | "PATCH";
  path: string;
  query?: Record<string, string>;
  body?: unknown;
  headers?: Record<string, string>;
  /** May be sent again after a dropped connection: reads, writes carrying an idempotency
   * key, and a cancellation (a repeat answers replay: true). */
  repeatable: boolean;
}

type Send = <T>(call: Call | Promise<Call>) => Promise<T>;

// ---- retries: what `_calls.py` of the Python client does ------------------------------------

function seconds(text: string | null): number | null {
  if (text === null || !/^\s*\d+(?:\.\d+)?\s*$/.test(text)) return null;
  return Number.parseFloat(text);
}

function uniform(low: number, high: number): number {
  return low + Math.random() * (high - low);
}

/** Full jitter over 0.5 s, 1 s, 2 s ... up to 8 s: retries of many clients spread out. */
export function backoff(attempt: number): number {
  return uniform(0, Math.min(8, 0.5 * 2 ** attempt));
}

/** How long (seconds) to wait before trying again after a 429 or a 503: `said` is what the
 * service said (Retry-After, else `retryAfterSeconds`, else the exhausted budget's `t`),
 * `wait` that plus a little jitter; without a word from the service, `said` is null and
 * `wait` is backoff. */
export function retryWait(error: ApiError, attempt: number): { said: number | null; wait: number } {
  let said = error.retryAfter;
  if (said === null && error.rateLimit !== null) {
    const spent = Object.values(error.rateLimit.budgets)
      .filter((b) => b.remaining === 0 && b.reset !== null)
      .map((b) => b.reset!);
    said = spent.length ? Math.max(...spent) : null;
  }
  if (said === null) return { said: null, wait: backoff(attempt) };
  return { said, wait: said + uniform(0, Math.min(1, 0.1 * said + 0.05)) };
}

/** 429 and 503 only, as the contract says; and our own retry meeting the first try of the
 * same key still running (IDEMPOTENCY_IN_FLIGHT), which needs only a moment. */
export function mayRetry(error: ApiError, attempt: number): boolean {
  if (error.status === 429 || error.status === 503) return true;
  return error.code === "IDEMPOTENCY_IN_FLIGHT" && attempt > 0;
}

/** A request that never left (the connection refused) may always be sent again; one that
 * may have been applied only when repeating it is harmless. */
function mayRetryConnection(call: Call, failure: unknown): boolean {
  if (call.repeatable) return true;
  const cause = (failure as { cause?: { code?: unknown } } | null)?.cause;
  return cause?.code === "ECONNREFUSED";
}

function tooLong(error: ApiError, wait: number, maxWait: number): ApiError {
  const kind = error.constructor as new (...args: ConstructorParameters<typeof ApiError>) => ApiError;
  return new kind(error.status, error.code,
    `${error.serviceMessage} (the service asks to wait ${wait.toFixed(0)} s, more than maxWait ${maxWait} s: ` +
      "not retried)", {
      details: error.details, scope: error.scope, retryAfter: error.retryAfter ?? wait,
      requestId: error.requestId, rateLimit: error.rateLimit, idempotencyKey: error.idempotencyKey,
    });
}

function errorOf(status: number, statusText: string, text: string, headers: Headers,
                 rateLimit: RateLimit, idempotencyKey: string | null): ApiError {
  let envelope: unknown = null;
  try {
    envelope = JSON.parse(text);
  } catch {
    // not the envelope: below
  }
  const rawData = envelope !== null && typeof envelope === "object" ? (envelope as { data?: unknown }).data : null;
  let data: Record<string, unknown>;
  let message: string;
  if (rawData !== null && typeof rawData === "object" && typeof (rawData as { code?: unknown }).code === "string") {
    data = rawData as Record<string, unknown>;
    const said = (envelope as { message?: unknown }).message;
    message = said === undefined || said === null ? "" : String(said);
  } else {
    data = { code: status === 413 ? "PAYLOAD_TOO_LARGE" : status === 429 ? "RATE_LIMITED" : "UNEXPECTED" };
    message = statusText || "no error envelope in the answer";
  }
  let retryAfter = seconds(headers.get("retry-after"));
  if (retryAfter === null && typeof data["retryAfterSeconds"] === "number") retryAfter = data["retryAfterSeconds"];
  const code = data["code"] as string;
  const kind = errorClass(status, code);
  return new kind(status, code, message, {
    details: data["details"] ?? null,
    scope: typeof data["scope"] === "string" ? data["scope"] : null,
    retryAfter,
    requestId: headers.get("x-request-id"),
    rateLimit,
    idempotencyKey,
  });
}

async function idempotencyKey(given: string | undefined): Promise<string> {
  if (given === undefined || given === null) return newIdempotencyKey();
  if (typeof given !== "string" || !KEY_FORMAT.test(given)) {
    throw new TypeError("an idempotency key is 10 to 64 characters of A-Z, a-z, 0-9, _ and -");
  }
  return given;
}

function segment(value: number | string): string {
  return encodeURIComponent(String(value));
}

function range(dateFrom: IsoDate | undefined, dateTo: IsoDate | undefined): Record<string, string> {
  const query: Record<string, string> = {};
  if (dateFrom !== undefined && dateFrom !== null) query["from"] = String(dateFrom);
  if (dateTo !== undefined && dateTo !== null) query["to"] = String(dateTo);
  return query;
}

// ---- the resources ------------------------------------------------------------------------

class Ari<Read, Entry> {
  readonly #send: Send;
  readonly #resource: string;

  /** @internal */
  constructor(send: Send, resource: string) {
    this.#send = send;
    this.#resource = resource;
  }

  /** The record's nights `dateFrom` to `dateTo` ("YYYY-MM-DD"; default: 30 days from today). */
  get(dateFrom?: IsoDate, dateTo?: IsoDate): Promise<Read> {
    return this.#send({ method: "GET", path: `/${this.#resource}`, query: range(dateFrom, dateTo), repeatable: true });
  }

  /** Send `updates` (the body's entries, as the contract writes them): 202's write result,
   * a batch to poll. One idempotency key for every try of this call (yours, or one made now). */
  set(updates: readonly Entry[], options: WriteOptions = {}): Promise<WriteResult> {
    if (!Array.isArray(updates)) {
      return Promise.reject(new TypeError("updates is the list of entries (the body's `updates`), not the body"));
    }
    return this.#send((async (): Promise<Call> => ({
      method: "PUT", path: `/${this.#resource}`, body: { updates }, repeatable: true,
      headers: { [IDEMPOTENCY_HEADER]: await idempotencyKey(options.idempotencyKey) },
    }))());
  }
}

/** `client.availability`: rooms to sell per room type and night. */
export class Availability extends Ari<AvailabilityRead, AvailabilityEntry> {}
/** `client.rates`: nightly sell prices per rate plan (read back in minor units, `rateMinor`). */
export class Rates extends Ari<RatesRead, RateEntry> {}
/** `client.restrictions`: stop-sell, closed to arrival/departure, stays; null: the record holds no opinion. */
export class Restrictions extends Ari<RestrictionsRead, RestrictionEntry> {}

/** `client.bookings`: bookings of the hotel's own booking engine, in its PMS. */
export class Bookings {
  readonly #send: Send;

  /** @internal */
  constructor(send: Send) {
    this.#send = send;
  }

  /** Create a booking in the PMS. `replay` is true when `externalReference` was used
   * before: the booking as made, nothing charged twice. */
  create(body: BookingIn, options: WriteOptions = {}): Promise<Booking> {
    return this.#send((async (): Promise<Call> => ({
      method: "POST", path: "/bookings", body, repeatable: true,
      headers: { [IDEMPOTENCY_HEADER]: await idempotencyKey(options.idempotencyKey) },
    }))());
  }

  get(bookingId: number): Promise<Booking> {
    return this.#send({ method: "GET", path: `/bookings/${segment(bookingId)}`, repeatable: true });
  }

  /** One page, newest first; `nextBefore` names the next page (null: the last). */
  listPage(options: ListOptions = {}): Promise<BookingList> {
    const query: Record<string, string> = {};
    const { since, limit, externalReference, before } = options;
    if (since !== undefined && since !== null) query["since"] = since instanceof Date ? since.toISOString() : since;
    if (limit !== undefined && limit !== null) query["limit"] = String(limit);
    if (externalReference !== undefined && externalReference !== null) query["externalReference"] = externalReference;
    if (before !== undefined && before !== null) query["before"] = String(before);
    return this.#send({ method: "GET", path: "/bookings", query, repeatable: true });
  }

  /** The pages in turn, each fetched as you iterate: `for await (const page of client.bookings.pages())`.
   * A full page may have nothing after it: that empty last page is not yielded (the first
   * page always is, empty or not). */
  async *pages(options: ListOptions = {}): AsyncGenerator<BookingList, void, undefined> {
    let before = options.before;
    for (let first = true; ; first = false) {
      const page = await this.listPage({ ...options, before });
      if (!first && page.bookings.length === 0) return;
      yield page;
      if (page.nextBefore === null || page.nextBefore === undefined) return;
      before = page.nextBefore;
    }
  }

  /** Every booking the API created since `since` (default: the last 7 days), newest first,
   * fetched `limit` to a page as you iterate: `for await (const booking of client.bookings.list())`. */
  async *list(options: ListOptions = {}): AsyncGenerator<Booking, void, undefined> {
    for await (const page of this.pages(options)) yield* page.bookings;
  }

  /** Change dates, rooms, guest or notes (a JSON merge patch), all or nothing. With
   * `ifMatch` (the booking's `revision`, or its ETag) only that revision is changed. */
  modify(bookingId: number, patch: BookingPatchIn, options: ModifyOptions = {}): Promise<Booking> {
    return this.#send((async (): Promise<Call> => {
      const headers: Record<string, string> = {
        [IDEMPOTENCY_HEADER]: await idempotencyKey(options.idempotencyKey),
        "content-type": "application/merge-patch+json",
      };
      const { ifMatch } = options;
      if (ifMatch !== undefined && ifMatch !== null) {
        // A revision number, or an ETag as the service sent it.
        headers["if-match"] = typeof ifMatch === "number" ? `"${ifMatch}"` : ifMatch;
      }
      return { method: "PATCH", path: `/bookings/${segment(bookingId)}`, body: patch, headers, repeatable: true };
    })());
  }

  /** Cancel the whole booking; a cancelled one answers again with `replay` true. */
  cancel(bookingId: number, reason?: string): Promise<Booking> {
    const body = reason === undefined || reason === null ? {} : { reason };
    return this.#send({ method: "POST", path: `/bookings/${segment(bookingId)}/cancel`, body, repeatable: true });
  }
}

/** `client.testHelpers`, test keys only (`cak_test_...`): make the test record's outside
 * world happen. Never retried after a dropped connection: a simulated OTA booking sent
 * twice is two bookings. */
export class TestHelpers {
  readonly #send: Send;

  /** @internal */
  constructor(send: Send) {
    this.#send = send;
  }

  #post<T>(path: string, body: unknown = {}): Promise<T> {
    return this.#send({ method: "POST", path: `/test-helpers${path}`, body, repeatable: false });
  }

  /** An OTA booking arrives through the test sandbox and the real intake. */
  otaBooking(body: TestOtaBookingIn): Promise<TestOtaRevision> {
    return this.#post("/ota-bookings", body);
  }

  /** The OTA changes the booking (any field of its creation). */
  otaModify(reference: string, change: OtaBookingChangeIn): Promise<TestOtaRevision> {
    return this.#post(`/ota-bookings/${segment(reference)}/modify`, change);
  }

  /** The OTA cancels the booking. */
  otaCancel(reference: string): Promise<TestOtaRevision> {
    return this.#post(`/ota-bookings/${segment(reference)}/cancel`);
  }

  /** The front desk checks the booking in. */
  checkIn(bookingId: number): Promise<TestCheckIn> {
    return this.#post(`/bookings/${segment(bookingId)}/check-in`);
  }

  /** The test sandbox answers this record's next `count` ARI calls with a fault (`ok` disarms). */
  channelFaults(mode: TestFaultsIn["mode"], count = 1): Promise<TestFaults> {
    return this.#post("/channel-manager/faults", { mode, count });
  }

  /** The test record emptied (ARI, batches, bookings, events); keys and endpoints stay. */
  reset(): Promise<TestReset> {
    return this.#post("/reset");
  }
}

// ---- the client -----------------------------------------------------------------------------

interface Shared {
  readonly baseUrl: string;
  readonly apiKey: string;
  readonly timeout: number;
  readonly fetch: typeof fetch;
  readonly sleep: (ms: number) => Promise<void>;
  readonly now: () => number;
  readonly onRetry: ((retry: RetryInfo) => void) | undefined;
  rateLimit: RateLimit | null;
  lastResponse: LastResponse | null;
}

function checkRetries(maxRetries: number, maxWait: number): void {
  if (!Number.isInteger(maxRetries) || maxRetries < 0) throw new RangeError("maxRetries is a whole number, 0 or more");
  if (typeof maxWait !== "number" || !(maxWait >= 0)) throw new RangeError("maxWait is seconds, 0 or more");
}

/**
 * The Connect API. Every method returns a promise; an answer other than 2xx throws an
 * ApiError subclass by its `data.code`, no answer an ApiConnectionError.
 *
 * `maxRetries`: how many times a 429, a 503 or a dropped connection is tried again (per
 * client; `withOptions` for one call). `maxWait`: the longest wait (seconds) the client
 * accepts; a 429 asking more throws RateLimitedError at once, with the wait in it.
 */
export class Client {
  readonly baseUrl: string;
  readonly maxRetries: number;
  readonly maxWait: number;
  readonly availability: Availability;
  readonly rates: Rates;
  readonly restrictions: Restrictions;
  readonly bookings: Bookings;
  readonly testHelpers: TestHelpers;
  // Private: the key never shows in a log, console.log(client) or JSON.stringify(client).
  readonly #shared: Shared;

  constructor(options: ClientOptions);
  /** @internal */
  constructor(options: ClientOptions, shared: Shared);
  constructor(options: ClientOptions, shared?: Shared) {
    if (options === null || typeof options !== "object") throw new TypeError("new Client({ baseUrl, apiKey })");
    const maxRetries = options.maxRetries ?? DEFAULT_MAX_RETRIES;
    const maxWait = options.maxWait ?? DEFAULT_MAX_WAIT;
    checkRetries(maxRetries, maxWait);
    if (shared === undefined) {
      if (typeof options.apiKey !== "string" || options.apiKey === "") throw new TypeError("apiKey: the property's key");
      if (typeof options.baseUrl !== "string") throw new TypeError("baseUrl: where the service answers");
      const baseUrl = options.baseUrl.replace(/\/+$/, "");
      try {
        new URL(baseUrl + PREFIX);
      } catch {
        throw new TypeError(`baseUrl is not a URL: ${JSON.stringify(options.baseUrl)}`);
      }
      const timeout = options.timeout ?? DEFAULT_TIMEOUT;
      if (!(timeout > 0)) throw new RangeError("timeout is seconds, more than 0");
      const given = options.fetch;
      shared = {
        baseUrl, apiKey: options.apiKey, timeout,
        // Called unbound: a browser's fetch refuses to run with `this` another object.
        fetch: given ?? ((input, init) => globalThis.fetch(input, init)),
        sleep: options.sleep ?? defaultSleep,
        now: options.now ?? defaultNow,
        onRetry: options.onRetry,
        rateLimit: null, lastResponse: null,
      };
    }
    this.#shared = shared;
    this.baseUrl = shared.baseUrl;
    this.maxRetries = maxRetries;
    this.maxWait = maxWait;
    const send: Send = <T>(call: Call | Promise<Call>) => this.#send<T>(call);
    this.availability = new Availability(send, "availability");
    this.rates = new Rates(send, "rates");
    this.restrictions = new Restrictions(send, "restrictions");
    this.bookings = new Bookings(send);
    this.testHelpers = new TestHelpers(send);
  }

  /** What the last answer said of the budgets (errors included); null before the first. */
  get rateLimit(): RateLimit | null {
    return this.#shared.rateLimit;
  }

  /** The last answer's status, request id, replay flag, idempotency key, ETag and tries. */
  get lastResponse(): LastResponse | null {
    return this.#shared.lastResponse;
  }

  /** This client with other retry settings, for a call or a few: `client.withOptions({
   * maxRetries: 0 }).rates.set(...)`. It shares the settings, `rateLimit` and `lastResponse`. */
  withOptions(options: RetryOptions): Client {
    return new Client({
      baseUrl: this.baseUrl, apiKey: "",
      maxRetries: options.maxRetries ?? this.maxRetries, maxWait: options.maxWait ?? this.maxWait,
    }, this.#shared);
  }

  toString(): string {
    return `Client(baseUrl=${this.baseUrl})`;
  }

  toJSON(): { baseUrl: string; maxRetries: number; maxWait: number } {
    return { baseUrl: this.baseUrl, maxRetries: this.maxRetries, maxWait: this.maxWait };
  }

  // ---- the routes without a resource ----

  /** The key's property, its scopes and products. */
  property(): Promise<Property> {
    return this.#send({ method: "GET", path: "/property", repeatable: true });
  }

  /** Room types and rate plans with their ids. */
  catalog(): Promise<Catalog> {
    return this.#send({ method: "GET", path: "/catalog", repeatable: true });
  }

  /** Whether the sent data reached the channels. Poll no more often than every 15 s. */
  sync(): Promise<Sync> {
    return this.#send({ method: "GET", path: "/sync", repeatable: true });
  }

  /** One write batch's state. Poll no more often than every 15 s, or use `waitForBatch`;
   * with `wait` (seconds, up to 30) the service answers once the batch is done or then. */
  batch(batchId: string, wait = 0): Promise<Batch> {
    const query = wait > 0 ? { wait: String(wait) } : undefined;
    return this.#send({ method: "GET", path: `/batches/${segment(batchId)}`, query, repeatable: true });
  }

  /** The batch once it is `completed`, asked with `?wait=`: each request waits at the
   * service until the batch is done (or up to 20 s), so the answer comes within a second of
   * the batch; BatchTimeoutError, with the last batch read, after `timeout` seconds. Against
   * a service that answers at once, polls every `interval` seconds (never below 15). */
  async waitForBatch(batchId: string, options: WaitForBatchOptions = {}): Promise<Batch> {
    const timeout = options.timeout ?? 600;
    const interval = Math.max(options.interval ?? MIN_POLL_SECONDS, MIN_POLL_SECONDS);
    const { now, sleep } = this.#shared;
    const deadline = now() + timeout * 1000;
    for (;;) {
      const asked = now();
      const most = Math.min(BATCH_WAIT_SECONDS, this.#shared.timeout - 5, (deadline - asked) / 1000);
      const whole = Math.floor(most);
      const wait = whole >= MIN_BATCH_WAIT ? whole : 0;
      const batch = await this.batch(batchId, wait);
      if (batch.status === "completed") return batch;
      const at = now();
      const left = deadline - at;
      const waited = wait > 0 && at - asked >= (wait - EARLY_BY_SECONDS) * 1000;
      if (left <= 0 || (!waited && left < interval * 1000)) {
        throw new BatchTimeoutError(
          `batch ${batchId} still ${batch.status} after ${timeout} s (${batch.pendingCells} cells pending)`, batch);
      }
      if (!waited) await sleep(interval * 1000); // the service did not hold the answer: the contract's pace
    }
  }

  // ---- one call, with its retries ----

  async #send<T>(pending: Call | Promise<Call>): Promise<T> {
    const call = await pending;
    const shared = this.#shared;
    const url = new URL(shared.baseUrl + PREFIX + call.path);
    for (const [name, value] of Object.entries(call.query ?? {})) url.searchParams.set(name, value);
    const headers: Record<string, string> = { accept: "application/json", ...call.headers };
    let body: string | undefined;
    if (call.body !== undefined) {
      body = JSON.stringify(call.body);
      headers["content-type"] ??= "application/json";
    }
    headers["authorization"] = `Bearer ${shared.apiKey}`;
    const where = `${call.method} ${PREFIX}${call.path}`;
    let attempt = 0;
    for (;;) {
      let response: Response;
      let text: string;
      const abort = new AbortController();
      let timedOut = false;
      const timer = setTimeout(() => {
        timedOut = true;
        abort.abort();
      }, shared.timeout * 1000);
      try {
        // Never followed (fetch's default is to follow): the service does not redirect, and a
        // redirect to another origin would carry the body there, and on some runtimes the key.
        response = await shared.fetch(url.toString(),
          { method: call.method, headers, body, signal: abort.signal, redirect: "manual" });
        text = await response.text();
      } catch (failure) {
        if (attempt < this.maxRetries && mayRetryConnection(call, failure)) {
          const wait = backoff(attempt);
          tell(shared, call, `no answer (${describe(failure)})`, wait, attempt);
          await shared.sleep(wait * 1000);
          attempt += 1;
          continue;
        }
        const what = timedOut ? `no answer within ${shared.timeout} s` : describe(failure);
        throw new ApiConnectionError(`${where}: ${what}`, { cause: failure, idempotencyKey: keyOf(call) });
      } finally {
        clearTimeout(timer);
      }
      const rateLimit = RateLimit.fromHeaders(response.headers);
      shared.rateLimit = rateLimit;
      shared.lastResponse = Object.freeze({
        status: response.status,
        requestId: response.headers.get("x-request-id"),
        idempotentReplay: response.headers.get("x-idempotent-replay") === "true",
        idempotencyKey: keyOf(call),
        etag: response.headers.get("etag"),
        attempts: attempt + 1,
      });
      if (response.type === "opaqueredirect" || (response.status >= 300 && response.status < 400)) {
        // What answered is not the service (a proxy, a captive portal): the write may or may
        // not have been made, so the error carries its key, as UNEXPECTED_ANSWER always does.
        const location = response.headers.get("location")?.slice(0, 200);
        throw new ApiError(response.status, "UNEXPECTED_ANSWER",
          `a redirect${location ? ` to ${location}` : ""}, not followed: the service never redirects`, {
            requestId: response.headers.get("x-request-id"), rateLimit, idempotencyKey: keyOf(call),
          });
      }
      if (response.status < 400) {
        try {
          return (JSON.parse(text) as { data: T }).data;
        } catch {
          throw new ApiError(response.status, "UNEXPECTED_ANSWER", "the answer is not the service's JSON envelope", {
            requestId: response.headers.get("x-request-id"), rateLimit,
            idempotencyKey: keyOf(call),
          });
        }
      }
      const error = errorOf(response.status, response.statusText, text, response.headers, rateLimit, keyOf(call));
      if (attempt >= this.maxRetries || !mayRetry(error, attempt)) throw error;
      const { said, wait } = retryWait(error, attempt);
      // The cap judges the service's wait, not the jitter: a Retry-After of 60 s (a spent
      // minute budget) is waited by the default maxWait of 60 s.
      if (said !== null && said > this.maxWait) throw tooLong(error, said, this.maxWait);
      const waiting = Math.min(wait, this.maxWait);
      tell(shared, call, `${error.status} ${error.code}`, waiting, attempt);
      await shared.sleep(waiting * 1000);
      attempt += 1;
    }
  }
}

/** The key every try of the call carries (a keyed write's), else null. */
function keyOf(call: Call): string | null {
  return call.headers?.[IDEMPOTENCY_HEADER] ?? null;
}

function tell(shared: Shared, call: Call, reason: string, waitSeconds: number, attempt: number): void {
  shared.onRetry?.(Object.freeze({
    method: call.method, path: PREFIX + call.path, reason, waitSeconds, attempt: attempt + 2,
    idempotencyKey: keyOf(call),
  }));
}

function describe(failure: unknown): string {
  if (failure instanceof Error) {
    const cause = (failure as { cause?: unknown }).cause;
    const more = cause instanceof Error ? ` (${(cause as { code?: string }).code ?? cause.name}: ${cause.message})` : "";
    return `${failure.name}: ${failure.message}${more}`;
  }
  return String(failure);
}
