// waitForBatch: each request waits at the service until the batch is done (`?wait=`), so it
// answers within seconds of the batch with no poll; it gives up with BatchTimeoutError and
// the last batch. An injected sleep records any wait and moves an injected clock, on which
// real time passes too (a request the service holds takes its seconds).

import assert from "node:assert/strict";
import { test } from "node:test";

import { BatchTimeoutError, Client, NotFoundError } from "@connectapi/client";

import { day, fixture } from "./fixture.js";

const keyed = fixture.keys.batches;

/** A client whose sleep moves its clock by the wait, and really waits `really` ms. */
function clocked(really: number): { client: Client; waits: number[] } {
  let clock = 0;
  const started = performance.now();
  const waits: number[] = [];
  const client = new Client({
    baseUrl: fixture.url, apiKey: keyed.key,
    now: () => clock + performance.now() - started,
    sleep: async (ms) => {
      waits.push(ms);
      clock += ms;
      await new Promise((resolve) => setTimeout(resolve, really));
    },
  });
  return { client, waits };
}

test("waitForBatch answers within seconds of the batch, with no poll", async () => {
  const { client, waits } = clocked(500);
  const written = await client.rates.set(
    [{ ratePlanId: keyed.ratePlanId, dateFrom: day(120), dateTo: day(122), rate: "99.00", currency: "EUR" }]);
  const started = performance.now();
  const batch = await client.waitForBatch(written.batchId, { interval: 1, timeout: 3600 });
  assert.equal(batch.status, "completed");
  assert.equal(batch.pendingCells, 0);
  assert.equal(batch.batchId, written.batchId);
  assert.deepEqual(waits, []); // the service held the request until the batch was done
  assert.ok(performance.now() - started < 10_000, `${performance.now() - started} ms`);
  const sync = await client.sync();
  assert.equal(typeof sync.inventory.dirtyCells, "number");
});

test("waitForBatch gives up after its timeout with the last batch read", async () => {
  const { client, waits } = clocked(5);
  // The sandbox fails the pushes: the batch stays pending.
  await client.testHelpers.channelFaults("500", 20);
  try {
    const written = await client.availability.set(
      [{ roomTypeId: keyed.roomTypeId, dateFrom: day(130), dateTo: day(131), available: 2 }]);
    await assert.rejects(client.waitForBatch(written.batchId, { timeout: 4, interval: 20 }), (error: unknown) => {
      assert.ok(error instanceof BatchTimeoutError, String(error));
      assert.equal(error.batch.batchId, written.batchId);
      assert.equal(error.batch.status, "pending");
      assert.match(error.message, /still pending after 4 s/);
      return true;
    });
    assert.deepEqual(waits, []); // one request, held by the service for the 4 s
  } finally {
    await client.testHelpers.channelFaults("ok");
  }
  await assert.rejects(client.batch("no-such-batch"), NotFoundError);
});
