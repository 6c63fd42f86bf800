// The test helpers (test keys only): an OTA booking made, changed and cancelled through the
// test sandbox, a check-in, channel faults armed and disarmed, the test record reset.

import assert from "node:assert/strict";
import { test } from "node:test";

import { clientOf, day, fixture, stay } from "./fixture.js";

const keyed = fixture.keys.helpers;
const client = clientOf(keyed);

test("an OTA booking: made, modified, cancelled", async () => {
  const made = await client.testHelpers.otaBooking({
    roomTypeId: keyed.roomTypeId, ratePlanId: keyed.ratePlanId, checkIn: day(60), checkOut: day(62),
    guest: { name: "Rui", surname: "Costa", email: "rui@example.com" }, adults: 2, amount: "260.00",
  });
  assert.equal(made.status, "new");
  // The booking's reference, as its webhooks name it, and the channel's code.
  const reference = made.reference ?? assert.fail("the intake applied it: the answer names the booking");
  assert.match(reference, /^TEST-/);
  assert.match(made.reservationCode, /\S/);
  assert.equal(client.lastResponse?.status, 201);
  assert.equal(client.lastResponse?.idempotencyKey, null);
  const modified = await client.testHelpers.otaModify(reference, { adults: 1, checkOut: day(63) });
  assert.equal(modified.status, "modified");
  assert.equal(modified.reference, reference);
  assert.notEqual(modified.revisionId, made.revisionId);
  const cancelled = await client.testHelpers.otaCancel(made.reservationCode); // the channel's code works too
  assert.equal(cancelled.status, "cancelled");
});

test("check-in, channel faults, reset", async () => {
  const booking = await client.bookings.create(stay(keyed, 70));
  const checked = await client.testHelpers.checkIn(booking.bookingId);
  assert.deepEqual(checked, { bookingId: booking.bookingId, status: "CHECKED_IN" });
  assert.equal((await client.bookings.get(booking.bookingId)).status, "CHECKED_IN");

  assert.deepEqual(await client.testHelpers.channelFaults("500", 2), { mode: "500", count: 2 });
  assert.deepEqual(await client.testHelpers.channelFaults("ok"), { mode: "ok", count: 0 });

  const reset = await client.testHelpers.reset();
  assert.equal(reset.reset, true);
  assert.equal(reset.mode, "test");
  assert.equal(reset.propertyId, keyed.propertyId);
  const after = await client.bookings.listPage();
  assert.equal(after.count, 0);
  // Nothing to list: one empty page all the same.
  const pages = [];
  for await (const page of client.bookings.pages()) pages.push(page);
  assert.deepEqual(pages.map((p) => p.count), [0]);
});
