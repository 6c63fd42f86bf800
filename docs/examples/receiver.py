"""A webhook receiver for connectapi: verify, remember the id, answer at once.

Run: CONNECTAPI_WEBHOOK_SECRET=whsec_… python receiver.py  (standard library + standardwebhooks)
"""

import os
import queue
from http.server import BaseHTTPRequestHandler, HTTPServer

from standardwebhooks.webhooks import Webhook, WebhookVerificationError

verifier = Webhook(os.environ.get("CONNECTAPI_WEBHOOK_SECRET", ""))
seen: set[str] = set()  # keep these in your database: delivery is at least once
work: "queue.Queue[dict]" = queue.Queue()  # handle events after answering, not before


class Receiver(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", "0"))).decode()
        try:
            event = verifier.verify(body, dict(self.headers))  # signature and timestamp (±5 min)
        except WebhookVerificationError:
            self.send_response(400)
            self.end_headers()
            return
        if event["id"] not in seen:  # a redelivery carries the same id: do the work once
            seen.add(event["id"])
            work.put(event)
        self.send_response(204)  # answer within 10 s, or the delivery counts as failed
        self.end_headers()


if __name__ == "__main__":
    HTTPServer(("0.0.0.0", 8000), Receiver).serve_forever()
