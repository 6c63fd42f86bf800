// What the pytest driver (tests/clients/test_typescript_client.py) hands the node tests:
// the live service's address, the fault proxy's, keys of fresh properties and real
// webhook deliveries, in the JSON file named by CONNECTAPI_TS_FIXTURE.

import { readFileSync } from "node:fs";

import { Client, type BookingIn, type ClientOptions } from "@connectapi/client";

export interface Keyed {
  key: string;
  mode: "live" | "test";
  propertyId: number;
  roomTypeId: number;
  ratePlanId: number;
}

export interface Delivered {
  /** The body as it arrived, base64. */
  raw: string;
  headers: Record<string, string>;
}

export interface Fixture {
  url: string;
  proxyUrl: string;
  keys: Record<"routes" | "retries" | "burst" | "batches" | "helpers" | "errors" | "live", Keyed>;
  narrowKey: string;
  /** A property whose `ratePlanId` is sold per person, priced for `occupancies`. */
  perPerson: Keyed & { occupancies: number[] };
  webhooks: {
    secret: string;
    newSecret: string;
    pingEventId: string;
    /** The test OTA booking's reservation code (the channel's), and its reference (ours). */
    otaReference: string;
    otaBookingReference: string;
    ping: Delivered;
    rotatedPing: Delivered;
    otaBooking: Delivered;
  };
}

const path = process.env["CONNECTAPI_TS_FIXTURE"];
if (path === undefined) {
  throw new Error("CONNECTAPI_TS_FIXTURE is not set: run these tests through tests/clients/test_typescript_client.py");
}
export const fixture: Fixture = JSON.parse(readFileSync(path, "utf8")) as Fixture;

/** A client of the live service (or of `baseUrl`) with one of the fixture's keys. */
export function clientOf(keyed: Keyed, options: Partial<ClientOptions> = {}): Client {
  return new Client({ baseUrl: fixture.url, apiKey: keyed.key, ...options });
}

/** The calendar date `days` from today, "YYYY-MM-DD". */
export function day(days: number): string {
  const at = new Date();
  at.setUTCDate(at.getUTCDate() + days);
  return at.toISOString().slice(0, 10);
}

/** A sleep that records each wait (ms) and waits only `really` ms: the tests see the
 * waits a client asked for without spending them. */
export function recordingSleep(really = 0): { sleep: (ms: number) => Promise<void>; waits: number[] } {
  const waits: number[] = [];
  return {
    waits,
    sleep: async (ms: number) => {
      waits.push(ms);
      if (really > 0) await new Promise((resolve) => setTimeout(resolve, really));
    },
  };
}

let counter = 0;

/** A reservation id of the hotel's own booking engine, new each call. */
export function reference(prefix = "TS"): string {
  counter += 1;
  return `${prefix}-${process.pid}-${Date.now().toString(36)}-${counter}`;
}

/** A booking body: `nights` nights from `days` days on, two adults, in the example property's ids. */
export function stay(keyed: Keyed, days = 30, nights = 2): BookingIn {
  return {
    externalReference: reference(),
    checkIn: day(days),
    checkOut: day(days + nights),
    currency: "EUR",
    guest: { name: "Ana Silva", phone: "+351 912 345 678", email: "ana@example.com" },
    rooms: [{ roomTypeId: keyed.roomTypeId, ratePlanId: keyed.ratePlanId, adults: 2, nightlyRate: "120.50" }],
  };
}
