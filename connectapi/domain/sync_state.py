"""The push state of a property as GET /sync reports it (and the owners' console shows it)."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

FAILING_AFTER = 3  # failed calls in a row before a backing-off pipe is reported FAILING


def pending_next_attempt(next_attempt_at: datetime | None, now: datetime) -> datetime | None:
    """The next attempt, while it is still ahead."""
    return next_attempt_at if next_attempt_at is not None and next_attempt_at > now else None


PushState = Literal["IN_SYNC", "PENDING", "REFUSED", "BACKING_OFF", "FAILING"]


def push_state(failures: int, next_attempt_at: datetime | None, last_outcome: str | None, dirty_availability: int,
               now: datetime, refused: int = 0) -> PushState:
    """FAILING, BACKING_OFF, REFUSED (cells the channel manager refused in its 200, of any
    resource, wait to be offered again: the channels do not show them), PENDING, IN_SYNC."""
    if failures >= FAILING_AFTER:
        return "FAILING"
    if pending_next_attempt(next_attempt_at, now) is not None and last_outcome == "failed":
        return "BACKING_OFF"
    if refused:
        return "REFUSED"
    if dirty_availability:
        return "PENDING"
    return "IN_SYNC"
