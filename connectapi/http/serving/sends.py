"""The one bounded-send policy: every send of an answer is shielded (a cancellation of the
request must not cut an answer in half, nor skip what hypercorn does after it) and given
up after a bound; once the service stops, each send, begun or not, has
STOPPING_SEND_LIMIT left, so a client that does not read cannot hold the stop up.

Two layers send, both through `SendBounds.bounded`, and one `stop` tightens both:
- the ASGI send (server.py's ShieldedSends), bounded by SEND_LIMIT;
- the write to the socket inside it (connections.py's guard), bounded by the configured
  `send_limit` (SEND_LIMIT unless a test sets less).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import trio

# Each send of an answer to a client that does not read is given up after this.
SEND_LIMIT = 30.0
# Once the service stops, what each send has left.
STOPPING_SEND_LIMIT = 1.0


class SendBounds:
    """The sends of one server: bounded while they run, and tightened when it stops."""

    def __init__(self) -> None:
        self.stopping = False
        self._sending: set[trio.CancelScope] = set()

    @contextmanager
    def bounded(self, limit: float) -> Iterator[trio.CancelScope]:
        """A shielded scope for one send, cancelled after `limit` seconds (STOPPING_SEND_LIMIT
        once stopping). Whoever sends sees `cancelled_caught` when the bound cut it."""
        if self.stopping:
            limit = STOPPING_SEND_LIMIT
        with trio.CancelScope(shield=True, deadline=trio.current_time() + limit) as sending:
            self._sending.add(sending)
            try:
                yield sending
            finally:
                self._sending.discard(sending)

    def stop(self) -> None:
        """From now on each send, those under way included, has STOPPING_SEND_LIMIT left."""
        self.stopping = True
        for sending in self._sending:
            sending.deadline = min(sending.deadline, trio.current_time() + STOPPING_SEND_LIMIT)
