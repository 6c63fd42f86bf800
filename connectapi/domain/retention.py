"""How long the record keeps what only tells the past: write batches, webhook deliveries
and events, sent e-mails, allowlist refusals and settled OTA revisions. No I/O: the
settings, and the instant before which each may go.

What is still needed is never pruned, whatever its age (the storage side says how): a
batch with cells not yet pushed, a pending delivery and its event, an unsent e-mail, an
OTA revision not yet applied or kept for the owner to apply again (unmapped, refused).
The booking ledger (bookings, their rooms, folios, inventory and domain events, guests,
the activity log) has no retention: it is kept.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from datetime import datetime, timedelta

DEFAULT_DAYS = 30
DEFAULT_OTA_REVISIONS_DAYS = 90
# A century: more is "for ever" in practice, and the horizon stays a date (Python's start at year 1).
MAX_DAYS = 36_500


@dataclass(frozen=True, slots=True)
class Retention:
    """Whole days each kind of row is kept after it is done with (CONNECTAPI_RETAIN_<KIND>_DAYS)."""

    batches: int = DEFAULT_DAYS  # from the batch's creation, once its cells are pushed
    deliveries: int = DEFAULT_DAYS  # from the delivery's success; its event goes with its last delivery
    emails: int = DEFAULT_DAYS  # from the e-mail's sending
    refusals: int = DEFAULT_DAYS  # from the refusal
    ota_revisions: int = DEFAULT_OTA_REVISIONS_DAYS  # from its settling (applied or stale) and acknowledgement

    def __post_init__(self) -> None:
        for kind in fields(self):
            days = getattr(self, kind.name)
            if not isinstance(days, int) or isinstance(days, bool) or not 1 <= days <= MAX_DAYS:
                raise ValueError(f"retention of {kind.name} must be a whole number of days from 1 to {MAX_DAYS}, "
                                 f"not {days!r}")

    def horizons(self, now: datetime) -> Horizons:
        """For each kind, the instant at or before which a done row may be pruned."""
        if now.tzinfo is None:
            raise ValueError("retention horizons need an aware instant")
        return Horizons(**{kind.name: horizon(now, getattr(self, kind.name)) for kind in fields(self)})


@dataclass(frozen=True, slots=True)
class Horizons:
    batches: datetime
    deliveries: datetime
    emails: datetime
    refusals: datetime
    ota_revisions: datetime


KINDS: tuple[str, ...] = tuple(kind.name for kind in fields(Retention))


def horizon(now: datetime, days: int) -> datetime:
    """A row done `days` days ago or earlier may go."""
    return now - timedelta(days=days)


def events_kept_since(retention: Retention, now: datetime) -> datetime:
    """How far back webhook events are certainly still in the record: every event since
    this instant is kept (an older one may be, while a delivery of it is pending or was
    made within the retention, but nothing promises it). "Recover since" reaches back to
    here and no further."""
    return horizon(now, retention.deliveries)


def env_name(kind: str) -> str:
    """The environment variable that sets a kind's retention."""
    if kind not in KINDS:
        raise ValueError(f"no retention of {kind!r}")
    return f"CONNECTAPI_RETAIN_{kind.upper()}_DAYS"
