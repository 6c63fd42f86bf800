"""The ChannelManagerActor's protocol: every call to the channel manager is one of these.

A call that fails at the channel manager is an answer, not an exception: each reply says
whether it worked and, if not, what came back (`error`), in words fit for `lastError`.
A push or a read the budget does not allow yet is answered at once, with the time to ask
again: nobody waits inside the actor, so nothing holds it (or a shutdown) up.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date
from typing import Any, Literal

from ...channel.client import AvailabilityGrid, PushAnswer, RestrictionsGrid
from ...domain.channel_values import ChannelValues
from ...engine import Ask

# The channel manager's two kinds of ARI call, named as Channex names its endpoints
# (`/availability`; `/restrictions`, which carries a rate plan's rates and its restrictions
# together). The name is kept where it is stored or shown: the record (channel_refusals,
# batch_channel_tasks), the pacing budgets (`cm-<kind>:<property>`), the `kind` label of
# connectapi_channel_manager_calls, and `channelTasks[].kind` of GET /batches/{id}
# (docs/decisions/0133-a-pusher-named-for-what-it-pushes.md).
CallKind = Literal["availability", "restrictions"]
Mode = Literal["live", "test"]
Failure = Literal["throttled", "unavailable", "rejected"]


@dataclass(frozen=True, slots=True)
class PushOutcome:
    """`ok` (the call was answered 200: `answer` says which values it applied, as task ids,
    and which it refused); or a failure (`error` says what came back) with the property
    paused until `retry_at`; or `deferred`: not sent, the property's budget at the channel
    manager is spent until `retry_at`, or the sender's lease is too short for a call
    (pacing, not a failure: the asker waits and asks again)."""

    ok: bool
    answer: PushAnswer | None = None
    error: str | None = None
    retry_at: float | None = None  # monotonic time before which the property is paused
    deferred: bool = False
    failures: int = 0  # failed calls in a row for the property, this one included


@dataclass(frozen=True, slots=True)
class Push(Ask[PushOutcome]):
    """Send one call of the property's, when its lane, its pause and its budget allow.

    `deadline` (monotonic): when the sender's push lease on the property runs out; the
    call is not started without enough time before it, and is cut short at it (None: the
    sender holds no lease, e.g. the sandbox's seeding of a new property)."""

    property_id: int
    kind: CallKind
    values: ChannelValues  # AvailabilityValue for `availability`, RestrictionValue for `restrictions`
    deadline: float | None = None
    # Failed calls in a row before this one, as the record counts them (cm_failures): a
    # failure's pause doubles on from them.
    failures: int = 0
    # The property's mode, said by every sender: the channel manager of the other mode
    # refuses the call (a test twin's values never reach a real channel).
    mode: Mode = field(kw_only=True)


@dataclass(frozen=True, slots=True)
class GridRead:
    """What the channel manager holds of a property; or why it could not be read; or, with
    `retry_at`, that the account's read budget is spent until then (ask again)."""

    grid: AvailabilityGrid | RestrictionsGrid | None  # as the ReadGrid's `kind`
    error: str | None = None
    retry_at: float | None = None

    @property
    def deferred(self) -> bool:
        return self.retry_at is not None


@dataclass(frozen=True, slots=True)
class ReadGrid(Ask[GridRead]):
    """A read within the account-wide read budget (the reconciler's, the admin grid's).
    `interactive`: a person waits for it (the operator's channel grid): it may use the reads
    kept back from the background's (ChannelManagerActor.KEPT_FOR_PEOPLE)."""

    kind: CallKind
    cm_property_id: str
    first: date
    last: date
    interactive: bool = False


@dataclass(frozen=True, slots=True)
class Created:
    """The channel manager's id of what was made, or why it was not."""

    cm_id: str | None
    error: str | None = None


@dataclass(frozen=True, slots=True)
class CreateProperty(Ask[Created]):
    title: str
    currency: str
    timezone: str = "UTC"  # Channex judges past dates in the property's time zone


@dataclass(frozen=True, slots=True)
class CreateRoomType(Ask[Created]):
    cm_property_id: str
    title: str
    rooms: int


@dataclass(frozen=True, slots=True)
class CreateRatePlan(Ask[Created]):
    cm_property_id: str
    cm_room_type_id: str
    title: str
    # A per-person plan's adult counts (Channex's options); None: sold per room.
    occupancies: tuple[int, ...] | None = None


@dataclass(frozen=True, slots=True)
class FeedRead:
    """Booking revisions not yet acknowledged; `complete` is False when pages were left
    unread; `error` when the feed could not be read at all (revisions then empty)."""

    revisions: list[dict[str, Any]] = field(default_factory=list)
    complete: bool = True
    error: str | None = None


@dataclass(frozen=True, slots=True)
class ReadFeed(Ask[FeedRead]):
    max_pages: int


@dataclass(frozen=True, slots=True)
class Acked:
    """`done`: the revision needs no more acknowledging (acknowledged, or unknown to the
    channel manager: `refused` then says why); otherwise `error` says why it failed."""

    done: bool
    refused: str | None = None
    error: str | None = None


@dataclass(frozen=True, slots=True)
class AckRevision(Ask[Acked]):
    revision_id: str


ChannelMessage = Push | ReadGrid | CreateProperty | CreateRoomType | CreateRatePlan | ReadFeed | AckRevision
