// A redirect is never followed: against real servers on loopback, a 307 to another origin
// is an error carrying the write's key, and the other origin receives nothing (fetch's
// default would have sent the body on, and on some runtimes the Authorization header).

import assert from "node:assert/strict";
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { test } from "node:test";

import { ApiError, Client } from "@connectapi/client";

interface Heard {
  method: string;
  url: string;
  authorization: string | undefined;
  body: string;
}

/** A server answering every request with `answer`, keeping what it heard. */
async function serve(answer: (request: IncomingMessage) => { status: number; headers: Record<string, string>;
  body: string }): Promise<{ server: Server; url: string; heard: Heard[] }> {
  const heard: Heard[] = [];
  const server = createServer((request, response) => {
    let body = "";
    request.on("data", (chunk: Buffer) => { body += chunk.toString(); });
    request.on("end", () => {
      heard.push({ method: request.method ?? "", url: request.url ?? "", authorization: request.headers.authorization,
        body });
      const { status, headers, body: text } = answer(request);
      response.writeHead(status, headers).end(text);
    });
  });
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, heard };
}

const envelope = (status: number, data: unknown) => JSON.stringify({ statuscode: status, message: "ok", data });

test("a 307 to another origin is UNEXPECTED_ANSWER with the write's key, and nothing reaches the other origin",
  async () => {
    const elsewhere = await serve(() => ({ status: 202, headers: { "content-type": "application/json" },
      body: envelope(202, { batchId: "not-ours", resource: "rates" }) }));
    const service = await serve((request) => ({ status: 307,
      headers: { location: `${elsewhere.url}${request.url ?? "/"}`, "content-type": "application/json" },
      body: envelope(307, { batchId: "a-redirect-is-no-answer" }) }));
    try {
      const client = new Client({ baseUrl: service.url, apiKey: "cak_test_REDIRECTSECRET", maxRetries: 0 });
      await assert.rejects(
        client.rates.set([{ ratePlanId: 1, dateFrom: "2030-01-01", dateTo: "2030-01-01", rate: "1.00",
          currency: "EUR" }]),
        (error: unknown) => {
          assert.ok(error instanceof ApiError, String(error));
          assert.equal(error.status, 307);
          assert.equal(error.code, "UNEXPECTED_ANSWER");
          assert.match(error.message, /not followed/);
          assert.equal(error.idempotencyKey, client.lastResponse?.idempotencyKey);
          assert.match(error.idempotencyKey ?? "", /^[A-Za-z0-9_-]{10,64}$/);
          return true;
        });
      assert.equal(service.heard.length, 1);
      assert.deepEqual(elsewhere.heard, []);
      // A read too.
      await assert.rejects(client.property(), (error: unknown) =>
        error instanceof ApiError && error.status === 307 && error.code === "UNEXPECTED_ANSWER");
      assert.deepEqual(elsewhere.heard, []);
    } finally {
      service.server.close();
      elsewhere.server.close();
    }
  });
