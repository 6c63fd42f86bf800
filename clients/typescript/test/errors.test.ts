// Typed errors, one class per family of `data.code`, each with the status, the code,
// details, the request id and the RateLimit state; and the key never in a message.

import assert from "node:assert/strict";
import { inspect } from "node:util";
import { test } from "node:test";

import {
  ApiError,
  AuthenticationError,
  Client,
  ConflictError,
  ConnectApiError,
  IdempotencyError,
  InvalidRequestError,
  NotFoundError,
  NothingAcceptedError,
  PayloadTooLargeError,
  PermissionDeniedError,
  type RateEntry,
} from "@connectapi/client";

import { clientOf, day, fixture, stay } from "./fixture.js";

const keyed = fixture.keys.errors;
const client = clientOf(keyed);

/** `promise` throws an error of `kind` with `status` and `code`; answers it. */
async function throws<E extends ApiError>(promise: Promise<unknown>, kind: abstract new (...args: never[]) => E,
                                          status: number, code: string): Promise<E> {
  try {
    await promise;
  } catch (error) {
    assert.ok(error instanceof kind, `${String(error)} is not a ${kind.name}`);
    assert.ok(error instanceof ApiError && error instanceof ConnectApiError && error instanceof Error);
    assert.equal(error.status, status, String(error));
    assert.equal(error.code, code, String(error));
    assert.equal(error.name, kind.name);
    assert.equal(error.message, `${status} ${code}: ${error.serviceMessage}`);
    assert.ok(!error.message.includes(keyed.key) && !inspect(error).includes(keyed.key));
    return error;
  }
  assert.fail(`no ${kind.name}`);
}

const rates = (rate: string): RateEntry[] =>
  [{ ratePlanId: keyed.ratePlanId, dateFrom: day(140), dateTo: day(141), rate, currency: "EUR" }];

test("401 a bad key: AuthenticationError", async () => {
  const bad = new Client({ baseUrl: fixture.url, apiKey: "cak_test_" + "0".repeat(40) });
  const error = await throws(bad.property(), AuthenticationError, 401, "API_KEY_INVALID");
  assert.match(error.requestId ?? "", /\S/);
  assert.ok(!error.message.includes("cak_test_0000"));
});

test("403 a key without the scope: PermissionDeniedError, and the RateLimit state on the error", async () => {
  const narrow = new Client({ baseUrl: fixture.url, apiKey: fixture.narrowKey });
  assert.equal((await narrow.property()).scopes.includes("ari:write"), false);
  const error = await throws(narrow.rates.set(rates("120.00")), PermissionDeniedError, 403, "SCOPE_MISSING");
  assert.equal(narrow.lastResponse?.status, 403);
  assert.ok(error.rateLimit !== null && error.rateLimit === narrow.rateLimit);
});

test("400 VALIDATION with its details: InvalidRequestError", async () => {
  const missing = [{ ratePlanId: keyed.ratePlanId, dateFrom: day(140), dateTo: day(141), currency: "EUR" }];
  const error = await throws(client.rates.set(missing as RateEntry[]), InvalidRequestError, 400, "VALIDATION");
  assert.ok(Array.isArray(error.details) && error.details.length > 0, JSON.stringify(error.details));
  assert.ok(client.rateLimit?.budgets["writes"]);
  // The body itself where the list belongs: refused before sending.
  await assert.rejects(client.rates.set({ updates: rates("1") } as unknown as RateEntry[]), TypeError);
});

test("404 BATCH_NOT_FOUND: NotFoundError", async () => {
  const error = await throws(client.batch("nope"), NotFoundError, 404, "BATCH_NOT_FOUND");
  assert.match(error.requestId ?? "", /\S/);
  // The budgets' state on an error answer, as on a success.
  assert.equal(error.rateLimit?.budgets["requests"]?.quota, 120);
  assert.ok((error.rateLimit?.budgets["requests"]?.remaining ?? -1) >= 0);
  assert.ok(client.rateLimit === error.rateLimit);
  await throws(client.bookings.get(999_999_999), NotFoundError, 404, "BOOKING_NOT_FOUND");
});

test("409 BOOKING_NOT_CANCELLABLE after a check-in: ConflictError", async () => {
  const booking = await client.bookings.create(stay(keyed, 150));
  await client.testHelpers.checkIn(booking.bookingId);
  await throws(client.bookings.cancel(booking.bookingId, "too late"), ConflictError, 409, "BOOKING_NOT_CANCELLABLE");
});

test("409 IDEMPOTENCY_KEY_REUSED: IdempotencyError", async () => {
  const key = `ts-reused-${Date.now()}`;
  await client.rates.set(rates("121.00"), { idempotencyKey: key });
  const error = await throws(client.rates.set(rates("122.00"), { idempotencyKey: key }), IdempotencyError, 409,
    "IDEMPOTENCY_KEY_REUSED");
  assert.ok(!(error instanceof ConflictError));
  // The same key with the same body: the first answer again.
  await client.rates.set(rates("121.00"), { idempotencyKey: key });
  assert.equal(client.lastResponse?.idempotentReplay, true);
});

test("422 NOTHING_ACCEPTED: NothingAcceptedError", async () => {
  const error = await throws(client.rates.set(rates("10.00")), NothingAcceptedError, 422, "NOTHING_ACCEPTED");
  assert.ok(error.details);
});

test("413 a body over 1 MiB: PayloadTooLargeError", async () => {
  const big = { ...stay(keyed, 160), notes: "x".repeat(1_100_000) };
  await throws(client.bookings.create(big), PayloadTooLargeError, 413, "PAYLOAD_TOO_LARGE");
});

test("the key is in no message, string, inspection or JSON of the client", () => {
  for (const shown of [String(client), inspect(client, { depth: 5, showHidden: true }), JSON.stringify(client)]) {
    assert.ok(!shown.includes(keyed.key), shown);
  }
  assert.throws(() => new Client({ baseUrl: "not a url", apiKey: "k" }), TypeError);
  assert.throws(() => new Client({ baseUrl: fixture.url, apiKey: "k", maxRetries: -1 }), RangeError);
});
