// A real burst into the service's `writes` budget (30 PUTs a minute per key): without
// retries the 31st throws RateLimitedError naming the budget, with the budgets' state; with
// a retry allowed the client waits what the service said, then gives up.

import assert from "node:assert/strict";
import { test } from "node:test";

import { RateLimitedError } from "@connectapi/client";

import { clientOf, day, fixture, recordingSleep } from "./fixture.js";

const keyed = fixture.keys.burst;

test("a burst into the writes budget: RateLimitedError with the scope, and the wait the service asked", async (t) => {
  const client = clientOf(keyed);
  const once = client.withOptions({ maxRetries: 0 });
  const entry = (n: number) =>
    [{ roomTypeId: keyed.roomTypeId, dateFrom: day(100), dateTo: day(100), available: n % 8 }];
  let limited: RateLimitedError | undefined;
  let written = 0;
  for (let n = 0; n < 40 && limited === undefined; n++) {
    try {
      await once.availability.set(entry(n));
      written += 1;
    } catch (error) {
      if (!(error instanceof RateLimitedError)) throw error;
      limited = error;
    }
  }
  assert.ok(limited, "40 PUTs in a row and no 429");
  t.diagnostic(`the 31st write: Retry-After ${limited.retryAfter} s, RateLimit ${JSON.stringify(limited.rateLimit)}`);
  assert.equal(written, 30);
  assert.equal(limited.status, 429);
  assert.equal(limited.code, "RATE_LIMITED");
  assert.equal(limited.scope, "writes");
  assert.ok(limited.retryAfter !== null && limited.retryAfter > 0 && limited.retryAfter <= 60, `${limited.retryAfter}`);
  assert.equal(limited.rateLimit?.remaining, 0);
  assert.equal(limited.rateLimit?.budgets["writes"]?.remaining, 0);
  assert.equal(limited.rateLimit?.budgets["writes"]?.quota, 30);
  assert.match(limited.requestId ?? "", /\S/);
  // The state is the client's too, errors included (withOptions shares it).
  assert.equal(client.rateLimit?.budgets["writes"]?.remaining, 0);
  assert.equal(client.lastResponse?.status, 429);

  // A tight maxWait refuses the wait at once.
  await assert.rejects(client.withOptions({ maxWait: 0.5 }).availability.set(entry(1)),
    (error: unknown) => error instanceof RateLimitedError && /maxWait 0.5 s/.test(error.message));

  // With a retry allowed, the client waits what the service said (recorded, not slept:
  // the window does not pass), tries once more and gives up with the error.
  const recorded = recordingSleep();
  const patient = clientOf(keyed, { maxRetries: 1, sleep: recorded.sleep });
  await assert.rejects(patient.availability.set(entry(7)), (error: unknown) => error instanceof RateLimitedError);
  assert.equal(recorded.waits.length, 1);
  assert.ok(recorded.waits[0]! >= (limited.retryAfter! - 1) * 1000 && recorded.waits[0]! <= 60_000,
    `${recorded.waits[0]} ms`);
  assert.equal(patient.lastResponse?.attempts, 2);
});
