// Retries through the fault proxy (tests/clients/fault_proxy.py): a 429 waited as
// Retry-After says and tried again with the same idempotency key; a 429 after the service
// committed answered by a replay; a 503; connections dropped before and after; the cap on
// a wait. The proxy counts the tries the service and the client never show.

import assert from "node:assert/strict";
import { beforeEach, test } from "node:test";

import {
  ApiConnectionError,
  Client,
  RateLimitedError,
  ServiceUnavailableError,
  type ClientOptions,
  type RetryInfo,
} from "@connectapi/client";

import { day, fixture, recordingSleep } from "./fixture.js";

const keyed = fixture.keys.retries;

interface Seen {
  method: string;
  path: string;
  idempotency_key: string | null;
  answered: number | string;
  replay: boolean;
}

interface Fault {
  kind: "429-before" | "429-after" | "503-before" | "drop-before" | "drop-after";
  match: string;
  retryAfter?: number;
  count?: number;
}

async function control(path: string, body?: unknown): Promise<Response> {
  const answer = await fetch(`${fixture.proxyUrl}/__proxy/${path}`, body === undefined
    ? { method: path === "seen" ? "GET" : "POST" }
    : { method: "POST", body: JSON.stringify(body), headers: { "content-type": "application/json" } });
  assert.ok(answer.ok, `proxy ${path}: ${answer.status}`);
  return answer;
}

const arm = async (...faults: Fault[]): Promise<void> => void (await control("faults", faults));

async function seen(method: string, pathEnd: string): Promise<Seen[]> {
  const all = (await (await control("seen")).json()) as Seen[];
  return all.filter((s) => s.method === method && s.path.split("?")[0]!.endsWith(pathEnd));
}

function proxied(options: Partial<ClientOptions> = {}): { client: Client; waits: number[] } {
  const { sleep, waits } = recordingSleep();
  return { client: new Client({ baseUrl: fixture.proxyUrl, apiKey: keyed.key, sleep, ...options }), waits };
}

const rate = (rateValue = "150.00") =>
  [{ ratePlanId: keyed.ratePlanId, dateFrom: day(80), dateTo: day(81), rate: rateValue, currency: "EUR" }];

beforeEach(async () => {
  await control("clear");
});

test("a 429 before the service: Retry-After waited, tried once more with the same key", async () => {
  const told: RetryInfo[] = [];
  const { client, waits } = proxied({ onRetry: (retry) => told.push(retry) });
  await arm({ kind: "429-before", match: "PUT /rates", retryAfter: 2 });
  const result = await client.rates.set(rate("151.00"));
  assert.equal(told.length, 1);
  assert.equal(told[0]!.reason, "429 RATE_LIMITED");
  assert.equal(`${told[0]!.method} ${told[0]!.path} ${told[0]!.attempt}`, "PUT /api/v1/connect-api/v1/rates 2");
  assert.equal(told[0]!.waitSeconds * 1000, waits[0]);
  assert.ok(!JSON.stringify(told).includes(keyed.key));
  assert.match(result.batchId, /\S/);
  assert.equal(waits.length, 1);
  assert.ok(waits[0]! >= 2000 && waits[0]! <= 2250, `waited ${waits[0]} ms for Retry-After: 2`);
  const tries = await seen("PUT", "/rates");
  assert.deepEqual(tries.map((t) => t.answered), [429, 202]);
  assert.ok(tries[0]!.idempotency_key);
  assert.equal(tries[1]!.idempotency_key, tries[0]!.idempotency_key);
  assert.equal(told[0]!.idempotencyKey, tries[0]!.idempotency_key);
  assert.equal(client.lastResponse?.idempotencyKey, tries[0]!.idempotency_key);
  assert.equal(client.lastResponse?.attempts, 2);
  assert.equal(client.lastResponse?.idempotentReplay, false);
});

test("a 429 after the service committed: the retry is answered by the replay", async () => {
  const { client, waits } = proxied();
  await arm({ kind: "429-after", match: "PUT /rates", retryAfter: 1 });
  const result = await client.rates.set(rate("152.00"));
  const tries = await seen("PUT", "/rates");
  assert.deepEqual(tries.map((t) => [t.answered, t.replay]), [[429, false], [202, true]]);
  assert.equal(tries[1]!.idempotency_key, tries[0]!.idempotency_key);
  assert.equal(client.lastResponse?.idempotentReplay, true);
  assert.equal(client.lastResponse?.attempts, 2);
  assert.equal(waits.length, 1);
  assert.ok(waits[0]! >= 1000 && waits[0]! <= 1200);
  assert.match(result.batchId, /\S/);
});

test("a 503 is tried again; with no retries left it throws ServiceUnavailableError", async () => {
  const { client, waits } = proxied();
  await arm({ kind: "503-before", match: "GET /property", retryAfter: 1 });
  const property = await client.property();
  assert.equal(property.id, keyed.propertyId);
  assert.deepEqual((await seen("GET", "/property")).map((t) => t.answered), [503, 200]);
  assert.equal(waits.length, 1);

  await arm({ kind: "503-before", match: "GET /catalog", retryAfter: 1 });
  await assert.rejects(client.withOptions({ maxRetries: 0 }).catalog(), (error: unknown) => {
    assert.ok(error instanceof ServiceUnavailableError);
    assert.equal(error.status, 503);
    assert.equal(error.code, "SERVICE_UNAVAILABLE");
    assert.equal(error.retryAfter, 1);
    return true;
  });
  assert.equal((await seen("GET", "/catalog")).length, 1);
});

test("retries run out: RateLimitedError after maxRetries + 1 tries, each with the same key", async () => {
  const { client, waits } = proxied({ maxRetries: 2 });
  await arm({ kind: "429-before", match: "PUT /availability", retryAfter: 1, count: 3 });
  await assert.rejects(
    client.availability.set([{ roomTypeId: keyed.roomTypeId, dateFrom: day(80), dateTo: day(80), available: 3 }]),
    (error: unknown) => error instanceof RateLimitedError && error.scope === "writes" && error.retryAfter === 1);
  const tries = await seen("PUT", "/availability");
  assert.equal(tries.length, 3);
  assert.equal(new Set(tries.map((t) => t.idempotency_key)).size, 1);
  assert.equal(waits.length, 2);
});

test("a connection dropped after the service wrote: the PUT is tried again and answered by the replay", async () => {
  const { client, waits } = proxied();
  await arm({ kind: "drop-after", match: "PUT /availability" });
  const result = await client.availability.set(
    [{ roomTypeId: keyed.roomTypeId, dateFrom: day(81), dateTo: day(82), available: 4 }]);
  assert.match(result.batchId, /\S/);
  const tries = await seen("PUT", "/availability");
  assert.deepEqual(tries.map((t) => [t.answered, t.replay]), [["dropped", false], [202, true]]);
  assert.equal(tries[1]!.idempotency_key, tries[0]!.idempotency_key);
  assert.equal(client.lastResponse?.idempotentReplay, true);
  assert.equal(waits.length, 1);
  assert.ok(waits[0]! <= 500, "a dropped connection: jittered backoff, 0.5 s at most first");
});

test("a write that threw is sent again with its error's key and written once", async () => {
  const { client } = proxied({ maxRetries: 0 });
  const entry = (available: number) =>
    [{ roomTypeId: keyed.roomTypeId, dateFrom: day(83), dateTo: day(83), available }];
  await arm({ kind: "drop-after", match: "PUT /availability" }); // committed, the answer lost
  let dropped: ApiConnectionError | undefined;
  await client.availability.set(entry(5)).catch((error: unknown) => {
    if (error instanceof ApiConnectionError) dropped = error;
  });
  await arm({ kind: "429-before", match: "PUT /availability", retryAfter: 5 }); // refused before anything
  let limited: RateLimitedError | undefined;
  await client.availability.set(entry(6)).catch((error: unknown) => {
    if (error instanceof RateLimitedError) limited = error;
  });
  assert.ok(dropped && limited, "both writes threw");
  const first = await seen("PUT", "/availability");
  assert.deepEqual(first.map((t) => t.idempotency_key), [dropped.idempotencyKey, limited.idempotencyKey]);
  assert.notEqual(dropped.idempotencyKey, limited.idempotencyKey);

  await client.availability.set(entry(5), { idempotencyKey: dropped.idempotencyKey! });
  assert.equal(client.lastResponse?.idempotentReplay, true); // the first try's answer: one write
  await client.availability.set(entry(6), { idempotencyKey: limited.idempotencyKey! });
  assert.equal(client.lastResponse?.idempotentReplay, false); // written now, once
  const again = (await seen("PUT", "/availability")).slice(2);
  assert.deepEqual(again.map((t) => [t.answered, t.replay]), [[202, true], [202, false]]);
});

test("a connection dropped before a GET: tried again", async () => {
  const { client } = proxied();
  await arm({ kind: "drop-before", match: "GET /sync" });
  const sync = await client.sync();
  assert.ok(sync.inventory);
  assert.deepEqual((await seen("GET", "/sync")).map((t) => t.answered), ["dropped", 200]);
});

test("a connection dropped after a test helper's POST: not tried again (it is not repeatable)", async () => {
  const { client, waits } = proxied();
  await arm({ kind: "drop-after", match: "POST /test-helpers/ota-bookings" });
  await assert.rejects(
    client.testHelpers.otaBooking({
      roomTypeId: keyed.roomTypeId, ratePlanId: keyed.ratePlanId, checkIn: day(90), checkOut: day(91),
      guest: { name: "Once Only" },
    }),
    (error: unknown) => {
      assert.ok(error instanceof ApiConnectionError, String(error));
      assert.match(error.message, /POST \/api\/v1\/connect-api\/v1\/test-helpers\/ota-bookings/);
      assert.ok(!error.message.includes(keyed.key));
      return true;
    });
  assert.equal((await seen("POST", "/test-helpers/ota-bookings")).length, 1);
  assert.deepEqual(waits, []);
});

test("the cap: a Retry-After of 3600 s beyond maxWait throws at once, with the wait", async () => {
  const { client, waits } = proxied();
  await arm({ kind: "429-before", match: "PUT /rates", retryAfter: 3600 });
  await assert.rejects(client.rates.set(rate("153.00")), (error: unknown) => {
    assert.ok(error instanceof RateLimitedError, String(error));
    assert.equal(error.retryAfter, 3600);
    assert.equal(error.scope, "writes");
    assert.match(error.message, /maxWait 60 s/);
    return true;
  });
  assert.deepEqual(waits, []);
  assert.equal((await seen("PUT", "/rates")).length, 1);
  // A wider maxWait for one call: it waits.
  await arm({ kind: "429-before", match: "PUT /rates", retryAfter: 90 });
  await client.withOptions({ maxWait: 120 }).rates.set(rate("154.00"));
  assert.equal(waits.length, 1);
  assert.ok(waits[0]! >= 90_000);
});

test("a key of the caller's own goes with every try; a malformed one is refused before sending", async () => {
  const { client } = proxied();
  await arm({ kind: "503-before", match: "PUT /restrictions", retryAfter: 1 });
  await client.restrictions.set([{ ratePlanId: keyed.ratePlanId, dateFrom: day(83), dateTo: day(83), stopSell: true }],
    { idempotencyKey: "ts-own-key-0001" });
  assert.deepEqual((await seen("PUT", "/restrictions")).map((t) => t.idempotency_key),
    ["ts-own-key-0001", "ts-own-key-0001"]);
  await assert.rejects(client.rates.set(rate(), { idempotencyKey: "short" }), TypeError);
  await assert.rejects(client.rates.set(rate(), { idempotencyKey: "has spaces in it" }), TypeError);
  assert.equal((await seen("PUT", "/rates")).length, 0);
});
