"""After a commit, whoever acts on it is woken here: the one place that knows who that is.

Whatever commits work for others tells this what it committed, right after the commit:
- cells marked dirty: the property's pushers (its inventory drain, its ARI projector);
- e-mails queued: the outbox sender;
- webhook events queued: the webhook sender;
- OTA revisions to apply: the booking intake;
- a property's cells marked pushed (by the pushers), or an OTA revision of it settled (by
  its writer): requests waiting on them (`GET /batches/{id}?wait=N`, the test helper's OTA
  booking) look at the record again.

The writers (PropertyWriter, the push leases, the reconciler) tell it, and so do the few
routes that commit such work outside them (an endpoint's ping, resumption, redelivery or
recovery; an owner's set-up link; a revision to apply again; the channel manager's
notice; a test twin just made: docs/architecture.md, "The path of a write", lists them);
no route and no closure picks whom to wake. A wake-up is only a hint: every listener also
sweeps the record on a timer, so one that is lost (a full mailbox, a listener not started
yet or already stopped) delays work and loses none.

The assembly attaches each listener as it starts it: the services (outbox, sender,
intake) start after the property actors that commit work for them, and stop first.
"""

from __future__ import annotations

import trio

from ..engine import Mailbox, Wake
from .push_scheduler import PushScheduler


class Wakeups:
    def __init__(self) -> None:
        self._pushes: PushScheduler | None = None
        self._outbox: Mailbox[Wake] | None = None
        self._webhooks: Mailbox[Wake] | None = None
        self._intake: Mailbox[Wake] | None = None
        # (what, property) -> set when it next happens in this process: what is "push" (cells
        # marked pushed) or "revision" (an OTA revision settled).
        self._next: dict[tuple[str, int], trio.Event] = {}

    def attach(self, *, pushes: PushScheduler | None = None, outbox: Mailbox[Wake] | None = None,
               webhooks: Mailbox[Wake] | None = None, intake: Mailbox[Wake] | None = None) -> None:
        """Listeners as the assembly starts them."""
        if pushes is not None:
            self._pushes = pushes
        if outbox is not None:
            self._outbox = outbox
        if webhooks is not None:
            self._webhooks = webhooks
        if intake is not None:
            self._intake = intake

    async def cells_dirty(self, property_id: int, availability: bool, rates_or_restrictions: bool) -> None:
        if self._pushes is not None:
            await self._pushes.wake(property_id, availability, rates_or_restrictions)

    def mails_queued(self) -> None:
        if self._outbox is not None:
            self._outbox.try_tell(Wake())

    def events_queued(self) -> None:
        if self._webhooks is not None:
            self._webhooks.try_tell(Wake())

    def revisions_waiting(self) -> None:
        """OTA revisions wait to be read or applied (the channel manager's notice, an owner's
        "apply again")."""
        if self._intake is not None:
            self._intake.try_tell(Wake())

    def cells_pushed(self, property_id: int) -> None:
        """A pusher of this process marked some of the property's cells pushed."""
        self._happened("push", property_id)

    def revision_settled(self, property_id: int) -> None:
        """The property's writer in this process settled an OTA revision (applied or refused)."""
        self._happened("revision", property_id)

    def next_time(self, what: str, property_id: int) -> trio.Event:
        """Set when `what` ("push", "revision") next happens to the property in this process.
        Only a hint: what another process does is seen by looking at the record again."""
        return self._next.setdefault((what, property_id), trio.Event())

    def awaited(self, what: str, property_id: int) -> bool:
        """Whether something here waits for `what` of the property to happen next."""
        return (what, property_id) in self._next

    def _happened(self, what: str, property_id: int) -> None:
        waiting = self._next.pop((what, property_id), None)
        if waiting is not None:
            waiting.set()
