// waitForBatch: polls no more often than every 15 s (an injected sleep records the waits
// and moves an injected clock), and gives up with BatchTimeoutError and the last batch.

import assert from "node:assert/strict";
import { test } from "node:test";

import { BatchTimeoutError, Client, NotFoundError } from "@connectapi/client";

import { day, fixture } from "./fixture.js";

const keyed = fixture.keys.batches;

/** A client whose sleep moves its clock by the wait, and really waits `really` ms. */
function clocked(really: number): { client: Client; waits: number[] } {
  let clock = 0;
  const waits: number[] = [];
  const client = new Client({
    baseUrl: fixture.url, apiKey: keyed.key,
    now: () => clock,
    sleep: async (ms) => {
      waits.push(ms);
      clock += ms;
      await new Promise((resolve) => setTimeout(resolve, really));
    },
  });
  return { client, waits };
}

test("waitForBatch polls every 15 s at the least until the batch is completed", async () => {
  const { client, waits } = clocked(500);
  const written = await client.rates.set(
    [{ ratePlanId: keyed.ratePlanId, dateFrom: day(120), dateTo: day(122), rate: "99.00", currency: "EUR" }]);
  const batch = await client.waitForBatch(written.batchId, { interval: 1, timeout: 3600 });
  assert.equal(batch.status, "completed");
  assert.equal(batch.pendingCells, 0);
  assert.equal(batch.batchId, written.batchId);
  assert.ok(waits.every((ms) => ms === 15_000), `waits: ${waits}`);
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
    await assert.rejects(client.waitForBatch(written.batchId, { timeout: 40, interval: 20 }), (error: unknown) => {
      assert.ok(error instanceof BatchTimeoutError, String(error));
      assert.equal(error.batch.batchId, written.batchId);
      assert.equal(error.batch.status, "pending");
      assert.match(error.message, /still pending after 40 s/);
      return true;
    });
    assert.deepEqual(waits, [20_000, 20_000]);
  } finally {
    await client.testHelpers.channelFaults("ok");
  }
  await assert.rejects(client.batch("no-such-batch"), NotFoundError);
});
