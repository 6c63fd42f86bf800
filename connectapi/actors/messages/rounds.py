"""The protocol of the actors that only take a wake-up: the pushers and the actors of rounds.

Each is told `Wake` (never asked): "something may be waiting, have a look". Their work and
its outcome live in the record, where the routes and the operator read them; a reply would
have no one to read it. One queued wake is as good as many, so their mailboxes hold one.
"""

from __future__ import annotations

from ...engine import Wake

InventoryDrainMessage = Wake  # a property's availability may be dirty: push it
AriProjectorMessage = Wake  # a property's rates or restrictions may be dirty: push them
PushSweepMessage = Wake  # look for properties with dirty cells and wake their pushers
WebhookSenderMessage = Wake  # an event was recorded, or an endpoint resumed: deliver what is due
OutboxMessage = Wake  # an e-mail was queued: send what is due
BookingIntakeMessage = Wake  # the channel manager notified us: read its booking feed
JanitorMessage = Wake  # the idempotency janitor, the key listener and the record watchdog: unused but allowed
