// Five minutes with @connectapi/client. With `make run` going and a test key from
// `.venv/bin/connectapi seed`: CONNECTAPI_KEY=cak_test_... node quickstart.mjs
import { ApiError, Client } from "@connectapi/client";

const client = new Client({
  baseUrl: process.env.CONNECTAPI_URL ?? "http://127.0.0.1:8080",
  apiKey: process.env.CONNECTAPI_KEY,
});

// The property and its catalog, as the key sees them.
const property = await client.property();
const { roomTypes, ratePlans } = await client.catalog();
console.log(`${property.name} (${property.mode} key): ${roomTypes.length} room types, ${ratePlans.length} rate plans`);

// Dates are the contract's "YYYY-MM-DD" strings.
const night = (days) => new Date(Date.now() + days * 86_400_000).toISOString().slice(0, 10);
const plan = ratePlans[0];

// A rate for two nights a week from now: 202 and a batch, which the service pushes on its own.
// A 429 or a 503 is waited out and sent again with the same idempotency key.
const written = await client.rates.set([
  { ratePlanId: plan.id, dateFrom: night(7), dateTo: night(8), rate: "135.00", currency: property.currency },
]);
console.log(`batch ${written.batchId}: ${written.acceptedCells} cells accepted`);
const rates = await client.rates.get(night(7), night(8));
console.log("rates in minor units:", rates.ratePlans.find((p) => p.ratePlanId === plan.id).nights);

// A booking from the hotel's own site, then its cancellation.
const booking = await client.bookings.create({
  externalReference: `WEB-${Date.now()}`,
  checkIn: night(7),
  checkOut: night(9),
  currency: property.currency,
  guest: { name: "Ana Silva", phone: "+351 912 345 678" },
  rooms: [{ roomTypeId: plan.roomTypeId, ratePlanId: plan.id, adults: 2, nightlyRate: "135.00" }],
});
console.log(`booking ${booking.bookingId} (${booking.reference}): ${booking.totalAmount} ${booking.currency}`);
for await (const listed of client.bookings.list({ limit: 20 })) {
  console.log(`  listed: ${listed.bookingId} ${listed.status} ${listed.checkIn} to ${listed.checkOut}`);
}
const cancelled = await client.bookings.cancel(booking.bookingId, "guest changed plans");
console.log(`booking ${cancelled.bookingId}: ${cancelled.status}`);

// Errors are typed by the contract's code; the budgets are known after every call.
try {
  await client.batch("no-such-batch");
} catch (error) {
  if (!(error instanceof ApiError)) throw error;
  console.log(`${error.status} ${error.code}, request ${error.requestId}`);
}
console.log(`requests left this minute: ${client.rateLimit.budgets.requests?.remaining}`);
