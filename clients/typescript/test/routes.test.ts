// Every route of the contract through the client, against the live service, with a test key.

import assert from "node:assert/strict";
import { test } from "node:test";

import {
  PreconditionFailedError,
  type Booking,
  type BookingList,
  type WriteResult,
} from "@connectapi/client";

import { clientOf, day, fixture, stay } from "./fixture.js";

const keyed = fixture.keys.routes;
const client = clientOf(keyed);
const KEY_FORMAT = /^[A-Za-z0-9_-]{10,64}$/;

function wrote(result: WriteResult, resource: string): void {
  assert.equal(result.resource, resource);
  assert.match(result.batchId, /\S/);
  assert.equal(client.lastResponse?.status, 202);
  assert.match(client.lastResponse?.idempotencyKey ?? "", KEY_FORMAT);
  assert.equal(client.lastResponse?.attempts, 1);
}

test("property and catalog, with the RateLimit state and the last response", async () => {
  const property = await client.property();
  assert.equal(property.id, keyed.propertyId);
  assert.equal(property.mode, "test");
  assert.equal(property.currency, "EUR");
  assert.ok(property.scopes.includes("ari:write"));
  assert.equal(client.lastResponse?.status, 200);
  assert.match(client.lastResponse?.requestId ?? "", /\S/);
  assert.equal(client.lastResponse?.idempotencyKey, null);
  const requests = client.rateLimit?.budgets["requests"];
  assert.ok(requests, `a requests budget: ${JSON.stringify(client.rateLimit)}`);
  assert.equal(requests.quota, 120);
  assert.equal(requests.window, 60);
  assert.ok(requests.remaining !== null && requests.remaining < 120);
  assert.ok(client.rateLimit?.remaining !== null && client.rateLimit!.remaining! <= requests.remaining!);

  const catalog = await client.catalog();
  assert.equal(catalog.roomTypes[0]?.id, keyed.roomTypeId);
  assert.equal(catalog.ratePlans[0]?.id, keyed.ratePlanId);
});

test("availability, rates and restrictions: set, then read back; sync and the batch", async () => {
  const [first, last] = [day(30), day(31)];
  const availability = await client.availability.set(
    [{ roomTypeId: keyed.roomTypeId, dateFrom: first, dateTo: last, available: 5 }]);
  wrote(availability, "availability");
  const rooms = await client.availability.get(first, last);
  assert.equal(rooms.from, first);
  const nights = rooms.roomTypes.find((r) => r.roomTypeId === keyed.roomTypeId)?.nights ?? [];
  assert.deepEqual(nights.find((n) => n.date === first)?.available, 5);

  const rates = await client.rates.set(
    [{ ratePlanId: keyed.ratePlanId, dateFrom: first, dateTo: last, rate: "135.00", currency: "EUR" }]);
  wrote(rates, "rates");
  const prices = await client.rates.get(first, last);
  assert.equal(prices.currency, "EUR");
  const priced = prices.ratePlans.find((p) => p.ratePlanId === keyed.ratePlanId)?.nights ?? [];
  assert.equal(priced.find((n) => n.date === first)?.rateMinor, 13500);

  const restrictions = await client.restrictions.set(
    [{ ratePlanId: keyed.ratePlanId, dateFrom: first, dateTo: last, minStayArrival: 2, closedToArrival: true }]);
  wrote(restrictions, "restrictions");
  const held = await client.restrictions.get(first, last);
  const night = held.ratePlans.find((p) => p.ratePlanId === keyed.ratePlanId)?.nights.find((n) => n.date === first);
  assert.equal(night?.minStayArrival, 2);
  assert.equal(night?.closedToArrival, true);
  assert.equal(night?.maxStay, null);

  // The default range: from today on.
  const window = await client.availability.get();
  assert.match(window.from, /^\d{4}-\d{2}-\d{2}$/);
  assert.ok(window.to > window.from);

  const sync = await client.sync();
  assert.ok(["IN_SYNC", "PENDING", "REFUSED", "BACKING_OFF", "FAILING"].includes(sync.inventory.state));
  assert.equal(typeof sync.rates.dirtyCells, "number");
  const batch = await client.batch(rates.batchId);
  assert.equal(batch.batchId, rates.batchId);
  assert.equal(batch.resource, "rates");
  assert.ok(["pending", "completed"].includes(batch.status));
});

test("bookings: create, get with its ETag, replay, three pages of one, modify with If-Match, cancel", async () => {
  const made: Booking[] = [];
  for (const days of [50, 53, 56]) {
    const booking = await client.bookings.create(stay(keyed, days));
    assert.equal(client.lastResponse?.status, 201);
    assert.equal(booking.replay, false);
    assert.equal(booking.status, "UPCOMING");
    assert.equal(booking.totalAmount, "241.00");
    made.push(booking);
  }
  const first = made[0]!;

  const got = await client.bookings.get(first.bookingId);
  assert.equal(got.reference, first.reference);
  const etag = client.lastResponse?.etag;
  assert.ok(etag, "GET /bookings/{id} answers an ETag");

  // The same externalReference again: the booking as made, not a second one.
  const again = await client.bookings.create({ ...stay(keyed, 50), externalReference: first.externalReference! });
  assert.equal(again.replay, true);
  assert.equal(again.bookingId, first.bookingId);

  // Three pages of one, newest first, following nextBefore (the empty page after a full last one is not yielded).
  const pages: BookingList[] = [];
  for await (const page of client.bookings.pages({ limit: 1 })) pages.push(page);
  assert.deepEqual(pages.map((p) => p.bookings.map((b) => b.bookingId)),
    [[made[2]!.bookingId], [made[1]!.bookingId], [made[0]!.bookingId]]);
  assert.equal(pages[0]!.limit, 1);
  assert.equal(pages[0]!.nextBefore, made[2]!.bookingId);
  const listed: number[] = [];
  for await (const booking of client.bookings.list({ limit: 1 })) listed.push(booking.bookingId);
  assert.deepEqual(listed, made.map((b) => b.bookingId).reverse());
  const one = await client.bookings.listPage({ externalReference: made[1]!.externalReference!, limit: 5 });
  assert.deepEqual(one.bookings.map((b) => b.bookingId), [made[1]!.bookingId]);
  assert.equal(one.nextBefore, null);
  const since = await client.bookings.listPage({ since: new Date(Date.now() + 3600_000) });
  assert.equal(since.count, 0);

  // Modify the revision read (a number), then by the ETag, then a stale one: 412.
  const revision = got.revision!;
  const noted = await client.bookings.modify(first.bookingId, { notes: "late arrival" }, { ifMatch: revision });
  assert.equal(noted.revision, revision + 1);
  assert.equal(client.lastResponse?.status, 200);
  assert.match(client.lastResponse?.idempotencyKey ?? "", KEY_FORMAT);
  const etagNow = client.lastResponse?.etag;
  assert.ok(etagNow);
  const renamed = await client.bookings.modify(first.bookingId, { guest: { name: "Ana M. Silva" } },
    { ifMatch: etagNow });
  assert.equal(renamed.guest.name, "Ana M. Silva");
  await assert.rejects(
    client.bookings.modify(first.bookingId, { notes: "too late" }, { ifMatch: revision }),
    (error: unknown) => {
      assert.ok(error instanceof PreconditionFailedError, String(error));
      assert.equal(error.status, 412);
      assert.equal(error.code, "BOOKING_REVISION_STALE");
      assert.equal((error.details as { revision?: number }).revision, renamed.revision);
      return true;
    });
  // Without If-Match, and with a key of the caller's own.
  const moved = await client.bookings.modify(made[1]!.bookingId,
    { checkIn: day(54), checkOut: day(55) }, { idempotencyKey: "ts-modify-" + made[1]!.bookingId });
  assert.equal(moved.checkIn, day(54));
  assert.equal(client.lastResponse?.idempotencyKey, "ts-modify-" + made[1]!.bookingId);

  // Cancel, then cancel again: the same booking, replay true.
  const cancelled = await client.bookings.cancel(made[2]!.bookingId, "guest changed plans");
  assert.equal(cancelled.status, "CANCELLED");
  assert.equal(cancelled.replay, false);
  const replayed = await client.bookings.cancel(made[2]!.bookingId);
  assert.equal(replayed.status, "CANCELLED");
  assert.equal(replayed.replay, true);
});
