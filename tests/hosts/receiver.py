"""A webhook receiver for the hosts' tests, run on a host of its own: answers 204 and keeps
each delivery (its endpoint path, webhook-id, event type, the booking's reservation code,
when) as a JSON line."""

from __future__ import annotations

import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOCK = threading.Lock()


class Receiving(BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802 (the http.server API)
        event = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
        booking = (event.get("data") or {}).get("booking")
        code = booking["channel"]["reservationCode"] if booking else None
        kept = {"path": self.path, "id": self.headers.get("webhook-id"), "type": event.get("type"), "code": code,
                "at": time.time()}
        with LOCK, open(sys.argv[3], "a") as out:
            out.write(json.dumps(kept) + "\n")
        self.send_response(204)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        pass


class Receiver(ThreadingHTTPServer):
    # Every delivery is a new connection, and three hosts send at once: with the default
    # backlog of five a loaded machine may refuse some, and a refused first attempt and its
    # retry put an endpoint's queue five minutes back (the service's schedule, as it should):
    # the test's receiver is not what is tested.
    request_queue_size = 128


if __name__ == "__main__":
    Receiver((sys.argv[1], int(sys.argv[2])), Receiving).serve_forever()
