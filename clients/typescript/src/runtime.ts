// What the library takes from its runtime: WebCrypto (global in browsers and Node 19+,
// `node:crypto`'s `webcrypto` on Node 18), base64 and timers. No dependency.

let found: Promise<Crypto> | undefined;

/** The runtime's WebCrypto: `globalThis.crypto`, or on Node 18 `node:crypto`'s `webcrypto`. */
export function webCrypto(): Promise<Crypto> {
  found ??= (async () => {
    const global = (globalThis as { crypto?: Crypto }).crypto;
    if (global?.subtle !== undefined && typeof global.getRandomValues === "function") return global;
    // Node 18 without the global: the module by a name no bundler tries to resolve.
    const name = "node:crypto";
    try {
      const mod = (await import(/* webpackIgnore: true */ /* @vite-ignore */ name)) as { webcrypto?: Crypto };
      if (mod.webcrypto !== undefined) return mod.webcrypto;
    } catch {
      // not Node: fall through
    }
    throw new Error("no WebCrypto in this runtime (globalThis.crypto): Node 18+ or a browser is needed");
  })();
  found.catch(() => {
    found = undefined;
  });
  return found;
}

/** A fresh idempotency key: `cak-` and 32 random hex digits (a UUID v4 without its dashes). */
export async function newIdempotencyKey(): Promise<string> {
  const crypto = await webCrypto();
  // randomUUID exists only in secure contexts of a browser; getRandomValues everywhere.
  if (typeof crypto.randomUUID === "function") {
    try {
      return "idem-" + crypto.randomUUID().replace(/-/g, "");
    } catch {
      // an insecure context: below
    }
  }
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  bytes[6] = (bytes[6]! & 0x0f) | 0x40;
  bytes[8] = (bytes[8]! & 0x3f) | 0x80;
  return "idem-" + Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** Strict base64 to bytes; null when the text is not base64. */
export function fromBase64(text: string): Uint8Array<ArrayBuffer> | null {
  if (!BASE64.test(text)) return null;
  const binary = atob(text);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

export function defaultSleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

export function defaultNow(): number {
  const performance = (globalThis as { performance?: { now(): number } }).performance;
  return performance !== undefined ? performance.now() : Date.now();
}
