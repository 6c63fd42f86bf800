// A live key (`cak_live_...`) works as a test key does: nothing changes but the key.

import assert from "node:assert/strict";
import { test } from "node:test";

import { NotFoundError } from "@connectapi/client";

import { clientOf, day, fixture } from "./fixture.js";

const keyed = fixture.keys.live;

test("a live key: property and a rate", async () => {
  assert.match(keyed.key, /^cak_live_/);
  const client = clientOf(keyed);
  const property = await client.property();
  assert.equal(property.mode, "live");
  assert.equal(property.id, keyed.propertyId);
  const written = await client.rates.set(
    [{ ratePlanId: keyed.ratePlanId, dateFrom: day(30), dateTo: day(30), rate: "140.00", currency: "EUR" }]);
  assert.equal(written.resource, "rates");
  assert.equal(client.lastResponse?.status, 202);
  // The test helpers answer test keys only.
  await assert.rejects(client.testHelpers.reset(), (error: unknown) =>
    error instanceof NotFoundError && error.code === "NOT_FOUND");
});

test("a test key: the same calls, unchanged", async () => {
  assert.match(fixture.keys.routes.key, /^cak_test_/);
  const property = await clientOf(fixture.keys.routes).property();
  assert.equal(property.mode, "test");
});
