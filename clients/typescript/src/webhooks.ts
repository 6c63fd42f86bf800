// Verifying a webhook the service sent (Standard Webhooks): an HMAC-SHA256 over
// `<webhook-id>.<webhook-timestamp>.<raw body>`, any of several signatures, a timestamp
// within 300 s. The raw body: the bytes as they arrived, before any JSON parsing.

import { WebhookRawBodyError, WebhookVerificationError } from "./errors.js";
import { headerOf, type HeaderSource } from "./rateLimit.js";
import { fromBase64, webCrypto } from "./runtime.js";
import type { WebhookEvent } from "./types.js";

/** Seconds a webhook's timestamp may be from now: older is a replay, newer a clock far off. */
export const TOLERANCE_SECONDS = 300;

const RAW_BODY_RULE =
  "the signature is over the raw body, byte for byte as it arrived: pass the request's body before any JSON " +
  'parsing, as a string, a Uint8Array/Buffer or an ArrayBuffer (Express: app.post(path, express.raw({type: ' +
  '"application/json"}), ...) and pass req.body, a Buffer; fetch-style handlers (Next.js route handlers, Hono, ' +
  "Remix, Deno, Bun, workers): await request.text(); Fastify: a content-type parser with parseAs: \"buffer\"), " +
  "not a parsed object";

/** A body as it arrived: text, or its bytes. */
export type RawBody = string | Uint8Array | ArrayBuffer | ArrayBufferView;

export interface VerifyOptions {
  /** Seconds the timestamp may be from now (default 300, the contract's). */
  tolerance?: number;
  /** The time to judge the timestamp by: a Date, or milliseconds since the epoch (`Date.now()`'s unit). */
  now?: number | Date;
}

function bytesOf(body: RawBody): Uint8Array {
  if (typeof body === "string") return new TextEncoder().encode(body);
  if (body instanceof Uint8Array) return body;
  if (body instanceof ArrayBuffer) return new Uint8Array(body);
  return new Uint8Array(body.buffer, body.byteOffset, body.byteLength);
}

function isRaw(body: unknown): body is RawBody {
  return typeof body === "string" || body instanceof ArrayBuffer || ArrayBuffer.isView(body);
}

function header(headers: HeaderSource, name: string): string {
  const value = headerOf(headers, name);
  if (value === undefined) throw new WebhookVerificationError(`no ${name} header: not a webhook of the service`);
  return value;
}

async function keyOf(secret: string, subtle: SubtleCrypto): Promise<CryptoKey> {
  const bytes = fromBase64(secret.startsWith("whsec_") ? secret.slice("whsec_".length) : secret);
  if (bytes === null) {
    throw new TypeError("a webhook secret is whsec_ followed by base64, as the owner was shown it");
  }
  return subtle.importKey("raw", bytes, { name: "HMAC", hash: "SHA-256" }, false, ["verify"]);
}

async function signed(raw: Uint8Array, headers: HeaderSource, secrets: readonly string[],
                      options: VerifyOptions): Promise<void> {
  if (headers === null || typeof headers !== "object") {
    throw new TypeError("headers: the request's headers, a Headers or a plain object");
  }
  const eventId = header(headers, "webhook-id");
  const stamp = header(headers, "webhook-timestamp");
  const signatures = header(headers, "webhook-signature");
  if (!/^\s*[+-]?\d+\s*$/.test(stamp)) {
    throw new WebhookVerificationError("webhook-timestamp is not a number of seconds");
  }
  const sentAt = Number.parseInt(stamp, 10);
  const tolerance = options.tolerance ?? TOLERANCE_SECONDS;
  const nowMs = options.now === undefined ? Date.now() : options.now instanceof Date ? options.now.getTime() : options.now;
  if (!Number.isFinite(nowMs) || !Number.isFinite(tolerance)) {
    // Fail closed: an infinite tolerance (or clock) would let a delivery of any age through.
    throw new WebhookVerificationError(`now (${nowMs}) and tolerance (${tolerance}) must be finite numbers`);
  }
  const off = nowMs / 1000 - sentAt;
  if (!(Math.abs(off) <= tolerance)) {
    throw new WebhookVerificationError(
      `webhook-timestamp is ${off >= 0 ? "+" : "-"}${Math.abs(off).toFixed(0)} s from now, beyond ${tolerance} s: ` +
        "a replay or a clock far off");
  }
  const prefix = new TextEncoder().encode(`${eventId}.${stamp}.`);
  const content = new Uint8Array(new ArrayBuffer(prefix.length + raw.length));
  content.set(prefix);
  content.set(raw, prefix.length);
  const offered = signatures
    .split(/\s+/)
    .filter((entry) => entry.startsWith("v1,"))
    .map((entry) => fromBase64(entry.slice(3)))
    .filter((sig): sig is Uint8Array<ArrayBuffer> => sig !== null);
  const { subtle } = await webCrypto();
  for (const secret of secrets) {
    const key = await keyOf(secret, subtle);
    // WebCrypto's verify compares in constant time; any match verifies (a rotated secret).
    for (const signature of offered) {
      if (await subtle.verify("HMAC", key, signature, content)) return;
    }
  }
  throw new WebhookVerificationError("no signature matches the secret");
}

function secretsOf(secret: string | readonly string[]): readonly string[] {
  const secrets = typeof secret === "string" ? [secret] : secret;
  if (!Array.isArray(secrets) || secrets.length === 0 || !secrets.every((s) => typeof s === "string")) {
    throw new TypeError("secret: the endpoint's whsec_... secret, or a list of them while you rotate");
  }
  return secrets;
}

/**
 * The event, once its signature and timestamp are proven; else throws WebhookVerificationError.
 *
 * `rawBody` is the body as it arrived (string, Uint8Array/Buffer or ArrayBuffer), never a
 * parsed object (that throws WebhookRawBodyError). `headers` a `Headers` or a plain object
 * of the request's headers, in any case. `secret` is the endpoint's `whsec_...` (or several,
 * while you rotate yours).
 */
export async function verifyWebhook(rawBody: RawBody, headers: HeaderSource, secret: string | readonly string[],
                                    options: VerifyOptions = {}): Promise<WebhookEvent> {
  if (!isRaw(rawBody)) {
    const kind = rawBody === null ? "null" : Array.isArray(rawBody) ? "an array" : `a ${typeof rawBody}`;
    throw new WebhookRawBodyError(`rawBody is ${kind}: ${RAW_BODY_RULE}`);
  }
  const raw = bytesOf(rawBody);
  await signed(raw, headers, secretsOf(secret), options);
  let event: unknown;
  try {
    event = JSON.parse(new TextDecoder().decode(raw));
  } catch {
    throw new WebhookVerificationError("the signed body is not JSON");
  }
  if (event === null || typeof event !== "object" || Array.isArray(event)) {
    throw new WebhookVerificationError("the signed body is not a JSON object");
  }
  return event as WebhookEvent;
}

/**
 * For a framework that hands over the body already parsed: the service sends compact
 * JSON, so the body is written back that way (`JSON.stringify`) and verified. When that
 * is not the text that was signed (a framework that changed a number, the order or an
 * escape), the WebhookRawBodyError explains how to get the raw body, the only sure way.
 */
export async function verifyWebhookParsed(parsedBody: unknown, headers: HeaderSource,
                                          secret: string | readonly string[],
                                          options: VerifyOptions = {}): Promise<WebhookEvent> {
  const text = JSON.stringify(parsedBody);
  if (text === undefined) throw new WebhookRawBodyError(`the parsed body cannot be written as JSON; ${RAW_BODY_RULE}`);
  try {
    return await verifyWebhook(text, headers, secret, options);
  } catch (failure) {
    if (failure instanceof WebhookVerificationError && !(failure instanceof WebhookRawBodyError) &&
        failure.message.startsWith("no signature matches")) {
      throw new WebhookRawBodyError(
        `the parsed body, written back as JSON, does not match its signature; ${RAW_BODY_RULE}`);
    }
    throw failure;
  }
}
