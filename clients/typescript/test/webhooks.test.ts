// Webhook verification: the service's real deliveries (a ping; a ping after a rotation,
// signed with the old secret and the new; an OTA booking's event), the Standard Webhooks
// vectors, and what must be refused.

import assert from "node:assert/strict";
import { test } from "node:test";

import {
  verifyWebhook,
  verifyWebhookParsed,
  WebhookRawBodyError,
  WebhookVerificationError,
  type WebhookEvent,
} from "@connectapi/client";

import { fixture, type Delivered } from "./fixture.js";

const hooks = fixture.webhooks;
const raw = (d: Delivered): Buffer => Buffer.from(d.raw, "base64");

const VECTORS = [
  {
    secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", id: "msg_p5jXN8AQM9LWM0D4loKWxJek", timestamp: 1614265330,
    body: '{"test": 2432232314}', signature: "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
  },
  {
    secret: "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD", id: "msg_27UH4WbU6Z5A5EzD8u03UvzRbpk", timestamp: 1649367553,
    body: '{"email":"test@example.com","username":"test_user"}',
    signature: "v1,tZ1I4/hDygAJgO5TYxiSd6Sd0kDW6hPenDe+bTa3Kkw=",
  },
];

function headersOf(v: (typeof VECTORS)[number]): Record<string, string> {
  return { "webhook-id": v.id, "webhook-timestamp": String(v.timestamp), "webhook-signature": v.signature };
}

async function refused(promise: Promise<unknown>, pattern: RegExp, kind = WebhookVerificationError): Promise<void> {
  await assert.rejects(promise, (error: unknown) => {
    assert.ok(error instanceof kind, String(error));
    assert.match((error as Error).message, pattern);
    return true;
  });
}

test("the Standard Webhooks vectors verify: text, bytes, ArrayBuffer, Headers", async () => {
  for (const v of VECTORS) {
    const at = { now: v.timestamp * 1000 };
    assert.deepEqual(await verifyWebhook(v.body, headersOf(v), v.secret, at), JSON.parse(v.body));
    const bytes = new TextEncoder().encode(v.body);
    await verifyWebhook(bytes, headersOf(v), v.secret, at);
    await verifyWebhook(bytes.buffer, new Headers(headersOf(v)), v.secret, { now: new Date(v.timestamp * 1000) });
    await verifyWebhook(Buffer.from(v.body), headersOf(v), [VECTORS[0] === v ? VECTORS[1]!.secret : VECTORS[0]!.secret,
      v.secret], at);
  }
});

test("refused: a stale or future timestamp, a tampered body, a missing header, another secret", async () => {
  const v = VECTORS[1]!;
  await refused(verifyWebhook(v.body, headersOf(v), v.secret, { now: (v.timestamp + 301) * 1000 }), /\+301 s from now/);
  await refused(verifyWebhook(v.body, headersOf(v), v.secret, { now: (v.timestamp - 301) * 1000 }), /-301 s/);
  await verifyWebhook(v.body, headersOf(v), v.secret, { now: (v.timestamp + 300) * 1000 });
  await verifyWebhook(v.body, headersOf(v), v.secret, { now: (v.timestamp + 3000) * 1000, tolerance: 3600 });
  // A number that is not finite fails closed, whichever it is: a delivery 10^8 s old is refused.
  const old = { now: (v.timestamp + 1e8) * 1000 };
  for (const options of [{ ...old, tolerance: NaN }, { ...old, tolerance: Infinity }, { now: NaN },
    { now: Infinity, tolerance: Infinity }]) {
    await refused(verifyWebhook(v.body, headersOf(v), v.secret, options), /must be finite numbers/);
  }
  await refused(verifyWebhook(v.body.replace("test_user", "test_usEr"), headersOf(v), v.secret,
    { now: v.timestamp * 1000 }), /no signature matches/);
  for (const name of ["webhook-id", "webhook-timestamp", "webhook-signature"]) {
    const headers = headersOf(v);
    delete headers[name];
    await refused(verifyWebhook(v.body, headers, v.secret, { now: v.timestamp * 1000 }), new RegExp(`no ${name}`));
  }
  await refused(verifyWebhook(v.body, { ...headersOf(v), "webhook-timestamp": "soon" }, v.secret),
    /not a number/);
  await refused(verifyWebhook(v.body, headersOf(v), VECTORS[0]!.secret, { now: v.timestamp * 1000 }),
    /no signature matches/);
  await refused(verifyWebhook(v.body, { ...headersOf(v), "webhook-signature": "v2,abc v1,!!!" }, v.secret,
    { now: v.timestamp * 1000 }), /no signature matches/);
  // The secret itself malformed: a mistake of the caller's, not a forged webhook.
  await assert.rejects(verifyWebhook(v.body, headersOf(v), "whsec_not base64!", { now: v.timestamp * 1000 }),
    TypeError);
});

test("a parsed body: verifyWebhook explains the raw-body rule; verifyWebhookParsed re-serialises", async () => {
  const v = VECTORS[1]!;
  const at = { now: v.timestamp * 1000 };
  const parsed = JSON.parse(v.body) as unknown;
  await refused(verifyWebhook(parsed as string, headersOf(v), v.secret, at), /raw body.*express\.raw/s,
    WebhookRawBodyError);
  await refused(verifyWebhook(undefined as unknown as string, headersOf(v), v.secret, at), /request\.text\(\)/,
    WebhookRawBodyError);
  assert.deepEqual(await verifyWebhookParsed(parsed, headersOf(v), v.secret, at), parsed);
  // The first vector's body is not compact JSON: written back, it is not what was signed.
  const w = VECTORS[0]!;
  await refused(verifyWebhookParsed(JSON.parse(w.body), headersOf(w), w.secret, { now: w.timestamp * 1000 }),
    /does not match its signature.*raw body/s, WebhookRawBodyError);
  // Other failures stay what they are.
  await refused(verifyWebhookParsed(parsed, headersOf(v), v.secret, { now: (v.timestamp + 301) * 1000 }),
    /from now/);
});

test("the service's ping verifies with the endpoint's secret", async () => {
  const event: WebhookEvent = await verifyWebhook(raw(hooks.ping), hooks.ping.headers, hooks.secret);
  assert.equal(event.type, "connectapi.ping");
  assert.equal(event.id, hooks.pingEventId);
  assert.equal(event.mode, "test");
  assert.equal(event.apiVersion, "2026-09-01");
  assert.equal(typeof event.property.id, "number");
  await refused(verifyWebhook(raw(hooks.ping), hooks.ping.headers, hooks.newSecret), /no signature matches/);
  // A framework that parsed it first: the service sends compact JSON, so it verifies too.
  const parsed = JSON.parse(raw(hooks.ping).toString("utf8")) as unknown;
  assert.deepEqual(await verifyWebhookParsed(parsed, hooks.ping.headers, hooks.secret), event);
  // Tampered.
  const tampered = raw(hooks.ping).toString("utf8").replace("connectapi.ping", "connectapi.pinG");
  await refused(verifyWebhook(tampered, hooks.ping.headers, hooks.secret), /no signature matches/);
});

test("after a rotation a delivery carries two signatures: the old secret and the new each verify alone", async () => {
  const d = hooks.rotatedPing;
  const header = Object.entries(d.headers).find(([k]) => k.toLowerCase() === "webhook-signature")![1];
  assert.equal(header.split(" ").length, 2, header);
  assert.equal((await verifyWebhook(raw(d), d.headers, hooks.secret)).type, "connectapi.ping");
  assert.equal((await verifyWebhook(raw(d), d.headers, hooks.newSecret)).type, "connectapi.ping");
  await verifyWebhook(raw(d), d.headers, [hooks.newSecret, hooks.secret]);
  // Headers in other cases, and a Headers object.
  const upper = Object.fromEntries(Object.entries(d.headers).map(([k, v]) => [k.toUpperCase(), v]));
  await verifyWebhook(raw(d), upper, hooks.newSecret);
  await verifyWebhook(raw(d).toString("utf8"), new Headers(d.headers), hooks.newSecret);
});

test("an OTA booking's event, typed", async () => {
  const d = hooks.otaBooking;
  const event = await verifyWebhook(new Uint8Array(raw(d)), d.headers, hooks.newSecret);
  assert.equal(event.type, "channel.booking.created");
  assert.equal(event.mode, "test");
  const booking = event.data.booking!;
  // The OTA's reference, as the test helper answered it, is the channel's reservation code.
  assert.equal(booking.channel.reservationCode, hooks.otaReference);
  assert.equal(booking.reference, hooks.otaBookingReference); // the helper's answer names it as the event does
  assert.match(booking.reference, /\S/);
  assert.equal(booking.status, "UPCOMING");
  assert.equal(booking.stay.nights, 2);
  assert.equal(booking.guest.email, "rui@example.com");
  assert.match(booking.amounts.total, /^\d+\.\d{2}$/);
  assert.equal(booking.amounts.currency, "EUR");
  assert.equal(event.changes, null);
});
