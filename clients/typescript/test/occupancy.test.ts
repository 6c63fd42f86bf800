// A rate plan sold per person: each occupancy's price written, read back typed.

import assert from "node:assert/strict";
import { test } from "node:test";

import { InvalidRequestError, type OccupancyRate, type RateEntry } from "@connectapi/client";

import { clientOf, day, fixture } from "./fixture.js";

const keyed = fixture.perPerson;
const client = clientOf(keyed);

test("a per-person plan is priced per occupancy and read back by occupancy", async () => {
  const catalog = await client.catalog();
  const sold = catalog.ratePlans.find((p) => p.id === keyed.ratePlanId);
  assert.equal(sold?.sellMode, "perPerson");
  assert.deepEqual(sold?.occupancies, keyed.occupancies);

  const [first, last] = [day(20), day(21)];
  const entries: RateEntry[] = keyed.occupancies.map((occupancy) => ({
    ratePlanId: keyed.ratePlanId, occupancy, dateFrom: first, dateTo: last, rate: String(60 + 15 * occupancy),
    currency: "EUR",
  }));
  const written = await client.rates.set(entries);
  assert.equal(written.acceptedCells, 2 * keyed.occupancies.length);

  const read = await client.rates.get(first, last);
  const night = read.ratePlans.find((p) => p.ratePlanId === keyed.ratePlanId)?.nights[0];
  const byOccupancy: OccupancyRate[] = night?.byOccupancy ?? [];
  assert.deepEqual(byOccupancy, [{ occupancy: 1, rateMinor: 7500 }, { occupancy: 2, rateMinor: 9000 }]);
  assert.equal(night?.rateMinor, 9000); // the largest occupancy's

  await assert.rejects(
    client.rates.set([{ ratePlanId: keyed.ratePlanId, dateFrom: first, dateTo: first, rate: "80", currency: "EUR" }]),
    (error: unknown) => error instanceof InvalidRequestError && error.code === "VALIDATION");
});
