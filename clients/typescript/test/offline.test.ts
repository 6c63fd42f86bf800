// The client's rules against a fetch of the test's own (no service): the headers it sends,
// where a wait comes from, what is retried and what not, timeouts, RateLimit parsing.

import assert from "node:assert/strict";
import { test } from "node:test";

import {
  ApiConnectionError,
  ApiError,
  BatchTimeoutError,
  Client,
  IdempotencyError,
  InternalServerError,
  InvalidRequestError,
  RateLimit,
  RateLimitedError,
  type ClientOptions,
} from "@connectapi/client";

import { recordingSleep } from "./fixture.js";

interface Sent {
  url: string;
  method: string;
  headers: Record<string, string>;
  body: string | undefined;
}

type Answer = Response | Error | (() => Promise<Response>);

/** A client whose fetch answers `answers` in turn and records what was sent. */
function scripted(answers: Answer[], options: Partial<ClientOptions> = {}) {
  const sent: Sent[] = [];
  const { sleep, waits } = recordingSleep();
  const fetch = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    sent.push({
      url: String(input), method: init?.method ?? "GET",
      headers: Object.fromEntries(new Headers(init?.headers).entries()), body: init?.body as string | undefined,
    });
    const next = answers.shift();
    if (next === undefined) throw new Error("no answer scripted");
    if (next instanceof Error) throw next;
    return typeof next === "function" ? next() : next;
  };
  const client = new Client({ baseUrl: "http://service.test/", apiKey: "cak_test_SECRET123", fetch, sleep, ...options });
  return { client, sent, waits };
}

function answer(status: number, data: unknown, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify({ statuscode: status, message: `answer ${status}`, data }),
    { status, headers: { "content-type": "application/json", ...headers } });
}

const limited = (headers: Record<string, string> = {}, data: Record<string, unknown> = {}) =>
  answer(429, { code: "RATE_LIMITED", scope: "requests", ...data }, headers);

function refused(code: string): Error {
  return new TypeError("fetch failed", { cause: Object.assign(new Error(`connect ${code}`), { code }) });
}

test("a call: its URL, headers, body and answer", async () => {
  const { client, sent } = scripted([answer(202, { batchId: "b1", resource: "rates" },
    { "x-request-id": "req-1", etag: '"3"', "ratelimit-policy": '"writes";q=30;w=60', ratelimit: '"writes";r=29;t=60' })]);
  const result = await client.rates.set([{ ratePlanId: 1, dateFrom: "2030-01-01", dateTo: "2030-01-02", rate: "1.00",
    currency: "EUR" }]);
  assert.equal(result.batchId, "b1");
  const [one] = sent;
  assert.equal(one!.url, "http://service.test/api/v1/connect-api/v1/rates");
  assert.equal(one!.method, "PUT");
  assert.equal(one!.headers["authorization"], "Bearer cak_test_SECRET123");
  assert.equal(one!.headers["content-type"], "application/json");
  assert.equal(one!.headers["accept"], "application/json");
  assert.match(one!.headers["x-idempotency-key"]!, /^[A-Za-z0-9_-]{10,64}$/);
  assert.deepEqual(JSON.parse(one!.body!), { updates: [{ ratePlanId: 1, dateFrom: "2030-01-01", dateTo: "2030-01-02",
    rate: "1.00", currency: "EUR" }] });
  assert.deepEqual(client.lastResponse, { status: 202, requestId: "req-1", idempotentReplay: false,
    idempotencyKey: one!.headers["x-idempotency-key"], etag: '"3"', attempts: 1 });
  assert.deepEqual(client.rateLimit?.budgets["writes"], { name: "writes", quota: 30, window: 60, remaining: 29,
    reset: 60 });
});

test("a success answer not from the service: UNEXPECTED_ANSWER with the write's key", async () => {
  const { client, sent } = scripted([new Response("<html>welcome to the hotel wifi</html>",
    { status: 200, headers: { "content-type": "text/html" } })]);
  await assert.rejects(
    client.rates.set([{ ratePlanId: 1, dateFrom: "2030-01-01", dateTo: "2030-01-01", rate: "1.00", currency: "EUR" }]),
    (error: unknown) => {
      assert.ok(error instanceof ApiError, String(error));
      assert.equal(error.code, "UNEXPECTED_ANSWER");
      assert.equal(error.idempotencyKey, sent[0]!.headers["x-idempotency-key"]);
      return true;
    });
});

test("query strings, path segments, merge-patch and If-Match", async () => {
  const { client, sent } = scripted([answer(200, {}), answer(200, {}), answer(200, {}), answer(200, {}),
    answer(200, {})]);
  await client.availability.get("2030-01-01", "2030-01-31");
  await client.bookings.listPage({ since: new Date("2030-01-01T00:00:00Z"), limit: 10, externalReference: "A B/1",
    before: 77 });
  await client.bookings.modify(5, { notes: "n" }, { ifMatch: 4 });
  await client.bookings.modify(5, { notes: "n" }, { ifMatch: 'W/"4"' });
  await client.batch("a/b");
  assert.equal(sent[0]!.url, "http://service.test/api/v1/connect-api/v1/availability?from=2030-01-01&to=2030-01-31");
  const query = new URL(sent[1]!.url).searchParams;
  assert.equal(query.get("since"), "2030-01-01T00:00:00.000Z");
  assert.equal(query.get("limit"), "10");
  assert.equal(query.get("externalReference"), "A B/1");
  assert.equal(query.get("before"), "77");
  assert.equal(sent[2]!.method, "PATCH");
  assert.equal(sent[2]!.headers["content-type"], "application/merge-patch+json");
  assert.equal(sent[2]!.headers["if-match"], '"4"');
  assert.equal(sent[3]!.headers["if-match"], 'W/"4"');
  assert.notEqual(sent[2]!.headers["x-idempotency-key"], sent[3]!.headers["x-idempotency-key"]);
  assert.ok(sent[4]!.url.endsWith("/batches/a%2Fb"));
});

test("the wait: Retry-After, else retryAfterSeconds, else the spent budget's t, else backoff", async () => {
  const { client, waits } = scripted([
    limited({ "retry-after": "3" }),
    limited({}, { retryAfterSeconds: 5 }),
    limited({ ratelimit: '"requests";r=0;t=7, "writes";r=4;t=50' }),
    answer(200, { id: 1 }),
  ]);
  assert.deepEqual(await client.property(), { id: 1 });
  assert.equal(waits.length, 3);
  assert.ok(waits[0]! >= 3000 && waits[0]! <= 3350, `${waits[0]}`);
  assert.ok(waits[1]! >= 5000 && waits[1]! <= 5550, `${waits[1]}`);
  assert.ok(waits[2]! >= 7000 && waits[2]! <= 7750, `${waits[2]}`);
  assert.equal(client.lastResponse?.attempts, 4);

  const bare = scripted([answer(503, { code: "SERVICE_UNAVAILABLE" }), answer(200, {})]);
  await bare.client.sync();
  assert.ok(bare.waits[0]! >= 0 && bare.waits[0]! <= 500);
});

test("what is not retried: 400, 409 in flight on the first try, 500; in flight on a retry is", async () => {
  const first = scripted([answer(400, { code: "VALIDATION", details: [{ path: "$", message: "m" }] })]);
  await assert.rejects(first.client.property(), InvalidRequestError);
  const inFlight = scripted([answer(409, { code: "IDEMPOTENCY_IN_FLIGHT" })]);
  await assert.rejects(inFlight.client.rates.set([]), IdempotencyError);
  const internal = scripted([answer(500, { code: "INTERNAL" })]);
  await assert.rejects(internal.client.property(), InternalServerError);
  const retried = scripted([answer(503, { code: "SERVICE_UNAVAILABLE" }), answer(409, { code: "IDEMPOTENCY_IN_FLIGHT" }),
    answer(202, { batchId: "b" })]);
  await retried.client.rates.set([]);
  assert.equal(retried.sent.length, 3);
  assert.equal(new Set(retried.sent.map((s) => s.headers["x-idempotency-key"])).size, 1);
  // An answer without the envelope: typed by its status.
  const bare = scripted([new Response("<html>too big</html>", { status: 413, statusText: "Payload Too Large" }),
    new Response("oops", { status: 502 })]);
  await assert.rejects(bare.client.property(), (e: unknown) => e instanceof ApiError && e.code === "PAYLOAD_TOO_LARGE");
  await assert.rejects(bare.client.property(), (e: unknown) => e instanceof InternalServerError && e.status === 502);
});

test("maxRetries 0 and the cap; withOptions for one call", async () => {
  const none = scripted([limited({ "retry-after": "1" })], { maxRetries: 0 });
  await assert.rejects(none.client.property(), RateLimitedError);
  assert.deepEqual(none.waits, []);
  const capped = scripted([limited({ "retry-after": "61" })]);
  await assert.rejects(capped.client.property(), (e: unknown) =>
    e instanceof RateLimitedError && e.retryAfter === 61 && /more than maxWait 60 s/.test(e.message));
  assert.deepEqual(capped.waits, []);
  // A Retry-After of exactly maxWait is waited: the jitter never pushes it over the cap.
  const edge = scripted([limited({ "retry-after": "60" }), answer(200, {})]);
  await edge.client.property();
  assert.equal(edge.waits[0], 60_000);
  const wide = scripted([limited({ "retry-after": "61" }), answer(200, {})]);
  await wide.client.withOptions({ maxWait: 90 }).property();
  assert.equal(wide.waits.length, 1);
  assert.equal(wide.client.lastResponse?.attempts, 2);
});

test("connection failures: repeatable calls retried, a test helper only when the connection was refused", async () => {
  const read = scripted([refused("ECONNRESET"), answer(200, {})]);
  await read.client.property();
  assert.equal(read.sent.length, 2);
  const helper = scripted([refused("ECONNRESET")]);
  await assert.rejects(helper.client.testHelpers.reset(), (e: unknown) =>
    e instanceof ApiConnectionError && /ECONNRESET/.test(e.message) && !e.message.includes("SECRET123"));
  assert.equal(helper.sent.length, 1);
  const never = scripted([refused("ECONNREFUSED"), answer(200, {})]);
  await never.client.testHelpers.reset();
  assert.equal(never.sent.length, 2);
  const spent = scripted([refused("ECONNRESET"), refused("ECONNRESET")], { maxRetries: 1 });
  await assert.rejects(spent.client.bookings.cancel(1), ApiConnectionError);
  assert.equal(spent.sent.length, 2);
});

test("a timeout aborts the try: ApiConnectionError naming it", async () => {
  const hanging = (): Promise<Response> => new Promise(() => undefined);
  const { client } = scripted([], {
    timeout: 0.05, maxRetries: 1,
    fetch: (_input, init) => new Promise((_resolve, reject) => {
      void hanging();
      init?.signal?.addEventListener("abort", () => reject(new DOMException("aborted", "AbortError")));
    }),
  });
  await assert.rejects(client.property(), (e: unknown) =>
    e instanceof ApiConnectionError && /no answer within 0.05 s/.test(e.message));
});

test("RateLimit: both headers, one of them, quoted and bare names, garbage", () => {
  const both = RateLimit.fromHeaders(new Headers({
    "RateLimit-Policy": '"requests";q=120;w=60, "writes";q=30;w=60',
    RateLimit: '"requests";r=100;t=12, "writes";r=3;t=40',
  }));
  assert.equal(both.remaining, 3);
  assert.equal(both.reset, 40);
  assert.deepEqual(Object.keys(both.budgets), ["requests", "writes"]);
  const state = RateLimit.fromHeaders({ ratelimit: 'requests;r=0;t=5, "writes";r=0;t=9' });
  assert.equal(state.budgets["requests"]?.quota, null);
  assert.equal(state.remaining, 0);
  assert.equal(state.reset, 9);
  const none = RateLimit.fromHeaders({ ratelimit: "%%% not a list" });
  assert.deepEqual(none.budgets, {});
  assert.equal(none.remaining, null);
  assert.equal(none.reset, null);
  assert.equal(JSON.parse(JSON.stringify(both)).remaining, 3);
});

test("waitForBatch against a service that answers at once keeps the contract's pace", async () => {
  // A version without `wait` answers a pending batch at once: the client polls every 15 s.
  const pending = () => answer(200, { batchId: "b1", resource: "rates", status: "pending", pendingCells: 1 });
  let clock = 0;
  const waits: number[] = [];
  const sent: string[] = [];
  const client = new Client({
    baseUrl: "http://service.test/", apiKey: "cak_test_SECRET123", now: () => clock,
    sleep: async (ms) => { waits.push(ms); clock += ms; },
    fetch: async (input) => { sent.push(new URL(String(input)).searchParams.get("wait") ?? ""); return pending(); },
  });
  await assert.rejects(client.waitForBatch("b1", { timeout: 40 }), BatchTimeoutError);
  assert.deepEqual(waits, [15_000, 15_000]);
  assert.deepEqual(sent, ["20", "20", "10"]); // each asks the service to wait: 20 s at most, what is left
});

