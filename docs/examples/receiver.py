"""A webhook receiver for connectapi: verify, remember the id, answer at once.

Run: CONNECTAPI_WEBHOOK_SECRET=whsec_… python receiver.py
(standard library and the client library, `pip install clients/python`; the
`standardwebhooks` package verifies alike)
"""

import os
import queue
from http.server import BaseHTTPRequestHandler, HTTPServer

from connectapi_client import WebhookVerificationError, verify_webhook

SECRET = os.environ.get("CONNECTAPI_WEBHOOK_SECRET", "")
seen: set[str] = set()  # keep these in your database: delivery is at least once
work: "queue.Queue[dict]" = queue.Queue()  # handle events after answering, not before


class Receiver(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        try:
            event = verify_webhook(raw, dict(self.headers), SECRET)  # signature and timestamp (±5 min)
        except WebhookVerificationError:
            self.send_response(400)
            self.end_headers()
            return
        if event.id not in seen:  # a redelivery carries the same id: do the work once
            seen.add(event.id)
            work.put(event.model_dump(mode="json", by_alias=True))
        self.send_response(204)  # answer within 10 s, or the delivery counts as failed
        self.end_headers()


if __name__ == "__main__":
    HTTPServer(("127.0.0.1", int(os.environ.get("PORT", "8000"))), Receiver).serve_forever()
